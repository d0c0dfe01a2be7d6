import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serializedJudge } from '../helpers/scorers.js';
import { ok, type Caller } from './harness/http.js';
import { startStack, type Stack } from './harness/stack.js';
import { V2 } from './harness/world.js';

/*
 * Scorers (judges), keyed `<experiment_id>/<name>`, attacked in front of the real MLflow by mallory,
 * who edits her own experiment and manages her own scorers there: the victim's scorer reached by name
 * from her experiment, by the experiment id moved between the query and the body or spelled another
 * way (`0012`, ` 12`, `+12`), by names holding `/` and encoded separators in the grant paths, by
 * scorer ids in the online-config list, under `/api/` and its `/ajax-api/` twin. Every refusal
 * changes nothing: the victim's scorer, its versions and every grant stay as they were.
 */
const PREFIXES = ['/api/3.0/mlflow', '/ajax-api/3.0/mlflow'] as const;
const GRANT_PREFIXES = [V2, '/ajax-api/2.0/mlflow'] as const;

let stack: Stack;
let admin: Caller;
let mallory: Caller;
let V = '';
let M = '';
let victimScorerId = '';
const as = (user: string) => stack.through(user);

const judge = (experimentId: string, name: string, model?: string) => ({
  experiment_id: experimentId,
  name,
  serialized_scorer: serializedJudge(name, undefined, model),
});

/** The victim's scorers as MLflow has them (asked directly), and every grant flowgate keeps. */
const state = async () => ({
  versions: await Promise.all(
    ['judge', 'a/b', 'watcher'].map(async (name) => (await stack.direct()('GET', `${PREFIXES[0]}/scorers/versions`, { query: { experiment_id: V, name } })).json),
  ),
  grants: await stack.fg.store.sql.all('SELECT resource_kind, resource_id, user_id, group_id, permission FROM grants ORDER BY resource_kind, resource_id, user_id, group_id'),
});

/** Each attempt must be answered with one of `statuses` in MLflow's error shape, and leave everything as it was. */
async function refusedAll(who: Caller, attempts: ReadonlyArray<readonly [string, string, Parameters<Caller>[2]?]>, statuses: readonly number[] = [403]) {
  const before = await state();
  for (const [method, path, options] of attempts) {
    const r = await who(method, path, options ?? {});
    expect(statuses, `${method} ${path} ${JSON.stringify(options ?? {})} → ${r.status} ${r.text.slice(0, 200)}`).toContain(r.status);
    expect(r.json?.error_code, `${method} ${path}`).toBeTypeOf('string');
  }
  expect(await state()).toEqual(before);
}

/** A GET whose JSON body MLflow reads when its query is empty (fetch sends no GET body: written as it is, framed by its length). */
const getWithBody = (body: unknown) => ({ body, verbatim: true, headers: { 'content-length': String(Buffer.byteLength(JSON.stringify(body))) } });

/** The `<experiment_id>/<name>` of every scorer in a list answer. */
const namesIn = (json: { scorers?: Array<{ experiment_id: string | number; scorer_name: string }> } | undefined) =>
  (json?.scorers ?? []).map((s) => `${s.experiment_id}/${s.scorer_name}`);

beforeAll(async () => {
  stack = await startStack(['vic', 'mallory']);
  admin = as('admin');
  mallory = as('mallory');
  V = ok(await admin('POST', `${V2}/experiments/create`, { body: { name: 'victim-judged' } }), 'victim experiment').experiment_id;
  M = ok(await admin('POST', `${V2}/experiments/create`, { body: { name: 'mallory-judged' } }), 'mallory experiment').experiment_id;
  ok(await admin('POST', `${V2}/permissions/users/vic/experiments/${V}`, { body: { permission: 'EDIT' } }), 'vic edits V');
  ok(await admin('POST', `${V2}/permissions/users/mallory/experiments/${M}`, { body: { permission: 'EDIT' } }), 'mallory edits M');
  // mallory also reads V (she may list it, MLflow's rule), and holds nothing on its scorers.
  ok(await admin('POST', `${V2}/permissions/users/mallory/experiments/${V}`, { body: { permission: 'READ' } }), 'mallory reads V');
  const secret = ok(await admin('POST', `${PREFIXES[0]}/gateway/secrets/create`, { body: { secret_name: 'k', secret_value: { api_key: 'sk-unused' }, provider: 'openai' } }), 'secret');
  const definition = ok(
    await admin('POST', `${PREFIXES[0]}/gateway/model-definitions/create`, { body: { name: 'd', secret_id: secret.secret.secret_id, provider: 'openai', model_name: 'gpt-4o-mini' } }),
    'definition',
  );
  ok(
    await admin('POST', `${PREFIXES[0]}/gateway/endpoints/create`, {
      body: { name: 'judge-llm', model_configs: [{ model_definition_id: definition.model_definition.model_definition_id, linkage_type: 'PRIMARY', weight: 1 }] },
    }),
    'endpoint',
  );
  // A judge on an endpoint spends it (online scoring calls it from MLflow's process): vic may use it.
  ok(await admin('POST', `${V2}/permissions/users/vic/gateways/endpoints/judge-llm`, { body: { permission: 'USE' } }), 'vic uses the endpoint');
  const vic = as('vic');
  ok(await vic('POST', `${PREFIXES[0]}/scorers/register`, { body: judge(V, 'judge') }), 'the victim scorer');
  ok(await vic('POST', `${PREFIXES[0]}/scorers/register`, { body: judge(V, 'a/b') }), 'a name holding a slash');
  ok(await vic('POST', `${PREFIXES[0]}/scorers/register`, { body: judge(V, 'watcher', 'gateway:/judge-llm') }), 'an online judge');
  ok(await vic('PUT', `${PREFIXES[0]}/scorers/online-config`, { body: { experiment_id: V, name: 'watcher', sample_rate: 0.25 } }), 'online');
  victimScorerId = ok(await vic('GET', `${PREFIXES[0]}/scorers/get`, { query: { experiment_id: V, name: 'watcher' } }), 'its id').scorer.scorer_id;
  // mallory's own: a scorer named like the victim's, and one named like the first segment of `a/b`.
  ok(await mallory('POST', `${PREFIXES[0]}/scorers/register`, { body: judge(M, 'judge') }), 'mallory judge');
  ok(await mallory('POST', `${PREFIXES[0]}/scorers/register`, { body: judge(M, 'a') }), 'mallory a');
}, 300_000);

afterAll(async () => {
  await stack?.stop();
});

describe("mallory against the victim's scorers", () => {
  it('reaches them by name from nowhere: get, versions, delete, a new version, online scoring', async () => {
    for (const p of PREFIXES)
      await refusedAll(mallory, [
        ['GET', `${p}/scorers/get`, { query: { experiment_id: V, name: 'judge' } }],
        ['GET', `${p}/scorers/versions`, { query: { experiment_id: V, name: 'judge' } }],
        ['GET', `${p}/scorers/get`, { query: { experiment_id: V, name: 'a/b' } }],
        ['DELETE', `${p}/scorers/delete`, { body: { experiment_id: V, name: 'judge' } }],
        ['DELETE', `${p}/scorers/delete`, { body: { experiment_id: V, name: 'judge', version: 1 } }],
        ['POST', `${p}/scorers/register`, { body: judge(V, 'judge') }],
        ['POST', `${p}/scorers/register`, { body: judge(V, 'fresh') }],
        ['PUT', `${p}/scorers/online-config`, { body: { experiment_id: V, name: 'watcher', sample_rate: 1 } }],
        // MLflow reads a PUT's body, whatever the query says.
        ['PUT', `${p}/scorers/online-config`, { query: { experiment_id: M }, body: { experiment_id: V, name: 'watcher', sample_rate: 1 } }],
        // Her own scorer's names, in the victim's experiment.
        ['GET', `${p}/scorers/get`, { query: { experiment_id: V, name: 'a' } }],
      ]);
  });

  it('moves the experiment id between the query and the body, or into another spelling', async () => {
    for (const p of PREFIXES)
      await refusedAll(
        mallory,
        [
          ['DELETE', `${p}/scorers/delete`, { query: { experiment_id: M, name: 'judge' }, body: { experiment_id: V, name: 'judge' } }],
          ['DELETE', `${p}/scorers/delete`, { body: { experiment_id: M, experimentId: V, name: 'judge' } }],
          ['DELETE', `${p}/scorers/delete`, { query: { experiment_id: M, name: 'judge' }, body: { experiment_id: M, name: 'a/b' } }],
          ['POST', `${p}/scorers/register`, { query: { experiment_id: V }, body: judge(M, 'judge') }],
          ['POST', `${p}/scorers/register`, { body: { ...judge(M, 'judge'), experimentId: V } }],
          ['GET', `${p}/scorers/get`, { query: { experiment_id: [M, V], name: 'judge' } }],
          ...[`0${V}`, ` ${V}`, `+${V}`, `${V}.0`, `${V}%2F`, `${V}/x`, `1_${V}`].map(
            (spelled) => ['GET', `${p}/scorers/get`, { query: { experiment_id: spelled, name: 'judge' } }] as const,
          ),
          ['DELETE', `${p}/scorers/delete`, { body: { experiment_id: `0${V}`, name: 'judge' } }],
          ['GET', `${p}/scorers/get`, { query: { experiment_id: V, name: '   ' } }],
          // MLflow reads a DELETE's JSON body only: the victim's scorer named in the query alone, or camelCase in a GET's query.
          ['DELETE', `${p}/scorers/delete`, { query: { experiment_id: V, name: 'judge' } }],
          ['GET', `${p}/scorers/get`, { query: { experimentId: V, name: 'judge' } }],
          ['GET', `${p}/scorers/list`, { query: { experimentId: V } }],
        ],
        [400],
      );
  });

  it('grants herself on them through the admin API: directly, by a name with `/`, by encoded separators', async () => {
    for (const p of GRANT_PREFIXES)
      await refusedAll(
        mallory,
        [
          ['POST', `${p}/permissions/users/mallory/scorers/${V}/judge`, { body: { permission: 'MANAGE' } }],
          ['GET', `${p}/permissions/scorers/${V}/judge/users`],
          ['GET', `${p}/permissions/ui/scorers/${V}/judge/grants`],
          // `%2F` is read as `/` before matching: each of these names the victim's scorer, or none.
          ['POST', `${p}/permissions/users/mallory/scorers/${M}%2F..%2F${V}/judge`, { body: { permission: 'MANAGE' } }],
          ['POST', `${p}/permissions/users/mallory/scorers/${M}/a%2F..%2F..%2F${V}%2Fjudge`, { body: { permission: 'MANAGE' } }],
          ['POST', `${p}/permissions/users/mallory/scorers/${V}%2Fjudge`, { body: { permission: 'MANAGE' } }],
          // Her own `a` is not the victim's `a/b`.
          ['POST', `${p}/permissions/users/mallory/scorers/${V}/a%2Fb`, { body: { permission: 'MANAGE' } }],
          ['POST', `${p}/permissions/users/mallory/scorers/${M}/a%2Fb`, { body: { permission: 'MANAGE' } }],
        ],
        [403, 404],
      );
    await refusedAll(mallory, [['POST', `${V2}/permissions/users/mallory/scorers/0${V}/judge`, { body: { permission: 'MANAGE' } }]], [400, 403]);
    // An administrator's, refused for the spelling: no grant lands on an id MLflow never names.
    await refusedAll(admin, [['POST', `${V2}/permissions/users/mallory/scorers/0${V}/judge`, { body: { permission: 'MANAGE' } }]], [400]);
    // Her own scorer, by her own path: allowed (and undone), so the refusals above are about the victim's.
    ok(await mallory('POST', `${V2}/permissions/users/vic/scorers/${M}/judge`, { body: { permission: 'READ' } }), 'grant on her own');
    ok(await mallory('DELETE', `${V2}/permissions/users/vic/scorers/${M}/judge`), 'revoke it');
  });

  it('lists: an experiment she reads answers its scorers (MLflow’s rule); every other form answers none of the victim’s', async () => {
    for (const p of PREFIXES) {
      expect(namesIn(ok(await mallory('GET', `${p}/scorers/list`, { query: { experiment_id: V } }), 'list V')).sort()).toEqual([`${V}/a/b`, `${V}/judge`, `${V}/watcher`]);
      expect(namesIn(ok(await mallory('GET', `${p}/scorers/list`), 'list all')).sort()).toEqual([`${M}/a`, `${M}/judge`]);
      expect(namesIn(ok(await mallory('GET', `${p}/scorers/list`, { query: { experiment_ids: [V, M] } }), 'list ids')).sort()).toEqual([`${M}/a`, `${M}/judge`]);
      // A GET's JSON body, which MLflow reads when the query is empty: it answers V's scorers, each of
      // which is kept only if she may read it (flowgate reads no GET body, so it filters as for every experiment's).
      expect(namesIn(ok(await mallory('GET', `${p}/scorers/list`, getWithBody({ experiment_id: V })), 'list by body'))).toEqual([]);
    }
    // An experiment she may not read is refused outright.
    const hidden = ok(await admin('POST', `${V2}/experiments/create`, { body: { name: 'hidden-judged' } }), 'hidden').experiment_id;
    await refusedAll(mallory, PREFIXES.map((p) => ['GET', `${p}/scorers/list`, { query: { experiment_id: hidden } }] as const));
  });

  it("the victim's online config, asked by its scorer id, is not shown", async () => {
    for (const p of PREFIXES) {
      expect(ok(await mallory('GET', `${p}/scorers/online-configs`, { query: { scorer_ids: victimScorerId } }), 'configs').configs).toEqual([]);
      expect(ok(await mallory('GET', `${p}/scorers/online-configs`, getWithBody({ scorer_ids: [victimScorerId] })), 'configs by body').configs).toEqual([]);
      // The victim sees it.
      expect(ok(await as('vic')('GET', `${p}/scorers/online-configs`, { query: { scorer_ids: victimScorerId } }), 'own').configs).toHaveLength(1);
    }
  });
});
