import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { scorerAttacker, serializedJudge, storedScorersAnswer } from '../helpers/scorers.js';

/*
 * `scorer/invoke` naming a registered scorer, from mallory's side. MLflow's handler takes `scorer_name`
 * (a string) and `scorer_version` (an integer) together, loads that stored version and runs its judge in
 * place of the inline `serialized_scorer`. Mallory may edit experiment 1 and read its scorers `open-judge`
 * and `gw-judge`; she holds nothing on `secret-judge`; `gw-judge`'s stored judge calls `secret-endpoint`
 * (she may only list it: READ), `own-gw-judge`'s calls `her-endpoint` (USE). MLflow is scripted (its
 * look-ups answer as the real one does: test/e2e/scorer-invoke-stored-judge.test.ts). A bypass is any of
 * her scorer runs reaching MLflow whose stored judge spends an endpoint she may not use; a leak is a
 * look-up of a scorer she may not read.
 */
const INVOKE = '/ajax-api/3.0/mlflow/scorer/invoke';
const STORED: Record<string, string> = {
  'open-judge': serializedJudge('open-judge'),
  'secret-judge': serializedJudge('secret-judge', 'Is {{ outputs }} leaking?', 'gateway:/secret-endpoint'),
  'gw-judge': serializedJudge('gw-judge', 'Is {{ outputs }} polite?', 'gateway:/secret-endpoint'),
  'own-gw-judge': serializedJudge('own-gw-judge', 'Is {{ outputs }} kind?', 'gateway:/her-endpoint'),
};
/** A database collation's match: MLflow finds `gw-judge` when asked for `GW-JUDGE`. */
const COLLATED: Record<string, string> = { 'GW-JUDGE': 'gw-judge' };
const storedScorers = storedScorersAnswer(STORED, COLLATED);
/** What she sends inline: a judge on a provider outside the gateway, which MLflow ignores once a version is named. */
const HARMLESS = serializedJudge('harmless', 'Is {{ outputs }} fine?', 'openai:/gpt-4o-mini');

let fg: TestFlowgate;
let mlflow: Awaited<ReturnType<typeof startStubUpstream>>;
let token = '';
const api = () => request(fg.url);

const pathOf = (url: string) => new URL(url, 'http://x').pathname;
const invocations = () => mlflow.seen.filter((r) => pathOf(r.url) === INVOKE).length;
const scorerLookups = (name: string) =>
  mlflow.seen.filter((r) => pathOf(r.url).endsWith('/scorers/get') && new URL(r.url, 'http://x').searchParams.get('name') === name).length;

const naming = (name: unknown, version: unknown, extra: Record<string, unknown> = {}) => ({
  experiment_id: '1',
  trace_ids: ['tr-1'],
  serialized_scorer: HARMLESS,
  scorer_name: name,
  scorer_version: version,
  ...extra,
});
const invoke = (body: unknown, raw = false) =>
  api()
    .post(INVOKE)
    .set('Authorization', basic('mallory', token))
    .set('Content-Type', 'application/json')
    .send(raw ? (body as string) : JSON.stringify(body));

beforeAll(async () => {
  mlflow = await startStubUpstream((req) => {
    const url = new URL(req.url, 'http://x');
    const scorerAnswer = storedScorers(url);
    if (scorerAnswer) return scorerAnswer;
    if (url.pathname === INVOKE) return { status: 200, body: { jobs: [{ job_id: `job-${mlflow.seen.length}`, trace_ids: ['tr-1'] }] } };
    return { status: 200, body: {} };
  });
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
  token = await scorerAttacker(fg.url, ['open-judge', 'gw-judge', 'own-gw-judge', 'GW-JUDGE'], { 'gateways/endpoints/her-endpoint': 'USE' });
});

afterAll(async () => {
  await fg?.close();
  await mlflow?.close();
});

describe("mallory's scorer runs naming a registered scorer", () => {
  it('the controls: a stored judge on no gateway endpoint, or on one she may use, reaches MLflow', async () => {
    const before = invocations();
    for (const name of ['open-judge', 'own-gw-judge']) {
      const r = await invoke(naming(name, 1));
      expect(r.status, `${name}: ${JSON.stringify(r.body)}`).toBe(200);
    }
    expect(invocations()).toBe(before + 2);
    // Each decision asked MLflow for the stored version it runs.
    expect(scorerLookups('own-gw-judge')).toBeGreaterThan(0);
  });

  it('is refused when the stored judge of a scorer she may read spends an endpoint she may not use, whatever the inline text says', async () => {
    const before = invocations();
    const attempts: Array<[string, unknown, boolean?]> = [
      ['the inline judge on another provider', naming('gw-judge', 1)],
      ['the inline judge on an endpoint she may use', naming('gw-judge', 1, { serialized_scorer: STORED['own-gw-judge'] })],
      ['the inline text naming only the scorer', naming('gw-judge', 1, { serialized_scorer: JSON.stringify({ name: 'gw-judge' }) })],
      // Python reads `1.0` as a float (MLflow's own 400); JSON.parse reads 1, so flowgate decides on version 1.
      ['a version written 1.0', JSON.stringify(naming('gw-judge', 1)).replace('"scorer_version":1', '"scorer_version":1.0'), true],
      // MLflow takes the last of repeated keys, as JSON.parse does.
      ['a repeated version key', JSON.stringify(naming('gw-judge', 7)).replace('"scorer_version":7', '"scorer_version":7,"scorer_version":1'), true],
      ['a repeated name key', JSON.stringify(naming('open-judge', 1)).replace('"scorer_name":"open-judge"', '"scorer_name":"open-judge","scorer_name":"gw-judge"'), true],
    ];
    for (const [what, body, raw] of attempts) {
      const r = await invoke(body, raw);
      expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBe(403);
      expect(r.body.error_code, what).toBe('PERMISSION_DENIED');
      // The refusal does not tell her which endpoint a scorer's stored judge calls.
      expect(JSON.stringify(r.body), what).not.toContain('secret-endpoint');
    }
    expect(invocations()).toBe(before);
  });

  it('is refused for a scorer she may not read, and MLflow is never asked about it', async () => {
    const before = invocations();
    for (const version of [1, '1', 1.5, true, null]) {
      const r = await invoke(naming('secret-judge', version));
      expect(r.status, `version ${JSON.stringify(version)}: ${JSON.stringify(r.body)}`).toBe(403);
    }
    expect(invocations()).toBe(before);
    expect(scorerLookups('secret-judge')).toBe(0);
  });

  it('refuses every shape MLflow could read otherwise, or flowgate could not read exactly, with MLflow’s 400 and nothing started', async () => {
    const shapes: Array<[string, unknown]> = [
      ['a version as text', naming('gw-judge', '1')],
      ['a version as a fraction', naming('gw-judge', 1.5)],
      ['a version as a boolean', naming('gw-judge', true)],
      ['a version in a list', naming('gw-judge', [1])],
      ['a version as an object', naming('gw-judge', { version: 1 })],
      ['the name without a version', naming('gw-judge', undefined)],
      ['the name with a null version', naming('gw-judge', null)],
      ['a version without a name', naming(undefined, 1)],
      ['the version under its camelCase name', { ...naming('gw-judge', undefined), scorerVersion: 1 }],
      ['both spellings of the version', { ...naming('gw-judge', 1), scorerVersion: 1 }],
      ['the name under its camelCase name too', { ...naming('gw-judge', 1), scorerName: 'gw-judge' }],
      ['a name that is a number', naming(5, 1)],
      ['a blank name', naming('  ', 1)],
      ['a name MLflow stores under another spelling', naming('GW-JUDGE', 1)],
    ];
    const before = invocations();
    for (const [what, shape] of shapes) {
      const r = await invoke(shape);
      expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.body.error_code, what).toBe('INVALID_PARAMETER_VALUE');
      expect(r.body.message, what).toBeTypeOf('string');
    }
    // A version past 2^53, which JSON.parse rounds to another version than Python reads.
    for (const huge of ['9007199254740993', '1e400', '-9007199254740993']) {
      const rounded = await invoke(JSON.stringify(naming('gw-judge', 1)).replace('"scorer_version":1', `"scorer_version":${huge}`), true);
      expect(rounded.status, huge).toBe(400);
    }
    // An experiment in the query that differs from the body's.
    const elsewhere = await api().post(`${INVOKE}?experiment_id=2`).set('Authorization', basic('mallory', token)).send(naming('own-gw-judge', 1));
    expect(elsewhere.status).toBe(400);
    expect(invocations()).toBe(before);
  });

  it('a version MLflow does not have is its 404 and nothing starts', async () => {
    const before = invocations();
    for (const version of [2, 0, -1]) {
      const r = await invoke(naming('gw-judge', version));
      expect(r.status, `version ${version}: ${JSON.stringify(r.body)}`).toBe(404);
      expect(r.body.error_code).toBe('RESOURCE_DOES_NOT_EXIST');
    }
    expect(invocations()).toBe(before);
  });
});
