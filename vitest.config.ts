import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/setup/postgres.ts'],
    testTimeout: 60_000,
    hookTimeout: 300_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
  },
});
