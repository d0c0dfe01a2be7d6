// The harness's MLflow leaves nothing behind: with job execution on, `mlflow server` makes its job
// queue in /dev/shm and never removes it, so without this each test run kept a few megabytes of memory.
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GENAI_MLFLOW_ENV } from '../helpers/genai.js';
import { startMlflowServer } from '../helpers/mlflow-server.js';

describe('the test harness around the real MLflow', () => {
  it('removes the job queue directory MLflow made when it stops the server', async () => {
    const mlflow = await startMlflowServer({ env: { ...GENAI_MLFLOW_ENV } });
    let queues: string[] = [];
    try {
      queues = await mlflow.jobQueueDirs();
      expect(queues).toHaveLength(1);
      expect(existsSync(queues[0]!)).toBe(true);
    } finally {
      await mlflow.stop();
    }
    expect(queues.filter((dir) => existsSync(dir))).toEqual([]);
  }, 180_000);
});
