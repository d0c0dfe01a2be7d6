import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { endpointsOnProvider, GENAI_MLFLOW_ENV, logTraces, startFakeProvider } from '../helpers/genai.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { serializedJudge } from '../helpers/scorers.js';

/*
 * Request headers MLflow's gateway trusts, sent by a caller holding only USE, against the real MLflow:
 *  1. X-MLflow-Guardrail-Bypass: 1 marks MLflow's own sanitization calls, which skip every guardrail an
 *     administrator put on an endpoint; flowgate never forwards it (guardrails are admin-only).
 *  2. A traceparent naming another user's trace must not put a span of the caller's call into it.
 *  3. HEAD on a filtered gateway list answers as MLflow would, with no after-hook failure.
 */
const GW = '/api/3.0/mlflow/gateway';
const MARK = 'GUARDRAIL-CHECK-MARK';

describe('gateway headers MLflow trusts', () => {
  let mlflow: MlflowServer;
  let provider: Awaited<ReturnType<typeof startFakeProvider>>;
  let fg: TestFlowgate;
  const { call, basicOf, withTokens, tokens } = jsonCaller(() => fg.url);
  const as = (who: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(fg.url + path, { method: 'POST', headers: { Authorization: basicOf(who), 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) });
  let victimTrace = '';

  beforeAll(async () => {
    // The judge (its instructions carry MARK) always says no; any other call is an ordinary chat answer.
    provider = await startFakeProvider((body) => (body.includes(MARK) ? '{"result": false, "rationale": "blocked by the guardrail"}' : 'pong'));
    mlflow = await startMlflowServer({
      env: { ...GENAI_MLFLOW_ENV, OPENAI_API_KEY: 'sk-fake-for-tests', OPENAI_API_BASE: `${provider.url}/v1`, OPENAI_BASE_URL: `${provider.url}/v1` },
      startTimeoutMs: 120_000,
    });
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
    await withTokens(['alice', 'mallory']);
    await endpointsOnProvider(call, provider.url, 'gw', ['guarded', 'open']);
    const endpoint = (await call('GET', `${GW}/endpoints/get?name=guarded`)).endpoint as { endpoint_id: string };
    // The administrator's guardrail: a judge that runs before every call of `guarded`.
    const exp = (await call('POST', '/api/2.0/mlflow/experiments/create', { name: 'guardrails' })).experiment_id as string;
    const judge = serializedJudge('no-way', `${MARK} Is {{ inputs }} acceptable?`, 'openai:/gpt-4o-mini');
    const scorer = await call('POST', '/api/3.0/mlflow/scorers/register', { experiment_id: exp, name: 'no-way', serialized_scorer: judge });
    const guardrail = (await call('POST', `${GW}/guardrails/create`, { name: 'block-all', scorer_id: scorer.scorer_id, scorer_version: scorer.version, stage: 'BEFORE', action: 'VALIDATION' })).guardrail as { guardrail_id: string };
    await call('POST', `${GW}/guardrails/add-to-endpoint`, { endpoint_id: endpoint.endpoint_id, guardrail_id: guardrail.guardrail_id });
    await call('POST', '/api/2.0/mlflow/permissions/users/mallory/gateways/endpoints/guarded', { permission: 'USE' });
    await call('POST', '/api/2.0/mlflow/permissions/users/mallory/gateways/endpoints/open', { permission: 'USE' });
    // alice's own experiment and trace; mallory has nothing on it.
    const aliceExp = (await call('POST', '/api/2.0/mlflow/experiments/create', { name: 'alice-private' })).experiment_id as string;
    await call('POST', `/api/2.0/mlflow/permissions/users/alice/experiments/${aliceExp}`, { permission: 'MANAGE' });
    victimTrace = (await logTraces(mlflow.venv, fg.url, 'alice', tokens.alice!, aliceExp, ['only']))[0]!;
  }, 300_000);

  afterAll(async () => {
    await fg?.close();
    await mlflow?.stop();
    await provider?.close();
  });

  const chat = { messages: [{ role: 'user', content: 'hello' }] };

  it('the guardrail holds for mallory (control)', async () => {
    const r = await as('mallory', '/gateway/guarded/mlflow/invocations', chat);
    const text = await r.text();
    expect(r.status, text).not.toBe(200);
  }, 60_000);

  it('X-MLflow-Guardrail-Bypass: 1 from a USE holder does not lift the administrator\'s guardrail', async () => {
    const r = await as('mallory', '/gateway/guarded/mlflow/invocations', chat, { 'X-MLflow-Guardrail-Bypass': '1' });
    const text = await r.text();
    expect(r.status, text).not.toBe(200);
  }, 60_000);

  it('HEAD on a filtered gateway list answers as MLflow would (200), not 502 with an after-hook failure', async () => {
    const before = fg.logs.filter((l) => l.includes('after-response hook failed')).length;
    const direct = await fetch(`${mlflow.url}/api/3.0/mlflow/gateway/endpoints/list`, { method: 'HEAD' });
    const r = await fetch(`${fg.url}/api/3.0/mlflow/gateway/endpoints/list`, { method: 'HEAD', headers: { Authorization: basicOf('mallory') } });
    const after = fg.logs.filter((l) => l.includes('after-response hook failed')).length;
    expect({ mlflow: direct.status, flowgate: r.status, hookFailures: after - before }).toEqual({ mlflow: 200, flowgate: 200, hookFailures: 0 });
  }, 30_000);

  it('a traceparent naming alice\'s trace writes nothing into it', async () => {
    const spansOf = async () => {
      const r = await fetch(`${mlflow.url}/api/3.0/mlflow/traces/batchGet?trace_ids=${victimTrace}`);
      return JSON.stringify(await r.json());
    };
    const before = await spansOf();
    const hex = victimTrace.replace(/^tr-/, '');
    const r = await as('mallory', '/gateway/open/mlflow/invocations', chat, { traceparent: `00-${hex}-00f067aa0ba902b7-01` });
    expect(r.status, await r.text()).toBe(200);
    await new Promise((res) => setTimeout(res, 5000));
    const after = await spansOf();
    expect(after).not.toContain('gateway/open');
    expect(after).toBe(before);
  }, 90_000);
});
