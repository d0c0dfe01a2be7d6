import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ok, type Caller, type Reply } from './harness/http.js';
import { startStack, type Stack } from './harness/stack.js';
import { randomHex, seedWorld, V2, V3, type World } from './harness/world.js';

/*
 * Issue 32, classes 1, 2 and 8: flowgate's own answers (explain, the Manage screens' routes, the
 * refusals of the gate) must not tell a caller more than MLflow would, against the real MLflow.
 * Three attackers reach their rights three ways: directly, through a group, through pattern grants;
 * each probe is sent under `/api` and under its `/ajax-api` twin.
 */
const tag = randomHex(3);
const team = `team-${tag}`;
const otherTeam = `others-${tag}`;
const patTeam = `pat-${tag}`;
const ATTACKERS = ['m-direct', 'm-group', 'm-pattern'] as const;
type Attacker = (typeof ATTACKERS)[number];
const PREFIXES = ['/api', '/ajax-api'] as const;
const twin = (prefix: string, path: string) => path.replace(/^\/api\//, `${prefix}/`);

let stack: Stack;
let S: World;
let admin: Caller;
const as = (user: string) => stack.through(user);

beforeAll(async () => {
  stack = await startStack([...ATTACKERS, 'alice', 'bob', 'carol']);
  admin = as('admin');
  ok(await admin('POST', `${V2}/users/create`, { body: { username: 'robot', is_service_account: true } }), 'service account');
  ok(await admin('POST', `${V2}/users/create`, { body: { username: 'root2', is_admin: true } }), 'second admin');
  S = await seedWorld(admin, 'S');
  const grant = async (grantee: string, what: string, permission: string) =>
    ok(await admin('POST', `${V2}/permissions/${grantee}/${what}`, { body: { permission } }), `grant ${grantee} ${what}`);
  // m-direct: her own grants, a READ and two direct denies on S.
  await grant('users/m-direct', `experiments/${S.sharedExperimentId}`, 'READ');
  await grant('users/m-direct', `experiments/${S.experimentId}`, 'NO_PERMISSIONS');
  await grant('users/m-direct', `registered-models/${S.modelName}`, 'NO_PERMISSIONS');
  // m-group: a team with alice and bob, READ on the shared experiment and a deny on S.
  ok(await admin('POST', `${V2}/permissions/groups`, { body: { group_name: team } }), 'team');
  ok(await admin('POST', `${V2}/permissions/groups`, { body: { group_name: otherTeam } }), 'other team');
  for (const u of ['m-group', 'alice', 'bob']) ok(await admin('POST', `${V2}/permissions/groups/${team}/users`, { body: { username: u } }), 'member');
  for (const u of ['alice', 'carol']) ok(await admin('POST', `${V2}/permissions/groups/${otherTeam}/users`, { body: { username: u } }), 'member');
  await grant(`groups/${team}`, `experiments/${S.sharedExperimentId}`, 'READ');
  await grant(`groups/${team}`, `experiments/${S.experimentId}`, 'NO_PERMISSIONS');
  // m-pattern: READ on her team's experiments and models, and a deny pattern that matches S's name.
  const pattern = async (resource_type: string, p: string, permission: string) =>
    ok(await admin('POST', `${V2}/permissions/users/m-pattern/patterns`, { body: { resource_type, pattern: p, permission } }), `pattern ${p}`);
  await pattern('experiment', `${patTeam}/*`, 'READ');
  await pattern('experiment', 'secret-*', 'NO_PERMISSIONS');
  await pattern('registered_model', `${patTeam}-*`, 'READ');
}, 300_000);

afterAll(async () => {
  await stack?.stop();
});

/** The id appears as a value of its own: not inside a longer id, a version like `2.0`, or a name. */
const names = (text: string, id: string) => new RegExp(`(?<![\\w.\\-])${id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w.\\-])`).test(text);

describe('class 1: explain answers alike for a hidden resource and for none', () => {
  const missing = () => ({
    experimentId: '987654321',
    runId: randomHex(16),
    experimentName: `gone-${randomHex(4)}`,
    traceId: `tr-${randomHex(16)}`,
    loggedModelId: `m-${randomHex(16)}`,
    modelName: `gone-model-${randomHex(4)}`,
  });
  type Ids = ReturnType<typeof missing>;
  const PROBES: ReadonlyArray<readonly [string, (ids: Ids) => string]> = [
    ['experiment by id', (i) => `${V2}/experiments/get?experiment_id=${i.experimentId}`],
    ['experiment by name', (i) => `${V2}/experiments/get-by-name?experiment_name=${encodeURIComponent(i.experimentName)}`],
    ['run', (i) => `${V2}/runs/get?run_id=${i.runId}`],
    ['trace', (i) => `${V3}/traces/${i.traceId}`],
    ['logged model', (i) => `${V2}/logged-models/${i.loggedModelId}`],
    ['registered model', (i) => `${V2}/registered-models/get?name=${encodeURIComponent(i.modelName)}`],
    ['model version', (i) => `${V2}/model-versions/get?name=${encodeURIComponent(i.modelName)}&version=1`],
  ];
  const hidden = (): Ids => ({
    experimentId: S.experimentId,
    runId: S.runId,
    experimentName: S.experimentName,
    traceId: S.artifactTraceId,
    loggedModelId: S.loggedModelId,
    modelName: S.modelName,
  });
  const explain = (user: string, prefix: string, path: string) =>
    as(user)('GET', `${prefix}/2.0/mlflow/permissions/explain`, { query: { method: 'GET', path } });

  it.each(ATTACKERS.flatMap((a) => PREFIXES.map((p) => [a, p] as const)))('%s via %s: byte for byte the same answer', async (attacker, prefix) => {
    const gone = missing();
    for (const [what, target] of PROBES) {
      const a = await explain(attacker, prefix, target(hidden()));
      const b = await explain(attacker, prefix, target(gone));
      expect(`${a.status} ${a.text}`, `${what}: hidden vs missing`).toBe(`${b.status} ${b.text}`);
      expect(a.status, what).toBe(200);
      for (const secret of [S.prefix, S.experimentName, `secret-*`]) expect(a.text, `${what} names ${secret}`).not.toContain(secret);
      expect(names(a.text, S.experimentId), `${what} names the experiment id`).toBe(false);
    }
  });

  it.each(ATTACKERS.flatMap((a) => PREFIXES.map((p) => [a, p] as const)))('%s via %s: a request on her own model naming a hidden run answers alike', async (attacker, prefix) => {
    const own = `own-x-${attacker}-${randomHex(3)}`;
    ok(await as(attacker)('POST', `${V2}/registered-models/create`, { body: { name: own } }), 'her own model');
    const ask = (runId: string) =>
      as(attacker)('GET', `${prefix}/2.0/mlflow/permissions/explain`, {
        query: { method: 'POST', path: `${V2}/model-versions/create`, body: JSON.stringify({ name: own, source: `runs:/${runId}/model`, run_id: runId }) },
      });
    const [a, b] = [await ask(S.runId), await ask(randomHex(16))];
    expect(`${a.status} ${a.text}`).toBe(`${b.status} ${b.text}`);
    expect(a.json.verdict.allow).toBe(false);
    expect(names(a.text, S.experimentId)).toBe(false);
  });

  it.each(ATTACKERS.flatMap((a) => PREFIXES.map((p) => [a, p] as const)))('%s via %s: the lists’ own-permission look-up answers alike too', async (attacker, prefix) => {
    const mine = (id: string) => as(attacker)('GET', `${prefix}/2.0/mlflow/permissions/ui/my-permissions/experiments`, { query: { id } });
    const [a, b] = [await mine(S.experimentId), await mine('987654321')];
    expect(a.status).toBe(200);
    expect(a.json.permissions[S.experimentId]).toEqual(b.json.permissions['987654321']);
  });

  it('a resource the caller may read is still explained in full', async () => {
    for (const attacker of ['m-direct', 'm-group'] as const) {
      const r = ok(await explain(attacker, '/api', `${V2}/experiments/get?experiment_id=${S.sharedExperimentId}`), 'explain');
      expect(r.verdict.allow).toBe(true);
      expect(r.resources).toEqual([expect.objectContaining({ kind: 'experiment', id: S.sharedExperimentId, effective: 'READ' })]);
    }
    const own = ok(await admin('POST', `${V2}/experiments/create`, { body: { name: `${patTeam}/seen` } }), 'team experiment').experiment_id as string;
    const r = ok(await explain('m-pattern', '/ajax-api', `${V2}/experiments/get?experiment_id=${own}`), 'explain');
    expect(r.resources[0]).toMatchObject({ id: own, name: `${patTeam}/seen`, rule: 'pattern-grant', decidingPattern: { pattern: `${patTeam}/*` } });
  });

  it('an administrator asking about an attacker still sees everything', async () => {
    const r = ok(await admin('GET', `${V2}/permissions/explain`, { query: { username: 'm-pattern', method: 'GET', path: `${V2}/experiments/get?experiment_id=${S.experimentId}` } }), 'explain');
    expect(r.resources[0]).toMatchObject({ id: S.experimentId, name: S.experimentName, decidingPattern: { pattern: 'secret-*' } });
  });
});

describe('class 1: a rename tells nothing of the names other people’s pattern grants cover', () => {
  // m-pattern's patterns (`<patTeam>-*` on models, `<patTeam>/*` and `secret-*` on experiments) are
  // not bob's or carol's to learn: whether a rename needs MANAGE may not depend on the new name.
  const covered = () => ({ model: `${patTeam}-acq-${randomHex(3)}`, experiment: `secret-acq-${randomHex(3)}`, experimentIn: `${patTeam}/acq-${randomHex(3)}` });
  const uncovered = () => ({ model: `plain-acq-${randomHex(3)}`, experiment: `plain-acq-${randomHex(3)}`, experimentIn: `plain-in-${randomHex(3)}` });
  const renames = (model: string, experimentId: string) => (to: ReturnType<typeof covered>) =>
    [
      ['POST', `${V2}/registered-models/rename`, { name: model, new_name: to.model }, to.model],
      ['POST', `${V2}/experiments/update`, { experiment_id: experimentId, new_name: to.experiment }, to.experiment],
      ['POST', `${V2}/experiments/update`, { experiment_id: experimentId, new_name: to.experimentIn }, to.experimentIn],
    ] as const;

  it.each(PREFIXES)('explain via %s: a manager of her own and an editor of someone else’s get the same answer for every new name', async (prefix) => {
    const mine = `bob-model-${randomHex(3)}`;
    ok(await as('bob')('POST', `${V2}/registered-models/create`, { body: { name: mine } }), 'bob’s model');
    const myExp = ok(await as('bob')('POST', `${V2}/experiments/create`, { body: { name: `bob-exp-${randomHex(3)}` } }), 'bob’s experiment').experiment_id as string;
    const theirs = `edited-model-${randomHex(3)}`;
    ok(await admin('POST', `${V2}/registered-models/create`, { body: { name: theirs } }), 'admin’s model');
    const theirExp = ok(await admin('POST', `${V2}/experiments/create`, { body: { name: `edited-exp-${randomHex(3)}` } }), 'admin’s experiment').experiment_id as string;
    ok(await admin('POST', `${V2}/permissions/users/carol/registered-models/${theirs}`, { body: { permission: 'EDIT' } }), 'carol edits');
    ok(await admin('POST', `${V2}/permissions/users/carol/experiments/${theirExp}`, { body: { permission: 'EDIT' } }), 'carol edits');
    for (const [user, model, exp, allow] of [['bob', mine, myExp, true], ['carol', theirs, theirExp, false]] as const) {
      const ask = (method: string, path: string, body: unknown) =>
        as(user)('GET', `${prefix}/2.0/mlflow/permissions/explain`, { query: { method, path, body: JSON.stringify(body) } });
      const a = renames(model, exp)(covered());
      const b = renames(model, exp)(uncovered());
      for (let i = 0; i < a.length; i++) {
        const [x, y] = [await ask(a[i]![0], a[i]![1], a[i]![2]), await ask(b[i]![0], b[i]![1], b[i]![2])];
        expect(x.status, `${user} ${a[i]![1]}: ${x.text}`).toBe(200);
        expect(`${x.status} ${x.text.replaceAll(a[i]![3], '<new>')}`, `${user} ${a[i]![1]}`).toBe(`${y.status} ${y.text.replaceAll(b[i]![3], '<new>')}`);
        expect(x.json.verdict.allow, `${user} ${a[i]![1]}`).toBe(allow);
        expect((x.json.verdict.checks as Array<{ check: string }>).map((c) => c.check), `${user} ${a[i]![1]}`).toContain('rename');
        for (const secret of ['secret-*', `${patTeam}-*`, `${patTeam}/*`, 'm-pattern']) expect(x.text, secret).not.toContain(secret);
      }
    }
  });

  it.each(PREFIXES)('the gate via %s: an editor is refused every rename alike (MANAGE renames), the name the resource has stays hers to keep', async (prefix) => {
    const theirs = `gate-model-${randomHex(3)}`;
    ok(await admin('POST', `${V2}/registered-models/create`, { body: { name: theirs } }), 'admin’s model');
    const theirExpName = `gate-exp-${randomHex(3)}`;
    const theirExp = ok(await admin('POST', `${V2}/experiments/create`, { body: { name: theirExpName } }), 'admin’s experiment').experiment_id as string;
    ok(await admin('POST', `${V2}/permissions/users/carol/registered-models/${theirs}`, { body: { permission: 'EDIT' } }), 'carol edits');
    ok(await admin('POST', `${V2}/permissions/users/carol/experiments/${theirExp}`, { body: { permission: 'EDIT' } }), 'carol edits');
    const carol = as('carol');
    const a = renames(theirs, theirExp)(covered());
    const b = renames(theirs, theirExp)(uncovered());
    for (let i = 0; i < a.length; i++) {
      const [x, y] = [await carol(a[i]![0], twin(prefix, a[i]![1]), { body: a[i]![2] }), await carol(b[i]![0], twin(prefix, b[i]![1]), { body: b[i]![2] })];
      expect(x.status, `${a[i]![1]}: ${x.text}`).toBe(403);
      expect(`${y.status} ${y.text}`, b[i]![1]).toBe(`${x.status} ${x.text}`);
    }
    // Nothing was renamed; keeping the experiment's own name stays an editor's update.
    expect((await admin('GET', `${V2}/registered-models/get`, { query: { name: theirs } })).status).toBe(200);
    expect(ok(await admin('GET', `${V2}/experiments/get`, { query: { experiment_id: theirExp } }), 'get').experiment.name).toBe(theirExpName);
    expect((await carol('POST', twin(prefix, `${V2}/experiments/update`), { body: { experiment_id: theirExp, new_name: theirExpName } })).status).toBe(200);
    // A MANAGE holder renames as before.
    ok(await admin('PATCH', `${V2}/permissions/users/carol/registered-models/${theirs}`, { body: { permission: 'MANAGE' } }), 'carol manages');
    const to = `plain-managed-${randomHex(3)}`;
    expect((await carol('POST', twin(prefix, `${V2}/registered-models/rename`), { body: { name: theirs, new_name: to } })).status).toBe(200);
  });
});

describe('class 2: the Manage screens are no user directory', () => {
  /** An experiment each attacker manages: her own, through her team, through a pattern. */
  const managed: Partial<Record<Attacker, string>> = {};
  beforeAll(async () => {
    managed['m-direct'] = ok(await as('m-direct')('POST', `${V2}/experiments/create`, { body: { name: `mine-${tag}` } }), 'create').experiment_id;
    const teamExp = ok(await admin('POST', `${V2}/experiments/create`, { body: { name: `team-owned-${tag}` } }), 'create').experiment_id as string;
    ok(await admin('POST', `${V2}/permissions/groups/${team}/experiments/${teamExp}`, { body: { permission: 'MANAGE' } }), 'team manages');
    managed['m-group'] = teamExp;
    ok(await admin('POST', `${V2}/permissions/users/m-pattern/patterns`, { body: { resource_type: 'experiment', pattern: `${patTeam}/managed-*`, permission: 'MANAGE' } }), 'pattern');
    managed['m-pattern'] = ok(await admin('POST', `${V2}/experiments/create`, { body: { name: `${patTeam}/managed-1` } }), 'create').experiment_id;
  });

  const cases = ATTACKERS.flatMap((a) => PREFIXES.map((p) => [a, p] as const));
  const ui = (prefix: string, id: string, rest: string) => `${prefix}/2.0/mlflow/permissions/ui/experiments/${id}/${rest}`;

  it.each(cases)('%s via %s: checking a username answers alike for nobody, a user without a grant there, admins and service accounts', async (attacker, prefix) => {
    const id = managed[attacker]!;
    const me = as(attacker);
    const probe = async (username: string) => me('GET', ui(prefix, id, 'effective'), { query: { username } });
    // alice and bob are in m-group's team, which manages this experiment for m-group: still nothing to show.
    const answers = await Promise.all([`ghost-${randomHex(4)}`, 'carol', 'alice', 'bob', 'root2', 'robot'].map(probe));
    for (const a of answers) expect(`${a.status} ${a.text}`).toBe(`${answers[0]!.status} ${answers[0]!.text}`);
    expect(answers[0]!.status).toBe(200);
  });

  it.each(cases)('%s via %s: granting a group shows the group, never its members', async (attacker, prefix) => {
    const id = managed[attacker]!;
    const me = as(attacker);
    ok(await me('POST', `${prefix}/2.0/mlflow/permissions/groups/${otherTeam}/experiments/${id}`, { body: { permission: 'READ' } }), 'grant the other team');
    try {
      const grants = ok(await me('GET', ui(prefix, id, 'grants')), 'grants').grants as Array<{ grantee_type: string; name: string }>;
      expect(grants).toContainEqual(expect.objectContaining({ grantee_type: 'group', name: otherTeam }));
      const direct = new Set(grants.filter((g) => g.grantee_type !== 'group').map((g) => g.name));
      const effective = ok(await me('GET', ui(prefix, id, 'effective')), 'effective');
      const listed = (effective.users as Array<{ username: string; groups: string[] }>).map((u) => u.username);
      for (const u of listed) expect(direct, `${u} listed though no grant of theirs is shown`).toContain(u);
      expect(effective.users.flatMap((u: { groups: string[] }) => u.groups)).toEqual([]);
      expect(JSON.stringify(effective)).not.toMatch(/alice|carol|"is_admin"/);
    } finally {
      ok(await admin('DELETE', `${V2}/permissions/groups/${otherTeam}/experiments/${id}`), 'revoke');
    }
  });

  it.each(cases)('%s via %s: granting to a group nobody has answers as granting to a username nobody has, and makes no group', async (attacker, prefix) => {
    const id = managed[attacker]!;
    const me = as(attacker);
    // A guessed identity-provider role name: whether a group of that name exists is what `new_group` told her.
    const guess = `idp-role-${randomHex(4)}`;
    const grant = (segment: string) => me('POST', `${prefix}/2.0/mlflow/permissions/${segment}/${guess}/experiments/${id}`, { body: { permission: 'READ' } });
    const [group, user] = [await grant('groups'), await grant('users')];
    expect(group.status, group.text).toBe(404);
    expect(group.json).toEqual({ error_code: 'RESOURCE_DOES_NOT_EXIST', message: `Group '${guess}' does not exist` });
    expect(user.json).toEqual({ error_code: 'RESOURCE_DOES_NOT_EXIST', message: `User '${guess}' does not exist` });
    expect((await admin('GET', `${V2}/permissions/groups/${guess}/users`)).status).toBe(404);
    const listed = ok(await me('GET', ui(prefix, id, 'grants')), 'grants').grants as Array<{ name: string }>;
    expect(listed.map((g) => g.name)).not.toContain(guess);
    // A group that exists she grants as before: the answer is the grant, never whether the group is new.
    const known = await me('POST', `${prefix}/2.0/mlflow/permissions/groups/${otherTeam}/experiments/${id}`, { body: { permission: 'READ' } });
    try {
      expect(known.status, known.text).toBe(201);
      expect(known.json).toEqual({ permission: { resource_type: 'experiment', experiment_id: id, group_name: otherTeam, permission: 'READ' } });
    } finally {
      ok(await admin('DELETE', `${V2}/permissions/groups/${otherTeam}/experiments/${id}`), 'revoke');
    }
  });

  it('an administrator still makes a group by granting to it, and is told so', async () => {
    const id = managed['m-direct']!;
    const fresh = `new-team-${randomHex(4)}`;
    const made = ok(await admin('POST', `${V2}/permissions/groups/${fresh}/experiments/${id}`, { body: { permission: 'READ' } }), 'grant a new group');
    expect(made).toMatchObject({ new_group: true, permission: { group_name: fresh } });
    ok(await admin('GET', `${V2}/permissions/groups/${fresh}/users`), 'the group exists');
    const again = ok(await admin('PATCH', `${V2}/permissions/groups/${fresh}/experiments/${id}`, { body: { permission: 'EDIT' } }), 'change');
    expect(again).not.toHaveProperty('new_group');
  });

  it.each(cases)('%s via %s: a grant of a user nobody has, and of one without a grant there, read and change alike', async (attacker, prefix) => {
    const id = managed[attacker]!;
    const me = as(attacker);
    const ghost = `ghost-${randomHex(4)}`;
    for (const method of ['GET', 'PATCH', 'DELETE']) {
      const at = (u: string) => me(method, `${prefix}/2.0/mlflow/permissions/users/${u}/experiments/${id}`, method === 'PATCH' ? { body: { permission: 'READ' } } : {});
      const [a, b, c] = [await at(ghost), await at('carol'), await at('robot')];
      const seen = (r: Reply, u: string) => `${r.status} ${r.text.replaceAll(u, '<user>')}`;
      expect(seen(a, ghost), method).toBe(seen(b, 'carol'));
      expect(seen(c, 'robot'), method).toBe(seen(b, 'carol'));
    }
  });

  it.each(cases)('%s via %s: the Manage routes refuse a hidden experiment as they refuse one nobody has', async (attacker, prefix) => {
    const me = as(attacker);
    for (const [method, rest, body] of [
      ['GET', 'grants', undefined],
      ['GET', 'effective', undefined],
    ] as const) {
      const [a, b] = [await me(method, ui(prefix, S.experimentId, rest), { body }), await me(method, ui(prefix, '987654321', rest), { body })];
      expect(`${a.status} ${a.text}`, rest).toBe(`${b.status} ${b.text}`);
      expect(a.status, rest).toBe(403);
    }
    const grant = (id: string) => me('POST', `${prefix}/2.0/mlflow/permissions/users/carol/experiments/${id}`, { body: { permission: 'READ' } });
    const [a, b] = [await grant(S.experimentId), await grant('987654321')];
    expect(`${a.status} ${a.text}`).toBe(`${b.status} ${b.text}`);
  });

  it('the user and group directories stay an administrator’s', async () => {
    for (const prefix of PREFIXES)
      for (const what of ['users', 'groups']) expect((await as('m-direct')('GET', `${prefix}/2.0/mlflow/permissions/ui/${what}`)).status).toBe(403);
  });
});

describe('class 8: a refusal names nothing the caller did not send', () => {
  /** Each refusal, with what the caller sent; every other id of S must stay out of the answer. */
  const REFUSALS = (own: string): ReadonlyArray<{ what: string; method: string; path: string; query?: Record<string, string>; body?: unknown; sent: readonly string[] }> => [
    {
      what: 'model version of her own model from the hidden run',
      method: 'POST',
      path: `${V2}/model-versions/create`,
      body: { name: own, source: `runs:/${S.runId}/model`, run_id: S.runId },
      sent: [own, S.runId],
    },
    { what: 'experiment by name', method: 'GET', path: `${V2}/experiments/get-by-name`, query: { experiment_name: S.experimentName }, sent: [S.experimentName] },
    { what: 'run', method: 'GET', path: `${V2}/runs/get`, query: { run_id: S.runId }, sent: [S.runId] },
    { what: 'run artifacts', method: 'GET', path: `${V2}/artifacts/list`, query: { run_id: S.runId }, sent: [S.runId] },
    { what: 'trace', method: 'GET', path: `${V3}/traces/${S.artifactTraceId}`, sent: [S.artifactTraceId] },
    { what: 'trace artifact', method: 'GET', path: '/ajax-api/2.0/mlflow/get-trace-artifact', query: { request_id: S.artifactTraceId }, sent: [S.artifactTraceId] },
    { what: 'logged model', method: 'GET', path: `${V2}/logged-models/${S.loggedModelId}`, sent: [S.loggedModelId] },
    { what: 'dataset', method: 'GET', path: `${V3}/datasets/${S.datasetId}`, sent: [S.datasetId] },
    { what: 'registered model', method: 'GET', path: `${V2}/registered-models/get`, query: { name: S.modelName }, sent: [S.modelName] },
    { what: 'model version', method: 'GET', path: `${V2}/model-versions/get`, query: { name: S.modelName, version: '1' }, sent: [S.modelName] },
    { what: 'prompt', method: 'GET', path: `${V2}/registered-models/get`, query: { name: S.promptName }, sent: [S.promptName] },
    { what: 'prompt version', method: 'GET', path: `${V2}/model-versions/get`, query: { name: S.promptName, version: '1' }, sent: [S.promptName] },
  ];
  const allIds = () => [S.experimentId, S.experimentName, S.runId, S.loggedModelId, S.artifactTraceId, S.datasetId, S.modelName, S.promptName];

  it.each(ATTACKERS.flatMap((a) => PREFIXES.map((p) => [a, p] as const)))('%s via %s: every refusal is a bare PERMISSION_DENIED', async (attacker, prefix) => {
    const own = `own-${attacker}-${randomHex(3)}`;
    ok(await as(attacker)('POST', `${V2}/registered-models/create`, { body: { name: own } }), 'her own model');
    for (const r of REFUSALS(own)) {
      const query = new URLSearchParams(r.query ?? {});
      const url = `${stack.fg.url}${twin(prefix, r.path)}${r.query ? `?${query}` : ''}`;
      const headers = { authorization: stack.users[attacker]!.auth, ...(r.body ? { 'content-type': 'application/json' } : {}) };
      const res = await fetch(url, { method: r.method, headers, body: r.body ? JSON.stringify(r.body) : undefined });
      const text = await res.text();
      expect(res.status, `${r.what}: ${text}`).toBe(403);
      expect(JSON.parse(text).error_code, r.what).toBe('PERMISSION_DENIED');
      const everything = [res.statusText, ...[...res.headers].map(([k, v]) => `${k}: ${v}`), text].join('\n');
      expect(everything, r.what).not.toContain(S.prefix);
      for (const id of allIds().filter((i) => !r.sent.includes(i))) expect(names(everything, id), `${r.what} names ${id}: ${text}`).toBe(false);
      // Whether a hidden registered model is a prompt is not the caller's to learn either.
      if (r.what.startsWith('prompt') || r.what.startsWith('registered model') || r.what.startsWith('model version'))
        expect(r.sent.reduce((t, v) => t.replaceAll(v, '<sent>'), text), r.what).not.toMatch(/prompt|registered model/);
    }
  });
});

describe('the gate itself: a missing experiment is refused as a hidden one', () => {
  // A pattern holder's decision needs the experiment's name from MLflow; an id MLflow does not have
  // must not come back as 404 where a hidden one is a 403.
  const probes = (id: string) =>
    [
      ['GET', `${V2}/experiments/get`, { query: { experiment_id: id } }],
      ['POST', `${V2}/runs/search`, { body: { experiment_ids: [id] } }],
      ['POST', `${V2}/runs/create`, { body: { experiment_id: id } }],
    ] as const;

  it.each(ATTACKERS.flatMap((a) => PREFIXES.map((p) => [a, p] as const)))('%s via %s: the same refusal for a hidden and a missing experiment', async (attacker, prefix) => {
    const me = as(attacker);
    const hidden = probes(S.experimentId);
    const missing = probes('987654321');
    for (let i = 0; i < hidden.length; i++) {
      const [method, path, options] = hidden[i]!;
      const a = await me(method, twin(prefix, path), options);
      const b = await me(missing[i]![0], twin(prefix, missing[i]![1]), missing[i]![2]);
      // A search is filtered (an empty answer); the others are refused.
      expect(a.status, `${method} ${path}: ${a.text}`).toBe(path.endsWith('/search') ? 200 : 403);
      expect(`${b.status} ${b.text.replaceAll('987654321', S.experimentId)}`, `${method} ${path}`).toBe(`${a.status} ${a.text}`);
    }
  });

  // A model's kind is looked up in MLflow; a name it does not have must not come back as 404 where a
  // hidden model or prompt is a 403, nor tell a model-pattern holder that a name of theirs is a prompt.
  const modelProbes = (name: string) =>
    [
      ['GET', `${V2}/registered-models/get`, { query: { name } }],
      ['GET', `${V2}/model-versions/get`, { query: { name, version: '1' } }],
      ['GET', `${V2}/registered-models/alias`, { query: { name, alias: 'champion' } }],
      ['POST', `${V2}/registered-models/get-latest-versions`, { body: { name } }],
      ['DELETE', `${V2}/registered-models/delete`, { body: { name } }],
    ] as const;

  it.each(ATTACKERS.flatMap((a) => PREFIXES.map((p) => [a, p] as const)))('%s via %s: the same refusal for a hidden model or prompt and a name nobody has', async (attacker, prefix) => {
    const me = as(attacker);
    // A prompt named into m-pattern's model pattern: hers to read as a model, not as a prompt.
    const teamPrompt = `${patTeam}-prompt-${randomHex(3)}`;
    ok(await admin('POST', `${V2}/registered-models/create`, { body: { name: teamPrompt, tags: [{ key: 'mlflow.prompt.is_prompt', value: 'true' }] } }), 'team prompt');
    const cases: ReadonlyArray<readonly [string, string]> = [
      [S.modelName, `secret-model-gone-${randomHex(4)}`],
      [S.promptName, `secret-prompt-gone-${randomHex(4)}`],
      [teamPrompt, `${patTeam}-gone-${randomHex(4)}`],
    ];
    for (const [hiddenName, missingName] of cases) {
      const hidden = modelProbes(hiddenName);
      const missing = modelProbes(missingName);
      for (let i = 0; i < hidden.length; i++) {
        const [method, path, options] = hidden[i]!;
        const a = await me(method, twin(prefix, path), options);
        const b = await me(missing[i]![0], twin(prefix, missing[i]![1]), missing[i]![2]);
        expect(a.status, `${method} ${path} ${hiddenName}: ${a.text}`).toBe(403);
        expect(`${b.status} ${b.text.replaceAll(missingName, '<name>')}`, `${method} ${path} ${missingName}`).toBe(`${a.status} ${a.text.replaceAll(hiddenName, '<name>')}`);
      }
    }
    // Where MLflow answers for the name whatever it is (an administrator), its own 404 still comes through.
    const gone = await admin('GET', twin(prefix, `${V2}/registered-models/get`), { query: { name: `gone-${randomHex(4)}` } });
    expect(gone.status).toBe(404);
    expect(gone.json.error_code).toBe('RESOURCE_DOES_NOT_EXIST');
  });
});
