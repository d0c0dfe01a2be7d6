import { afterAll, describe, expect, it } from 'vitest';
import { removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { freePort } from '../helpers/mlflow-server.js';

/**
 * flowgate started before (or without) its MLflow: it starts all the same, and its log says where
 * it looked and why nothing answered, instead of only a version "unknown".
 */
describe('an MLflow that refuses connections at start', () => {
  let fg: TestFlowgate | undefined;
  afterAll(async () => {
    await fg?.close();
    if (fg) removeDir(fg.dir);
  });

  it('is a warning naming the upstream URL and the cause; flowgate starts and is not ready', async () => {
    // A port nobody listens on: the connection is refused at once.
    const port = await freePort();
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: `http://ops:pw-do-not-log@127.0.0.1:${port}` });
    const lines = fg.logs.map((l) => JSON.parse(l) as { level: string; msg: string; upstream?: string });
    const warning = lines.find((l) => l.msg.startsWith('MLflow is not reachable at'));
    expect(warning, fg.logs.join('')).toBeDefined();
    expect(warning!.level).toBe('warn');
    expect(warning!.msg).toMatch(new RegExp(`^MLflow is not reachable at http://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`));
    expect(warning!.upstream).toBe(`http://127.0.0.1:${port}`);
    expect(JSON.stringify(warning)).not.toContain('pw-do-not-log');

    expect((await fetch(`${fg.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${fg.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: 'unready', upstream: false, reason: 'mlflow-unreachable' });
  });
});
