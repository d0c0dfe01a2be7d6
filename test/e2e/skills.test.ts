import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { adminAuth, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/**
 * Issue 35, the Skill Registry: the real MLflow 3.18.0 (the pinned 3.17.2 has no Skills) behind
 * flowgate. A Skill is a kind of its own, keyed by `<name>` or `@<organization>/<name>`, with READ, EDIT
 * and MANAGE as MLflow's basic-auth gives them; its creator (or the registration that made it) manages it.
 */
const SKILLS = '/api/3.0/mlflow/skills';
const DIGEST = 'a'.repeat(64);
/** A version from a Git source: MLflow records it without fetching anything. */
const gitVersion = (subpath?: string) => ({ source_type: 'git', source: 'https://example.invalid/skills.git', ref: 'main', digest: DIGEST, ...(subpath ? { subpath } : {}) });

describe('the Skill Registry behind flowgate (MLflow 3.18.0)', () => {
  let mlflow: MlflowServer;
  let fg: TestFlowgate;
  const { call, basicOf, withTokens } = jsonCaller(() => fg.url);

  const as = (who: string, method: string, path: string, body?: unknown) =>
    fetch(fg.url + path, {
      method,
      headers: { Authorization: basicOf(who), 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const status = async (who: string, method: string, path: string, body?: unknown) => (await as(who, method, path, body)).status;
  /** The Skills a search answers the caller, by id, every page walked. */
  const searched = async (who: string): Promise<string[]> => {
    const ids: string[] = [];
    let token: string | undefined;
    do {
      const r = await as(who, 'GET', `${SKILLS}?max_results=2${token ? `&page_token=${encodeURIComponent(token)}` : ''}`);
      expect(r.status).toBe(200);
      const page = (await r.json()) as { skills: Array<{ name: string; organization: string }>; next_page_token?: string };
      ids.push(...page.skills.map((s) => (s.organization ? `@${s.organization}/${s.name}` : s.name)));
      token = page.next_page_token;
    } while (token);
    return ids.sort();
  };
  const grantOf = async (grantee: string, id: string) => {
    const r = await fetch(`${fg.url}/api/2.0/mlflow/permissions/${grantee}/skills/${id}`, { headers: { Authorization: adminAuth() } });
    return r.status === 200 ? ((await r.json()) as { permission: { permission: string } }).permission.permission : r.status;
  };

  beforeAll(async () => {
    mlflow = await startMlflowServer({ version: '3.18.0' });
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
    await withTokens(['ann', 'bob', 'cat']);
    await call('POST', '/api/2.0/mlflow/permissions/groups', { group_name: 'reviewers' });
    await call('POST', '/api/2.0/mlflow/permissions/groups/reviewers/users', { username: 'cat' });
    // Someone else's Skill, which nobody below holds a grant on.
    await call('POST', SKILLS, { name: 'admin-only', organization: 'ops' });
  }, 240_000);

  afterAll(async () => {
    await fg?.close();
    await mlflow?.stop();
  });

  it('a non-admin creates a Skill, with and without an organization, and manages it', async () => {
    const plain = await as('ann', 'POST', SKILLS, { name: 'ann-skill', description: 'reviews' });
    expect(plain.status).toBe(200);
    expect(await plain.json()).toMatchObject({ name: 'ann-skill', organization: '' });
    expect((await as('ann', 'POST', SKILLS, { name: 'ann-tool', organization: 'acme' })).status).toBe(200);
    expect(await grantOf('users/ann', 'ann-skill')).toBe('MANAGE');
    // The organization's Skill by its id `@acme/ann-tool`: as two path segments, or encoded as one.
    expect(await grantOf('users/ann', '@acme/ann-tool')).toBe('MANAGE');
    expect(await grantOf('users/ann', encodeURIComponent('@acme/ann-tool'))).toBe('MANAGE');
    // The same name without the organization is another Skill: nothing of ann's.
    expect(await grantOf('users/ann', 'ann-tool')).toBe(404);
    for (const path of [`${SKILLS}/ann-skill`, `${SKILLS}/@acme/ann-tool`]) {
      expect(await status('ann', 'PATCH', path, { description: 'changed' })).toBe(200);
      expect(await status('ann', 'POST', `${path}/tags`, { key: 'team', value: 'a' })).toBe(200);
      expect(await status('ann', 'POST', `${path}/versions`, gitVersion())).toBe(200);
      expect(await status('ann', 'GET', `${path}/versions/1`)).toBe(200);
    }
  });

  it("another user may not read, change or delete it, and does not find it in a search", async () => {
    for (const path of [`${SKILLS}/ann-skill`, `${SKILLS}/@acme/ann-tool`]) {
      expect(await status('bob', 'GET', path)).toBe(403);
      expect(await status('bob', 'PATCH', path, { description: 'taken' })).toBe(403);
      expect(await status('bob', 'DELETE', path)).toBe(403);
      expect(await status('bob', 'GET', `${path}/versions`)).toBe(403);
      expect(await status('bob', 'POST', `${path}/versions`, gitVersion())).toBe(403);
    }
    expect(await searched('ann')).toEqual(['@acme/ann-tool', 'ann-skill']);
    expect(await searched('bob')).toEqual([]);
    // The administrator sees every Skill.
    const all = (await call('GET', SKILLS)) as { skills: Array<{ name: string }> };
    expect(all.skills.map((s) => s.name).sort()).toEqual(['admin-only', 'ann-skill', 'ann-tool']);
    // MLflow still has ann's Skill as she left it.
    expect(await call('GET', `${SKILLS}/ann-skill`)).toMatchObject({ description: 'changed', tags: { team: 'a' } });
  });

  it('READ lets a user read a Skill, its versions and aliases, but not change it', async () => {
    // ann holds MANAGE, so she may grant it.
    await call('POST', '/api/2.0/mlflow/permissions/users/bob/skills/ann-skill', { permission: 'READ' }, basicOf('ann'));
    expect(await grantOf('users/bob', 'ann-skill')).toBe('READ');
    expect(await status('bob', 'GET', `${SKILLS}/ann-skill`)).toBe(200);
    expect(await status('bob', 'GET', `${SKILLS}/ann-skill/versions`)).toBe(200);
    expect(await status('bob', 'GET', `${SKILLS}/ann-skill/versions/1`)).toBe(200);
    expect(await status('ann', 'POST', `${SKILLS}/ann-skill/aliases`, { alias: 'prod', version: 1 })).toBe(200);
    expect(await status('bob', 'GET', `${SKILLS}/ann-skill/aliases/prod`)).toBe(200);
    expect(await status('bob', 'PATCH', `${SKILLS}/ann-skill`, { description: 'bob was here' })).toBe(403);
    expect(await status('bob', 'POST', `${SKILLS}/ann-skill/tags`, { key: 'k', value: 'v' })).toBe(403);
    expect(await status('bob', 'POST', `${SKILLS}/ann-skill/versions`, gitVersion())).toBe(403);
    expect(await status('bob', 'DELETE', `${SKILLS}/ann-skill/aliases/prod`)).toBe(403);
    expect(await searched('bob')).toEqual(['ann-skill']);
    // bob may not pass it on: granting takes MANAGE.
    const regrant = await fetch(`${fg.url}/api/2.0/mlflow/permissions/users/cat/skills/ann-skill`, {
      method: 'POST',
      headers: { Authorization: basicOf('bob'), 'Content-Type': 'application/json' },
      body: JSON.stringify({ permission: 'READ' }),
    });
    expect(regrant.status).toBe(403);
  });

  it('a group grant on an organization\'s Skill: EDIT changes it and registers versions, deleting takes MANAGE', async () => {
    await call('POST', '/api/2.0/mlflow/permissions/groups/reviewers/skills/@acme/ann-tool', { permission: 'EDIT' }, basicOf('ann'));
    const holders = await call('GET', `/api/2.0/mlflow/permissions/skills/${encodeURIComponent('@acme/ann-tool')}/groups`, undefined, basicOf('ann'));
    expect(holders).toEqual({ groups: [{ resource_type: 'skill', name: '@acme/ann-tool', group_name: 'reviewers', permission: 'EDIT' }] });
    expect(await status('cat', 'PATCH', `${SKILLS}/@acme/ann-tool`, { description: 'by the reviewers' })).toBe(200);
    expect(await status('cat', 'POST', `${SKILLS}/@acme/ann-tool/versions`, gitVersion())).toBe(200);
    // A version update to `deleted` is a delete (MANAGE), whatever else an update may do.
    expect(await status('cat', 'PATCH', `${SKILLS}/@acme/ann-tool/versions/2`, { status: 'deprecated' })).toBe(200);
    expect(await status('cat', 'PATCH', `${SKILLS}/@acme/ann-tool/versions/2`, { status: 'deleted' })).toBe(403);
    expect(await status('cat', 'PATCH', `${SKILLS}/@acme/ann-tool/versions/2`, { status: ' Deleted ' })).toBe(403);
    expect(await status('cat', 'DELETE', `${SKILLS}/@acme/ann-tool/versions/2`)).toBe(403);
    expect(await status('cat', 'DELETE', `${SKILLS}/@acme/ann-tool`)).toBe(403);
    // The group's grant is on the organization's Skill only.
    expect(await status('cat', 'GET', `${SKILLS}/ann-skill`)).toBe(403);
    expect(await searched('cat')).toEqual(['@acme/ann-tool']);
    expect(await status('ann', 'PATCH', `${SKILLS}/@acme/ann-tool/versions/2`, { status: 'deleted' })).toBe(200);
  });

  it("registering a Skill's first version makes it, and the registrant manages it; with and without an organization", async () => {
    const first = await as('bob', 'POST', `${SKILLS}/bob-new/versions`, gitVersion());
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ name: 'bob-new', version: 1 });
    expect(await grantOf('users/bob', 'bob-new')).toBe('MANAGE');
    expect((await as('bob', 'POST', `${SKILLS}/@bobs/bob-new/versions`, gitVersion())).status).toBe(200);
    expect(await grantOf('users/bob', '@bobs/bob-new')).toBe('MANAGE');
    expect(await status('bob', 'POST', `${SKILLS}/bob-new/versions`, gitVersion())).toBe(200);
    // ann made nothing here: a registration into bob's Skill is one into an existing Skill (EDIT).
    expect(await status('ann', 'POST', `${SKILLS}/bob-new/versions`, gitVersion())).toBe(403);
    expect(await status('ann', 'POST', `${SKILLS}/@ops/admin-only/versions`, gitVersion())).toBe(403);
  });

  it('a bulk registration needs EDIT on each Skill that exists and makes the rest, each its registrant\'s', async () => {
    const bulk = (organization: string, ...names: string[]) => ({ organization, skills: names.map((name) => ({ name, ...gitVersion(name) })) });
    // ann may not register into ops' Skill, even beside a new one: nothing is made.
    expect(await status('ann', 'POST', `${SKILLS}/bulk-register`, bulk('ops', 'admin-only', 'ann-bulk'))).toBe(403);
    expect((await fetch(`${mlflow.url}${SKILLS}/@ops/ann-bulk`)).status).toBe(404);
    const r = await as('ann', 'POST', `${SKILLS}/bulk-register`, bulk('acme', 'ann-tool', 'ann-bulk'));
    expect(r.status).toBe(200);
    expect(await grantOf('users/ann', '@acme/ann-bulk')).toBe('MANAGE');
    expect(await grantOf('users/ann', '@acme/ann-tool')).toBe('MANAGE');
    expect(await status('bob', 'GET', `${SKILLS}/@acme/ann-bulk`)).toBe(403);
  });

  it("deleting a Skill drops its grants: one made again under its name is its new maker's alone", async () => {
    expect(await grantOf('users/bob', 'ann-skill')).toBe('READ');
    expect(await status('bob', 'DELETE', `${SKILLS}/ann-skill`)).toBe(403);
    expect(await status('ann', 'DELETE', `${SKILLS}/ann-skill`)).toBe(200);
    expect(await grantOf('users/ann', 'ann-skill')).toBe(404);
    expect(await grantOf('users/bob', 'ann-skill')).toBe(404);
    const audit = await call('GET', '/api/2.0/mlflow/permissions/audit?max_results=20');
    expect(JSON.stringify(audit)).toContain('grant.drop-with-resource');
    // cat makes a Skill of the freed name: ann, who managed the old one, holds nothing on it.
    expect(await status('cat', 'POST', SKILLS, { name: 'ann-skill' })).toBe(200);
    expect(await status('ann', 'GET', `${SKILLS}/ann-skill`)).toBe(403);
    expect(await status('bob', 'GET', `${SKILLS}/ann-skill`)).toBe(403);
    expect(await status('cat', 'DELETE', `${SKILLS}/ann-skill`)).toBe(200);
  });

  it('explain tells a Skill decision by its path, with the grant that made it', async () => {
    const query = new URLSearchParams({ username: 'cat', method: 'PATCH', path: `${SKILLS}/@acme/ann-tool`, body: '{}' });
    const explained = await call('GET', `/api/2.0/mlflow/permissions/explain?${query}`);
    expect(explained).toMatchObject({
      route: { pattern: `${SKILLS}/@:organization/:name`, need: 'edit', resource: 'skill' },
      resources: [{ kind: 'skill', id: '@acme/ann-tool', effective: 'EDIT', rule: 'group-grant' }],
      verdict: { allow: true, reason: 'group-grant' },
    });
  });
});
