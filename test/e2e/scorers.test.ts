import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { serializedJudge } from '../helpers/scorers.js';

/**
 * Issue 35, scorers (judges) as a kind of their own against the real MLflow (pinned): keyed
 * `<experiment_id>/<name>` as MLflow's basic-auth keys them, decided on their own grants (an experiment
 * grant stands for none, MLflow's rule), granted at `permissions/users/<u>/scorers/<experiment_id>/<name>`
 * as mlflow-oidc-auth spells it.
 */
const V3 = '/api/3.0/mlflow';

describe('scorers behind flowgate', () => {
  let mlflow: MlflowServer;
  let fg: TestFlowgate;
  const { call, basicOf, withTokens } = jsonCaller(() => fg.url);
  let exp = '';
  let other = '';

  const as = (who: string, method: string, path: string, body?: unknown) =>
    fetch(fg.url + path, {
      method,
      headers: { Authorization: basicOf(who), 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const register = (who: string, experimentId: string, name: string, instructions?: string, model?: string) =>
    as(who, 'POST', `${V3}/scorers/register`, { experiment_id: experimentId, name, serialized_scorer: serializedJudge(name, instructions, model) });
  const get = (who: string, experimentId: string, name: string) => as(who, 'GET', `${V3}/scorers/get?${new URLSearchParams({ experiment_id: experimentId, name })}`);
  const scorerGrant = (username: string, experimentId: string, name: string) =>
    `/api/2.0/mlflow/permissions/users/${username}/scorers/${experimentId}/${encodeURIComponent(name)}`;
  const listed = async (who: string, query = '') => {
    const r = await as(who, 'GET', `${V3}/scorers/list${query}`);
    expect(r.status).toBe(200);
    return (((await r.json()) as { scorers?: Array<{ experiment_id: number | string; scorer_name: string }> }).scorers ?? []).map((s) => `${s.experiment_id}/${s.scorer_name}`).sort();
  };

  beforeAll(async () => {
    mlflow = await startMlflowServer();
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
    await withTokens(['ann', 'bob', 'cat']);
    // Online scoring runs only judges on a gateway endpoint: the administrator's (never invoked here).
    const secret = await call('POST', `${V3}/gateway/secrets/create`, { secret_name: 'judge-key', secret_value: { api_key: 'sk-unused' }, provider: 'openai' });
    const definition = await call('POST', `${V3}/gateway/model-definitions/create`, {
      name: 'judge-def',
      secret_id: (secret.secret as { secret_id: string }).secret_id,
      provider: 'openai',
      model_name: 'gpt-4o-mini',
    });
    await call('POST', `${V3}/gateway/endpoints/create`, {
      name: 'judge-llm',
      model_configs: [{ model_definition_id: (definition.model_definition as { model_definition_id: string }).model_definition_id, linkage_type: 'PRIMARY', weight: 1 }],
    });
    exp = (await call('POST', '/api/2.0/mlflow/experiments/create', { name: 'judged' })).experiment_id as string;
    other = (await call('POST', '/api/2.0/mlflow/experiments/create', { name: 'elsewhere' })).experiment_id as string;
    // ann edits the experiment; bob and cat read it.
    await call('POST', `/api/2.0/mlflow/permissions/users/ann/experiments/${exp}`, { permission: 'EDIT' });
    // A judge on the endpoint spends it (online scoring calls it from MLflow's own process): ann may use it.
    await call('POST', '/api/2.0/mlflow/permissions/users/ann/gateways/endpoints/judge-llm', { permission: 'USE' });
    await call('POST', `/api/2.0/mlflow/permissions/users/bob/experiments/${exp}`, { permission: 'READ' });
    await call('POST', `/api/2.0/mlflow/permissions/users/cat/experiments/${other}`, { permission: 'EDIT' });
  }, 240_000);

  afterAll(async () => {
    await fg?.close();
    await mlflow?.stop();
  });

  it('an editor of the experiment registers a scorer and manages it; a reader of the experiment may not register', async () => {
    const made = await register('ann', exp, 'helpful');
    expect(made.status).toBe(200);
    expect(await made.json()).toMatchObject({ experiment_id: exp, name: 'helpful', version: 1 });
    const mine = await call('GET', scorerGrant('ann', exp, 'helpful'));
    expect(mine.permission).toEqual({ resource_type: 'scorer', experiment_id: exp, scorer_name: 'helpful', username: 'ann', permission: 'MANAGE' });
    expect((await get('ann', exp, 'helpful')).status).toBe(200);
    expect((await as('ann', 'GET', `${V3}/scorers/versions?experiment_id=${exp}&name=helpful`)).status).toBe(200);
    expect((await register('bob', exp, 'bobs')).status).toBe(403);
    // ann's own page of grants lists it, under mlflow-oidc-auth's fields.
    const own = await call('GET', '/api/2.0/mlflow/permissions/users/ann/scorers', undefined, basicOf('ann'));
    expect(own.permissions).toEqual([{ resource_type: 'scorer', experiment_id: exp, scorer_name: 'helpful', username: 'ann', permission: 'MANAGE' }]);
  });

  it("an experiment grant stands for none of its scorers (MLflow's rule): bob reads the experiment, not ann's scorer", async () => {
    const r = await get('bob', exp, 'helpful');
    expect(r.status).toBe(403);
    expect(((await r.json()) as { error_code: string }).error_code).toBe('PERMISSION_DENIED');
    expect((await as('bob', 'GET', `${V3}/scorers/versions?experiment_id=${exp}&name=helpful`)).status).toBe(403);
    // Listing one experiment is READ on it, every scorer answered (MLflow's rule) …
    expect(await listed('bob', `?experiment_id=${exp}`)).toEqual([`${exp}/helpful`]);
    // … while every experiment's list keeps the scorers bob may read: none.
    expect(await listed('bob')).toEqual([]);
    expect(await listed('ann')).toEqual([`${exp}/helpful`]);
  });

  it('someone with grants only elsewhere is refused and sees nothing', async () => {
    expect((await get('cat', exp, 'helpful')).status).toBe(403);
    expect((await as('cat', 'GET', `${V3}/scorers/list?experiment_id=${exp}`)).status).toBe(403);
    expect(await listed('cat')).toEqual([]);
    expect((await as('cat', 'DELETE', `${V3}/scorers/delete`, { experiment_id: exp, name: 'helpful' })).status).toBe(403);
    // Registering the same name in another experiment is another scorer: cat's own.
    expect((await register('cat', other, 'helpful')).status).toBe(200);
    expect(await listed('cat')).toEqual([`${other}/helpful`]);
    expect((await get('cat', exp, 'helpful')).status).toBe(403);
  });

  it('a grant on the scorer lets bob read it; a new version of it needs EDIT on it', async () => {
    const granted = await call('POST', scorerGrant('bob', exp, 'helpful'), { permission: 'READ' }, basicOf('ann'));
    expect(granted.permission).toMatchObject({ experiment_id: exp, scorer_name: 'helpful', permission: 'READ' });
    expect((await get('bob', exp, 'helpful')).status).toBe(200);
    expect(await listed('bob')).toEqual([`${exp}/helpful`]);
    // The resource side, for its manager: who holds a grant on it.
    const users = await call('GET', `/api/2.0/mlflow/permissions/scorers/${exp}/helpful/users`, undefined, basicOf('ann'));
    expect((users.users as Array<{ username: string }>).map((u) => u.username).sort()).toEqual(['ann', 'bob']);
    // explain tells the same decision, on the scorer and by its grant.
    const explained = await call('GET', `/api/2.0/mlflow/permissions/explain?${new URLSearchParams({ username: 'bob', method: 'GET', path: `${V3}/scorers/get?experiment_id=${exp}&name=helpful` })}`);
    expect(explained.resources).toEqual([expect.objectContaining({ kind: 'scorer', id: `${exp}/helpful`, direct: 'READ', effective: 'READ', rule: 'direct-grant' })]);
    expect(explained.verdict).toMatchObject({ allow: true, reason: 'direct-grant' });
    // READ on the scorer is not a manager's: bob may not grant on it.
    expect((await as('bob', 'POST', scorerGrant('cat', exp, 'helpful'), { permission: 'READ' })).status).toBe(403);

    // An editor of the experiment adds a version to a scorer only with EDIT on it (MLflow: not denied).
    await call('POST', `/api/2.0/mlflow/permissions/users/bob/experiments/${exp}`, { permission: 'EDIT' }).catch(() =>
      call('PATCH', `/api/2.0/mlflow/permissions/users/bob/experiments/${exp}`, { permission: 'EDIT' }),
    );
    expect((await register('bob', exp, 'helpful', 'Is {{ outputs }} rude?')).status).toBe(403);
    await call('PATCH', scorerGrant('bob', exp, 'helpful'), { permission: 'EDIT' }, basicOf('ann'));
    const second = await register('bob', exp, 'helpful', 'Is {{ outputs }} rude?');
    expect(second.status).toBe(200);
    expect(await second.json()).toMatchObject({ version: 2 });
    // EDIT is not MANAGE: the second version gave bob nothing more.
    expect((await call('GET', scorerGrant('bob', exp, 'helpful'))).permission).toMatchObject({ permission: 'EDIT' });
  });

  it('online scoring needs EDIT on the scorer and on the experiment; online configs show the scorers the caller may read', async () => {
    expect((await register('ann', exp, 'watcher', undefined, 'gateway:/judge-llm')).status).toBe(200);
    const config = { experiment_id: exp, name: 'watcher', sample_rate: 0.5 };
    expect((await as('cat', 'PUT', `${V3}/scorers/online-config`, config)).status).toBe(403);
    // bob edits the experiment and reads the scorer: not enough to turn it on.
    await call('POST', scorerGrant('bob', exp, 'watcher'), { permission: 'READ' }, basicOf('ann'));
    expect((await as('bob', 'PUT', `${V3}/scorers/online-config`, config)).status).toBe(403);
    const set = await as('ann', 'PUT', `${V3}/scorers/online-config`, config);
    expect(set.status, await set.clone().text()).toBe(200);
    const scorerId = ((await (await get('ann', exp, 'watcher')).json()) as { scorer: { scorer_id: string } }).scorer.scorer_id;
    const configsOf = async (who: string) => {
      const r = await as(who, 'GET', `${V3}/scorers/online-configs?scorer_ids=${scorerId}`);
      expect(r.status).toBe(200);
      return ((await r.json()) as { configs: Array<{ scorer_id: string; experiment_id: string }> }).configs;
    };
    expect(await configsOf('ann')).toEqual([expect.objectContaining({ scorer_id: scorerId, experiment_id: exp, sample_rate: 0.5 })]);
    expect(await configsOf('cat')).toEqual([]);
    expect(await configsOf('bob')).toHaveLength(1);
    // Without the scorer grant, bob sees no config of it (he still reads the experiment).
    await call('DELETE', scorerGrant('bob', exp, 'watcher'), undefined, basicOf('ann'));
    expect(await configsOf('bob')).toEqual([]);
  });

  it("a delete needs MANAGE and forgets the scorer's grants; a version's delete keeps them while versions remain", async () => {
    expect((await as('bob', 'DELETE', `${V3}/scorers/delete`, { experiment_id: exp, name: 'helpful' })).status).toBe(403);
    expect((await as('ann', 'DELETE', `${V3}/scorers/delete`, { experiment_id: exp, name: 'helpful', version: 2 })).status).toBe(200);
    expect((await call('GET', scorerGrant('bob', exp, 'helpful'))).permission).toMatchObject({ permission: 'EDIT' });
    expect((await as('ann', 'DELETE', `${V3}/scorers/delete`, { experiment_id: exp, name: 'helpful' })).status).toBe(200);
    for (const who of ['ann', 'bob']) {
      const r = await fetch(fg.url + scorerGrant(who, exp, 'helpful'), { headers: { Authorization: (await import('../helpers/flowgate.js')).adminAuth() } });
      expect(r.status).toBe(404);
    }
    // Registered again by someone else, it is theirs alone: nothing of the old grants carried over.
    expect((await register('bob', exp, 'helpful')).status).toBe(200);
    expect((await call('GET', scorerGrant('bob', exp, 'helpful'))).permission).toMatchObject({ permission: 'MANAGE' });
    expect((await get('ann', exp, 'helpful')).status).toBe(403);
  });
});
