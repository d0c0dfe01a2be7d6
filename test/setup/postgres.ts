import { startPostgres } from '../helpers/postgres.js';

/**
 * With FLOWGATE_TEST_STORE=postgres: one throwaway PostgreSQL server for the whole run, its URL
 * handed to the test workers (started after this) through their environment.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env.FLOWGATE_TEST_STORE !== 'postgres') return undefined;
  const server = await startPostgres();
  process.env.FLOWGATE_TEST_POSTGRES_URL = server.url();
  return () => server.stop();
}
