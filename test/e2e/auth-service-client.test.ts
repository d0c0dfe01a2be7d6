import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { ADMIN, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { mlflowAuthExtras, runPython, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/*
 * MLflow's own admin client, `mlflow.server.auth.client.AuthServiceClient` (MLflow 3.17.2), run
 * unchanged against flowgate in front of the real MLflow: users, per-user grants, roles, role
 * permissions, assignments. flowgate's own state (groups, grants, members) and the user's access
 * through the MLflow client must follow what the script did.
 */

let mlflow: MlflowServer;
let fg: TestFlowgate;
/** MLflow's `auth` extra, which `mlflow.server.auth` (the client's package) imports. */
let authExtras = '';
const api = jsonCaller(() => fg.url);

beforeAll(async () => {
  mlflow = await startMlflowServer();
  authExtras = await mlflowAuthExtras(mlflow.venv);
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
}, 600_000);

afterAll(async () => {
  await fg?.close();
  if (fg) removeDir(fg.dir);
  await mlflow?.stop();
});

/** Runs Python as `username` (token as MLflow's password); the script prints one JSON object last. */
async function python(code: string, username: string, token: string, env: Record<string, string> = {}): Promise<Record<string, any>> {
  const r = await runPython(mlflow.venv, code, { ...env, PYTHONPATH: authExtras, MLFLOW_TRACKING_USERNAME: username, MLFLOW_TRACKING_PASSWORD: token, FG_URL: fg.url });
  if (r.code !== 0) throw new Error(`python failed (${r.code}):\n${r.stderr}\n${r.stdout}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!);
}

/** The script an AuthServiceClient user would write; each step's outcome (or MLflow's error code) is recorded. */
const ADMIN_SCRIPT = String.raw`
import json, os
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException
from mlflow.server.auth.client import AuthServiceClient

uri = os.environ["FG_URL"]
auth = AuthServiceClient(uri)
tracking = MlflowClient(uri)
out = {}

def step(name, fn):
    try:
        out[name] = fn()
    except MlflowException as e:
        out[name] = {"error_code": e.error_code, "message": e.message}

read_exp = tracking.create_experiment("asc-read")
team_exp = tracking.create_experiment("asc-team")
out["read_exp"], out["team_exp"] = read_exp, team_exp
user = auth.create_user("ana", "her-old-password")
out["created"] = {"id": user.id, "username": user.username, "is_admin": user.is_admin}
out["got"] = auth.get_user("ana").username
auth.grant_user_permission("ana", "experiment", read_exp, "READ")
out["ana_on_read"] = auth.get_user_permission("ana", "experiment", read_exp).to_json()
role = auth.create_role("default", "asc-team", description="the team")
out["role"] = role.to_json()
rp = auth.add_role_permission(role.id, "experiment", team_exp, "EDIT")
out["rp"] = rp.to_json()
star = auth.add_role_permission(role.id, "registered_model", "*", "READ")
out["star"] = star.to_json()
out["assignment"] = auth.assign_role("ana", role.id).to_json()
out["user_roles"] = [r.name for r in auth.list_user_roles("ana")]
out["role_perms"] = sorted(p.resource_pattern for p in auth.list_role_permissions(role.id))
out["role_users"] = [a.user_id for a in auth.list_role_users(role.id)]
out["roles"] = [r.name for r in auth.list_roles("default")]
out["get_role"] = auth.get_role(role.id).to_json()
out["updated_rp"] = auth.update_role_permission(rp.id, "MANAGE").to_json()
out["ana_on_team"] = auth.get_user_permission("ana", "experiment", team_exp).to_json()
auth.update_user_admin("ana", True)
out["ana_admin"] = auth.get_user("ana").is_admin
auth.update_user_admin("ana", False)
step("other_workspace", lambda: auth.create_role("research", "asc-other").to_json())
step("password", lambda: auth.update_user_password("ana", "new-password"))
step("sub_tier", lambda: auth.add_role_permission(role.id, "run", "*", "READ").to_json())
step("twice", lambda: auth.add_role_permission(role.id, "experiment", team_exp, "READ").to_json())
step("use_on_experiment", lambda: auth.add_role_permission(role.id, "experiment", read_exp, "USE").to_json())
print(json.dumps(out))
`;

const ANA_SCRIPT = String.raw`
import json, os
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException
from mlflow.server.auth.client import AuthServiceClient

uri = os.environ["FG_URL"]
auth = AuthServiceClient(uri)
tracking = MlflowClient(uri)
out = {}

def step(name, fn):
    try:
        out[name] = fn()
    except MlflowException as e:
        out[name] = {"error_code": e.error_code}

step("self", lambda: auth.get_user("ana").username)
step("admin", lambda: auth.get_user("admin").username)
step("read", lambda: tracking.get_experiment(os.environ["READ_EXP"]).name)
step("tag_read", lambda: tracking.set_experiment_tag(os.environ["READ_EXP"], "k", "v"))
step("tag_team", lambda: tracking.set_experiment_tag(os.environ["TEAM_EXP"], "k", "v") or "tagged")
step("own_roles", lambda: [r.name for r in auth.list_user_roles("ana")])
step("create_role", lambda: auth.create_role("default", "ana-made").name)
step("assign_self", lambda: auth.assign_role("ana", int(os.environ["ROLE_ID"])).to_json())
print(json.dumps(out))
`;

describe('AuthServiceClient against flowgate', () => {
  let made: Record<string, any>;
  let anaToken: string;

  it('runs an unchanged admin script: users, grants, roles, role permissions, assignments', async () => {
    made = await python(ADMIN_SCRIPT, ADMIN.username, ADMIN.token);
    expect(made.created).toMatchObject({ username: 'ana', is_admin: false });
    expect(made.got).toBe('ana');
    expect(made.ana_on_read).toEqual({ allowed: false, permission: 'READ' });
    expect(made.role).toMatchObject({ name: 'asc-team', workspace: 'default', permissions: [] });
    expect(made.rp).toMatchObject({ role_id: made.role.id, resource_type: 'experiment', resource_pattern: made.team_exp, permission: 'EDIT' });
    expect(made.star).toMatchObject({ resource_type: 'registered_model', resource_pattern: '*', permission: 'READ' });
    expect(made.assignment).toMatchObject({ user_id: made.created.id, role_id: made.role.id });
    expect(made.user_roles).toEqual(['asc-team']);
    expect(made.role_perms).toEqual(['*', made.team_exp].sort());
    expect(made.role_users).toEqual([made.created.id]);
    expect(made.roles).toContain('asc-team');
    expect(made.get_role.permissions).toHaveLength(2);
    expect(made.updated_rp).toMatchObject({ id: made.rp.id, permission: 'MANAGE' });
    expect(made.ana_on_team).toEqual({ allowed: true, permission: 'MANAGE' });
    expect(made.ana_admin).toBe(true);
    expect(made.other_workspace.error_code).toBe('INVALID_PARAMETER_VALUE');
    expect(made.other_workspace.message).toContain("'default' workspace");
    expect(made.password.error_code).toBe('INVALID_PARAMETER_VALUE');
    expect(made.password.message).toContain('access token');
    expect(made.sub_tier.error_code).toBe('INVALID_PARAMETER_VALUE');
    expect(made.twice.error_code).toBe('RESOURCE_ALREADY_EXISTS');
    expect(made.use_on_experiment.error_code).toBe('INVALID_PARAMETER_VALUE');
  }, 180_000);

  it("keeps it as flowgate's groups, grants and memberships", async () => {
    const group = await api.call('GET', `/api/2.0/mlflow/permissions/groups/asc-team/users`);
    expect((group.users as Array<{ username: string }>).map((u) => u.username)).toEqual(['ana']);
    const team = await api.call('GET', `/api/2.0/mlflow/permissions/groups/asc-team/experiments/${made.team_exp}`);
    expect(team.permission).toMatchObject({ permission: 'MANAGE' });
    const patterns = await api.call('GET', '/api/2.0/mlflow/permissions/groups/asc-team/patterns');
    expect(patterns.patterns).toEqual([{ resource_type: 'registered_model', pattern: '*', group_name: 'asc-team', permission: 'READ' }]);
    const own = await api.call('GET', `/api/2.0/mlflow/permissions/users/ana/experiments/${made.read_exp}`);
    expect(own.permission).toMatchObject({ permission: 'READ' });
    const user = await api.call('GET', '/api/2.0/mlflow/permissions/users/ana');
    expect(user.user).toMatchObject({ is_admin: false, groups: ['asc-team'] });
    // No failed step changed anything: one grant on the team experiment, two role permissions.
    expect(((await api.call('GET', `/api/3.0/mlflow/roles/permissions/list?role_id=${made.role.id}`)).role_permissions as unknown[]).length).toBe(2);
  });

  it('gives ana, through the MLflow client, what the script granted and nothing more', async () => {
    anaToken = (await api.call('PATCH', '/api/2.0/mlflow/users/access-token', { username: 'ana' })).token as string;
    const seen = await runAs(anaToken);
    expect(seen.self).toBe('ana');
    expect(seen.admin).toEqual({ error_code: 'PERMISSION_DENIED' });
    expect(seen.read).toBe('asc-read');
    expect(seen.tag_read).toEqual({ error_code: 'PERMISSION_DENIED' });
    expect(seen.tag_team).toBe('tagged');
    expect(seen.own_roles).toEqual(['asc-team']);
    expect(seen.create_role).toEqual({ error_code: 'PERMISSION_DENIED' });
    expect(seen.assign_self).toEqual({ error_code: 'PERMISSION_DENIED' });
  }, 120_000);

  it("answers users/current/permissions with the caller's own grants only", async () => {
    const r = await fetch(`${fg.url}/api/3.0/mlflow/users/current/permissions`, { headers: { Authorization: basic('ana', anaToken) } });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { is_admin: boolean; permissions: Array<Record<string, unknown>> };
    expect(body.is_admin).toBe(false);
    expect(body.permissions).toEqual(
      expect.arrayContaining([
        { role_id: 0, role_name: `__user_${made.created.id}__`, workspace: 'default', resource_type: 'experiment', resource_pattern: made.read_exp, permission: 'READ' },
        { role_id: made.role.id, role_name: 'asc-team', workspace: 'default', resource_type: 'experiment', resource_pattern: made.team_exp, permission: 'MANAGE' },
        { role_id: made.role.id, role_name: 'asc-team', workspace: 'default', resource_type: 'registered_model', resource_pattern: '*', permission: 'READ' },
      ]),
    );
    expect(body.permissions).toHaveLength(3);
  });

  it('takes it all down again: unassign, remove, delete role, revoke, delete user', async () => {
    const done = await python(
      String.raw`
import json, os
from mlflow.server.auth.client import AuthServiceClient
auth = AuthServiceClient(os.environ["FG_URL"])
role_id, rp_id = int(os.environ["ROLE_ID"]), int(os.environ["RP_ID"])
auth.unassign_role("ana", role_id)
auth.remove_role_permission(rp_id)
left = [p.resource_pattern for p in auth.list_role_permissions(role_id)]
auth.delete_role(role_id)
auth.revoke_user_permission("ana", "experiment", os.environ["READ_EXP"])
auth.delete_user("ana")
print(json.dumps({"left": left, "roles": [r.name for r in auth.list_all_roles()]}))
`,
      ADMIN.username,
      ADMIN.token,
      { ROLE_ID: String(made.role.id), RP_ID: String(made.rp.id), READ_EXP: made.read_exp },
    );
    expect(done.left).toEqual(['*']);
    expect(done.roles).not.toContain('asc-team');
    const users = (await api.call('GET', '/api/2.0/mlflow/permissions/users')).users as Array<{ username: string }>;
    expect(users.map((u) => u.username)).not.toContain('ana');
    const groups = (await api.call('GET', '/api/2.0/mlflow/permissions/groups')).groups as Array<{ name: string }>;
    expect(groups.map((g) => g.name)).not.toContain('asc-team');
    // Her token went with her.
    const r = await fetch(`${fg.url}/api/3.0/mlflow/users/current/permissions`, { headers: { Authorization: basic('ana', anaToken) } });
    expect(r.status).toBe(401);
  }, 120_000);

  const runAs = (token: string) => python(ANA_SCRIPT, 'ana', token, { READ_EXP: made.read_exp, TEAM_EXP: made.team_exp, ROLE_ID: String(made.role.id) });
});

/*
 * mlflow-oidc-auth 11's token and session routes, with plain HTTP as curl sends it: the unnamed token
 * replaced through `PATCH users/access-token`, named tokens created, listed and revoked by id or by
 * name, browser sessions listed and ended one at a time or all at once.
 */
describe("mlflow-oidc-auth's token and session routes", () => {
  const V2 = '/api/2.0/mlflow';
  const send = (method: string, path: string, auth: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(fg.url + path, {
      method,
      redirect: 'manual',
      headers: { Authorization: auth, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const whoAmI = async (auth: string) => (await send('GET', `${V2}/users/current`, auth)).status;
  const expiration = () => new Date(Date.now() + 7 * 86_400_000).toISOString();
  let first = '';

  beforeAll(async () => {
    await api.call('POST', `${V2}/users/create`, { username: 'tess' });
    first = (await api.call('PATCH', `${V2}/users/access-token`, { username: 'tess' })).token as string;
  });

  it('replaces the caller’s own token through PATCH users/access-token: the previous one stops working', async () => {
    const r = await send('PATCH', `${V2}/users/access-token`, basic('tess', first), { expiration: expiration() });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { token: string; expires_at: string; message: string };
    expect(body.expires_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(await whoAmI(basic('tess', first))).toBe(401);
    expect(await whoAmI(basic('tess', body.token))).toBe(200);
    first = body.token;
  });

  it('creates, lists and revokes named tokens, by id and by name', async () => {
    const made = await send('POST', `${V2}/users/current/tokens`, basic('tess', first), { name: 'laptop', expiration: expiration() });
    expect(made.status).toBe(201);
    const laptop = (await made.json()) as { id: number; name: string; token: string; active: boolean };
    expect(laptop).toMatchObject({ name: 'laptop', active: true });
    expect(laptop.id).toBeGreaterThan(0);
    expect(await whoAmI(basic('tess', laptop.token))).toBe(200);

    const ci = await send('POST', `${V2}/users/tess/tokens`, adminAuthHeader(), { name: 'ci' });
    expect(ci.status).toBe(201);
    const ciToken = ((await ci.json()) as { token: string }).token;

    const listed = (await (await send('GET', `${V2}/users/current/tokens`, basic('tess', first))).json()) as { tokens: Array<Record<string, unknown>> };
    expect(listed.tokens.map((t) => t.name).sort()).toEqual(['ci', 'laptop']);
    expect(JSON.stringify(listed)).not.toContain(laptop.token);
    expect(listed.tokens.find((t) => t.name === 'laptop')!.id).toBe(laptop.id);
    const asAdmin = (await (await send('GET', `${V2}/users/tess/tokens`, adminAuthHeader())).json()) as { tokens: Array<{ name: string }> };
    expect(asAdmin.tokens.map((t) => t.name).sort()).toEqual(['ci', 'laptop']);

    expect((await send('DELETE', `${V2}/users/current/tokens/${laptop.id}`, basic('tess', first))).status).toBe(200);
    expect(await whoAmI(basic('tess', laptop.token))).toBe(401);
    expect((await send('DELETE', `${V2}/users/tess/tokens/ci`, adminAuthHeader())).status).toBe(200);
    expect(await whoAmI(basic('tess', ciToken))).toBe(401);
    const gone = await send('DELETE', `${V2}/users/current/tokens/${laptop.id}`, basic('tess', first));
    expect(gone.status).toBe(404);
    expect(await gone.json()).toMatchObject({ error_code: 'RESOURCE_DOES_NOT_EXIST' });
    expect(await whoAmI(basic('tess', first))).toBe(200);
  });

  it('lists browser sessions by pk and ends one, then all', async () => {
    const signIn = async () => {
      const r = await fetch(`${fg.url}/flowgate/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { Origin: new URL(fg.url).origin, 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ username: 'tess', token: first, return_to: '/' }).toString(),
      });
      expect(r.status).toBe(302);
      return r.headers.getSetCookie().find((c) => c.includes('flowgate_session='))!.split(';')[0]!;
    };
    const one = await signIn();
    const two = await signIn();
    const byCookie = async (cookie: string) => (await fetch(`${fg.url}/ajax-api/2.0/mlflow/users/current`, { headers: { Cookie: cookie } })).status;
    expect(await byCookie(one)).toBe(200);

    const listed = (await (await send('GET', `${V2}/users/tess/sessions`, basic('tess', first))).json()) as { sessions: Array<{ pk: number }> };
    expect(listed.sessions).toHaveLength(2);
    expect(JSON.stringify(listed)).not.toContain(one.split('=')[1]!);
    // Newest first: the first sign-in is the last row.
    const oldest = listed.sessions.at(-1)!.pk;
    const ended = await send('DELETE', `${V2}/users/tess/sessions/${oldest}`, adminAuthHeader());
    expect(ended.status).toBe(200);
    expect(await ended.json()).toEqual({ revoked: 1 });
    expect(await byCookie(one)).toBe(401);
    expect(await byCookie(two)).toBe(200);

    const all = await send('DELETE', `${V2}/users/tess/sessions`, basic('tess', first));
    expect(await all.json()).toEqual({ revoked: 1 });
    expect(await byCookie(two)).toBe(401);
  });

  it('revokes every token of a user with DELETE users/<u>/tokens', async () => {
    const r = await send('DELETE', `${V2}/users/tess/tokens`, adminAuthHeader());
    expect(r.status).toBe(200);
    expect(((await r.json()) as { revoked: number }).revoked).toBeGreaterThanOrEqual(1);
    expect(await whoAmI(basic('tess', first))).toBe(401);
  });
});

const adminAuthHeader = () => basic(ADMIN.username, ADMIN.token);
