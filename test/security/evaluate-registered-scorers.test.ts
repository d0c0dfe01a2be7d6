import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { scorerAttacker, serializedJudge, storedScorersAnswer } from '../helpers/scorers.js';

/*
 * `genai/evaluate/invoke` from mallory's side. She may edit experiment 1 and read its scorer `open-judge`;
 * she holds nothing on `secret-judge`, and reads `gw-judge`, whose stored judge calls the gateway endpoint
 * `secret-endpoint`, on which she has no USE. MLflow is scripted (its scorer and endpoint look-ups answer
 * as the real one does: test/e2e/evaluate-registered-scorers.test.ts), so every shape is under the test's
 * control. A bypass is any of her evaluations reaching MLflow's evaluate route with a scorer she may not
 * read, or one whose stored judge spends an endpoint she may not use; a leak is a look-up of a scorer
 * she may not read (its existence is no oracle).
 */
const EVALUATE = '/ajax-api/3.0/mlflow/genai/evaluate/invoke';
const STORED: Record<string, string> = {
  'open-judge': serializedJudge('open-judge'),
  'secret-judge': serializedJudge('secret-judge', 'Is {{ outputs }} leaking?', 'gateway:/secret-endpoint'),
  'gw-judge': serializedJudge('gw-judge', 'Is {{ outputs }} polite?', 'gateway:/secret-endpoint'),
};
/** A database collation's match: MLflow finds `open-judge` when asked for `OPEN-JUDGE`. */
const COLLATED: Record<string, string> = { 'OPEN-JUDGE': 'open-judge' };
const storedScorers = storedScorersAnswer(STORED, COLLATED);

let fg: TestFlowgate;
let mlflow: Awaited<ReturnType<typeof startStubUpstream>>;
let token = '';
const api = () => request(fg.url);
const asMallory = () => basic('mallory', token);

const pathOf = (url: string) => new URL(url, 'http://x').pathname;
const evaluations = () => mlflow.seen.filter((r) => pathOf(r.url) === EVALUATE).length;
const scorerLookups = (name: string) => mlflow.seen.filter((r) => pathOf(r.url).endsWith('/scorers/get') && new URL(r.url, 'http://x').searchParams.get('name') === name).length;

/** Serialized-scorer text sent as it is (not wrapped as `{"name": …}`). */
const raw = (text: string) => ({ raw: text });
const isRaw = (value: unknown): value is { raw: string } => typeof value === 'object' && value !== null && 'raw' in value;

/** The body of an evaluation naming registered scorers by `{"name": …}` (or `raw` text, or any other value) beside each version. */
const naming = (scorers: ReadonlyArray<readonly [unknown, unknown]>, extra: Record<string, unknown> = {}) => ({
  experiment_id: '1',
  trace_ids: ['tr-1'],
  serialized_scorers: scorers.map(([name]) => (typeof name === 'string' ? JSON.stringify({ name }) : isRaw(name) ? name.raw : name)),
  scorer_versions: scorers.map(([, version]) => version),
  ...extra,
});
const evaluate = (body: unknown, raw = false) =>
  api()
    .post(EVALUATE)
    .set('Authorization', asMallory())
    .set('Content-Type', 'application/json')
    .send(raw ? (body as string) : JSON.stringify(body));

beforeAll(async () => {
  mlflow = await startStubUpstream((req) => {
    const url = new URL(req.url, 'http://x');
    const scorerAnswer = storedScorers(url);
    if (scorerAnswer) return scorerAnswer;
    if (url.pathname === EVALUATE) return { status: 200, body: { job_id: 'job-1', run_id: 'run-1' } };
    return { status: 200, body: {} };
  });
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
  token = await scorerAttacker(fg.url, ['open-judge', 'gw-judge', 'OPEN-JUDGE']);
});

afterAll(async () => {
  await fg?.close();
  await mlflow?.close();
});

describe("mallory's evaluations naming registered scorers", () => {
  it('the control: a scorer she may read, whose judge spends no gateway endpoint, reaches MLflow', async () => {
    const before = evaluations();
    const r = await evaluate(naming([['open-judge', 1]]));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(evaluations()).toBe(before + 1);
  });

  it('is refused for a scorer she may not read, however it is spelt or mixed, and MLflow is never asked about it', async () => {
    const smuggled: Array<[string, unknown]> = [
      ['the denied scorer alone', naming([['secret-judge', 1]])],
      ['a list mixing allowed and denied names', naming([['open-judge', 1], ['secret-judge', 1]])],
      ['the denied one after inline scorers', naming([[raw(serializedJudge('inline')), null], ['open-judge', 1], ['secret-judge', 1]])],
      // Python's json.loads and JSON.parse both keep the last of repeated keys: the denied one is what both read.
      ['a repeated name key', { ...naming([['open-judge', 1]]), serialized_scorers: ['{"name": "open-judge", "name": "secret-judge"}'] }],
      ['the name escaped', { ...naming([['open-judge', 1]]), serialized_scorers: ['{"name": "secret\\u002djudge"}'] }],
      ['a whole judge whose name is the denied one', { ...naming([['open-judge', 1]]), serialized_scorers: [serializedJudge('secret-judge')] }],
    ];
    const before = evaluations();
    for (const [what, body] of smuggled) {
      const r = await evaluate(body);
      expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBe(403);
      expect(r.body.error_code, what).toBe('PERMISSION_DENIED');
    }
    // A double-encoded body, which MLflow decodes again; a version written `1.0` (JSON.parse reads 1).
    const double = await evaluate(JSON.stringify(JSON.stringify(naming([['secret-judge', 1]]))), true);
    expect(double.status).toBe(403);
    const float = await evaluate(JSON.stringify(naming([['secret-judge', 1]])).replace('"scorer_versions":[1]', '"scorer_versions":[1.0]'), true);
    expect(float.status).toBe(403);
    expect(evaluations()).toBe(before);
    expect(scorerLookups('secret-judge')).toBe(0);
  });

  it('is refused when a stored judge she may read spends an endpoint she may not use, whatever the text beside the version says', async () => {
    const before = evaluations();
    for (const body of [
      naming([['gw-judge', 1]]),
      { ...naming([['gw-judge', 1]]), serialized_scorers: [serializedJudge('gw-judge', 'harmless', 'openai:/gpt-4o-mini')] },
      naming([['open-judge', 1], ['gw-judge', 1]]),
    ]) {
      const r = await evaluate(body);
      expect(r.status, JSON.stringify(r.body)).toBe(403);
      expect(JSON.stringify(r.body)).not.toContain('secret-endpoint');
    }
    expect(evaluations()).toBe(before);
  });

  it('refuses every shape MLflow could read otherwise, or flowgate could not read exactly, with MLflow’s 400 and nothing started', async () => {
    const shapes: Array<[string, unknown]> = [
      ['the versions under their camelCase name', { ...naming([['open-judge', null]]), scorerVersions: [1] }],
      ['the scorers under their camelCase name', { ...naming([['open-judge', 1]]), serializedScorers: [JSON.stringify({ name: 'secret-judge' })] }],
      ['versions that are not a list', { ...naming([['secret-judge', 1]]), scorer_versions: { 0: 1 } }],
      ['versions null', { ...naming([['secret-judge', 1]]), scorer_versions: null }],
      ['lists of different lengths', { ...naming([['secret-judge', 1]]), scorer_versions: [1, null] }],
      ['scorers that are not a list', { ...naming([['secret-judge', 1]]), serialized_scorers: JSON.stringify({ name: 'secret-judge' }) }],
      ['a version as text', naming([['secret-judge', '1']])],
      ['a version as a boolean', naming([['secret-judge', true]])],
      ['a version as a fraction', naming([['secret-judge', 1.5]])],
      ['a version in a list', naming([['secret-judge', [1]]])],
      ['the scorer as an object, not JSON text', naming([[{ name: 'secret-judge' }, 1]])],
      ['JSON text that is not an object', naming([[raw(JSON.stringify(['secret-judge'])), 1]])],
      ['JSON text that is not JSON', naming([[raw('{"name": "secret-judge"'), 1]])],
      ['Python-only JSON', naming([[raw('{"name": "secret-judge", "x": NaN}'), 1]])],
      ['a name that is a number', naming([[raw('{"name": 5}'), 1]])],
      ['a name that is a list', naming([[raw(JSON.stringify({ name: ['secret-judge'] })), 1]])],
      ['no name', naming([[raw('{"title": "secret-judge"}'), 1]])],
      ['a blank name', naming([[raw('{"name": "  "}'), 1]])],
      ['a name stored under another spelling', naming([['OPEN-JUDGE', 1]])],
      ['a huge list of registered scorers', naming(Array.from({ length: 101 }, (_, i) => [`open-judge-${i}`, 1] as const))],
    ];
    const before = evaluations();
    for (const [what, shape] of shapes) {
      const r = await evaluate(shape);
      expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.body.error_code, what).toBe('INVALID_PARAMETER_VALUE');
      expect(r.body.message, what).toBeTypeOf('string');
    }
    // An experiment in the query that differs from the body's.
    const elsewhere = await api().post(`${EVALUATE}?experiment_id=2`).set('Authorization', asMallory()).send(naming([['open-judge', 1]]));
    expect(elsewhere.status).toBe(400);
    // A version past 2^53, which JSON.parse rounds to another version than Python reads.
    const rounded = await evaluate(JSON.stringify(naming([['open-judge', 1]])).replace('"scorer_versions":[1]', '"scorer_versions":[9007199254740993]'), true);
    expect(rounded.status).toBe(400);
    expect(evaluations()).toBe(before);
    expect(scorerLookups('secret-judge')).toBe(0);
    expect(scorerLookups('open-judge-100')).toBe(0);
  });

  it('a version MLflow does not have is its 404 and nothing starts', async () => {
    const before = evaluations();
    const r = await evaluate(naming([['open-judge', 2]]));
    expect(r.status).toBe(404);
    expect(r.body.error_code).toBe('RESOURCE_DOES_NOT_EXIST');
    expect(evaluations()).toBe(before);
  });
});
