import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { caller, ok, type Caller, type Exchange, type Reply } from './harness/http.js';
import { randomHex, V2 } from './harness/world.js';

/*
 * Issue 35, the Skill Registry, from the attacker's side, against the real MLflow 3.18.0. alice keeps
 * `vic-<tag>` (no organization) and `@acme/vic-<tag>`, each with a version, an alias and a tag;
 * mallory manages her own `mal-<tag>` and `@mal/vic-<tag>` (alice's name in her own organization) and
 * holds nothing of alice's. Each attack goes through flowgate as mallory; where MLflow would act on the
 * request, a control first shows MLflow itself answering it, so a refusal for an unrelated reason cannot
 * pass as held. A bypass is a change to alice's Skills (read straight from MLflow before and after), an
 * answer carrying one of them, or a grant on one of them for mallory.
 */
const tag = randomHex(3);
const SKILLS = '/api/3.0/mlflow/skills';
const AJAX_SKILLS = '/ajax-api/3.0/mlflow/skills';
const VIC = `vic-${tag}`;
const MAL = `mal-${tag}`;
const DIGEST = 'b'.repeat(64);
const gitVersion = { source_type: 'git', source: 'https://example.invalid/skills.git', ref: 'main', digest: DIGEST };
/** alice's Skills, by their paths under `/skills`. */
const ALICE = [`/${VIC}`, `/@acme/${VIC}`];

let mlflow: MlflowServer;
let fg: TestFlowgate;
const exchanges: Exchange[] = [];
const keep = (e: Exchange) => exchanges.push(e);
let admin: Caller;
let alice: Caller;
let mallory: Caller;
let direct: Caller;

/** What flowgate answered mallory. */
const malloryExchanges: Exchange[] = [];

async function user(name: string, observe: (e: Exchange) => void = keep): Promise<Caller> {
  ok(await admin('POST', `${V2}/users/create`, { body: { username: name } }), `create ${name}`);
  const token = ok(await admin('PATCH', `${V2}/permissions/users/access-token`, { body: { username: name } }), 'token').token as string;
  return caller(fg.url, basic(name, token), observe);
}

/** Everything MLflow has of alice's Skills (straight from MLflow): must not change under attack. */
async function aliceSkills(): Promise<string> {
  const parts: unknown[] = [];
  for (const path of ALICE) {
    parts.push((await direct('GET', `${SKILLS}${path}`)).json);
    parts.push((await direct('GET', `${SKILLS}${path}/versions`)).json);
  }
  return JSON.stringify(parts);
}
let aliceBefore: string;

/** A refusal of flowgate's own (MLflow's error JSON). */
function refused(reply: Reply, status = 403): void {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.json?.error_code, reply.text).toBe(status === 403 ? 'PERMISSION_DENIED' : 'INVALID_PARAMETER_VALUE');
}

/** mallory's grant on a Skill, as the admin API has it (404: none). */
async function malloryHolds(id: string): Promise<number> {
  return (await admin('GET', `${V2}/permissions/users/mallory/skills/${encodeURIComponent(id)}`)).status;
}

beforeAll(async () => {
  mlflow = await startMlflowServer({ version: '3.18.0' });
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
  admin = caller(fg.url, adminAuth(), keep);
  direct = caller(mlflow.url, undefined, keep);
  alice = await user('alice');
  mallory = await user('mallory', (e) => {
    keep(e);
    malloryExchanges.push(e);
  });
  ok(await alice('POST', SKILLS, { body: { name: VIC, description: 'alice' } }), 'alice skill');
  ok(await alice('POST', SKILLS, { body: { name: VIC, organization: 'acme', description: 'alice' } }), 'alice org skill');
  for (const path of ALICE) {
    ok(await alice('POST', `${SKILLS}${path}/versions`, { body: gitVersion }), 'version');
    ok(await alice('POST', `${SKILLS}${path}/aliases`, { body: { alias: 'prod', version: 1 } }), 'alias');
    ok(await alice('POST', `${SKILLS}${path}/tags`, { body: { key: 'team', value: 'alice' } }), 'tag');
  }
  ok(await mallory('POST', SKILLS, { body: { name: MAL } }), 'mallory skill');
  ok(await mallory('POST', SKILLS, { body: { name: VIC, organization: 'mal' } }), 'mallory org skill');
  aliceBefore = await aliceSkills();
}, 300_000);

afterAll(async () => {
  await fg?.close();
  if (fg) removeDir(fg.dir);
  await mlflow?.stop();
});

describe("Skills: mallory against alice's", () => {
  it('reads, changes and deletes of either Skill are refused, its versions, aliases and tags too (both twins)', async () => {
    const attacks: Array<[string, string, unknown?]> = [];
    for (const path of ALICE)
      attacks.push(
        ['GET', path],
        ['PATCH', path, { description: 'mallory' }],
        ['DELETE', path],
        ['GET', `${path}/versions`],
        ['GET', `${path}/versions/1`],
        ['PATCH', `${path}/versions/1`, { status: 'deprecated' }],
        ['PATCH', `${path}/versions/1`, { status: 'deleted' }],
        ['DELETE', `${path}/versions/1`],
        ['POST', `${path}/versions/1/tags`, { key: 'k', value: 'v' }],
        ['DELETE', `${path}/versions/1/tags/k`],
        ['POST', `${path}/tags`, { key: 'team', value: 'mallory' }],
        ['DELETE', `${path}/tags/team`],
        ['GET', `${path}/aliases/prod`],
        ['POST', `${path}/aliases`, { alias: 'prod', version: 1 }],
        ['DELETE', `${path}/aliases/prod`],
        ['POST', `${path}/versions`, gitVersion],
      );
    // Controls: MLflow itself answers the reads.
    for (const path of ALICE) for (const read of ['', '/versions/1', '/aliases/prod']) expect((await direct('GET', `${SKILLS}${path}${read}`)).status).toBe(200);
    for (const [method, path, body] of attacks)
      for (const base of [SKILLS, AJAX_SKILLS]) refused(await mallory(method, `${base}${path}`, body === undefined ? {} : { body }));
    expect(await aliceSkills()).toBe(aliceBefore);
  });

  it("an organization names another Skill: mallory's `@mal/<name>` is hers, alice's `<name>` and `@acme/<name>` are not", async () => {
    // Control: mallory's own Skill of alice's name answers as hers, in her organization.
    const mine = await mallory('GET', `${SKILLS}/@mal/${VIC}`);
    expect(mine.status).toBe(200);
    expect(mine.json).toMatchObject({ name: VIC, organization: 'mal' });
    for (const path of [`/${VIC}`, `/@acme/${VIC}`]) refused(await mallory('GET', `${SKILLS}${path}`));
    // Encoded `@` and `/` are the same paths once decoded (as MLflow decodes them): decided on alice's.
    for (const path of [`/%40acme/${VIC}`, `/%40acme%2F${VIC}`, `/%40acme%2f${VIC}`]) {
      refused(await mallory('GET', `${SKILLS}${path}`, { verbatim: true }));
      refused(await mallory('DELETE', `${SKILLS}${path}`, { verbatim: true }));
    }
    const encodedMine = await mallory('GET', `${SKILLS}/%40mal%2F${VIC}`, { verbatim: true });
    expect(encodedMine.json).toMatchObject({ name: VIC, organization: 'mal' });
    // The organization in a body is not the path's: MLflow refuses a registration whose metadata names
    // another Skill, and an update takes no organization; nothing lands in alice's Skills.
    for (const body of [{ ...gitVersion, name: VIC, organization: 'acme' }, { ...gitVersion, organization: 'acme' }, { ...gitVersion, organization: '' }, { ...gitVersion, name: MAL }])
      expect((await mallory('POST', `${SKILLS}/@mal/${VIC}/versions`, { body })).status).toBe(400);
    expect((await mallory('PATCH', `${SKILLS}/${MAL}`, { body: { organization: 'acme', description: 'x' } })).status).toBe(400);
    expect(await aliceSkills()).toBe(aliceBefore);
  });

  it('spellings MLflow would not take are refused before it sees them: case, empty or doubled @, double encoding', async () => {
    for (const path of [`/${VIC.toUpperCase()}`, `/@ACME/${VIC}`, `/@Acme/${VIC}`, `/@acme/${VIC.toUpperCase()}`, `/@/${VIC}`, `/@@acme/${VIC}`, `/@acme`, `/${VIC}%20`])
      refused(await mallory('GET', `${SKILLS}${path}`, { verbatim: true }), 400);
    // Decoded twice, `%2540` would be `@`: flowgate decodes once and refuses what is still encoded.
    refused(await mallory('GET', `${SKILLS}/%2540acme/${VIC}`, { verbatim: true }), 400);
    refused(await mallory('GET', `${SKILLS}/%2540acme%252F${VIC}`, { verbatim: true }), 400);
    // Case variants in a bulk registration's body.
    refused(await mallory('POST', `${SKILLS}/bulk-register`, { body: { organization: 'ACME', skills: [{ name: VIC, ...gitVersion }] } }), 400);
    refused(await mallory('POST', `${SKILLS}/bulk-register`, { body: { organization: 'acme', skills: [{ name: VIC.toUpperCase(), ...gitVersion }] } }), 400);
    expect(await aliceSkills()).toBe(aliceBefore);
  });

  it('unknown routes under /skills are refused, not forwarded', async () => {
    for (const [method, path] of [
      ['PUT', `/${VIC}`],
      ['POST', `/${VIC}`],
      ['GET', `/${VIC}/tags`],
      ['GET', `/${VIC}/unknown`],
      ['GET', `/@acme/${VIC}/tags`],
      ['GET', `/${VIC}/`],
      ['POST', `/@acme/${VIC}/versions/1/aliases`],
      ['GET', `/bulk-register/versions/1/extra`],
    ] as const)
      refused(await mallory(method, `${SKILLS}${path}`));
  });

  it('searches answer only her own Skills, whatever the filter or identities asked for (both twins)', async () => {
    for (const base of [SKILLS, AJAX_SKILLS])
      for (const query of [{}, { filter_string: `name = '${VIC}'` }, { include_skill_identities: [VIC, `@acme/${VIC}`, `@mal/${VIC}`] }, { max_results: '1' }] as Array<Record<string, string | string[]>>) {
        const r = await mallory('GET', base, { query });
        expect(r.status, r.text).toBe(200);
        const ids = (r.json.skills as Array<{ name: string; organization: string }>).map((s) => `${s.organization}/${s.name}`);
        expect(ids.every((id) => id === `/${MAL}` || id === `mal/${VIC}`), JSON.stringify(ids)).toBe(true);
        if (query.max_results === undefined) expect(ids.length).toBeGreaterThan(0);
      }
    // Control: MLflow itself answers alice's to the same search.
    expect((await direct('GET', SKILLS, { query: { filter_string: `name = '${VIC}'` } })).json.skills.length).toBe(3);
    // A page token MLflow issued is not one flowgate takes.
    const mlflowToken = (await direct('GET', SKILLS, { query: { max_results: '1' } })).json.next_page_token as string;
    refused(await mallory('GET', SKILLS, { query: { page_token: mlflowToken } }), 400);
  });

  it("making a Skill of alice's name gives mallory nothing; registering into hers is refused, also inside a bulk registration", async () => {
    for (const body of [{ name: VIC }, { name: VIC, organization: 'acme' }]) {
      const r = await mallory('POST', SKILLS, { body });
      expect(r.json?.error_code, r.text).toBe('RESOURCE_ALREADY_EXISTS');
    }
    for (const path of ALICE) refused(await mallory('POST', `${SKILLS}${path}/versions`, { body: gitVersion }));
    const fresh = `new-${tag}`;
    refused(await mallory('POST', `${SKILLS}/bulk-register`, { body: { organization: 'acme', skills: [{ name: fresh, ...gitVersion, subpath: 'a' }, { name: VIC, ...gitVersion, subpath: 'b' }] } }));
    // Nothing was made for the refused batch.
    expect((await direct('GET', `${SKILLS}/@acme/${fresh}`)).status).toBe(404);
    for (const id of [VIC, `@acme/${VIC}`]) expect(await malloryHolds(id)).toBe(404);
    expect(await malloryHolds(`@mal/${VIC}`)).toBe(200);
    expect(await aliceSkills()).toBe(aliceBefore);
  });

  it("grant routes on alice's Skills are refused in every spelling of their id; a spelling no Skill has is a 400", async () => {
    for (const id of [VIC, `@acme/${VIC}`, encodeURIComponent(`@acme/${VIC}`)]) {
      refused(await mallory('POST', `${V2}/permissions/users/mallory/skills/${id}`, { body: { permission: 'MANAGE' } }));
      refused(await mallory('GET', `${V2}/permissions/skills/${id}/users`));
      refused(await mallory('GET', `${V2}/permissions/ui/skills/${id}/grants`));
    }
    refused(await mallory('POST', `${V2}/permissions/users/mallory/skills/@mal/${VIC}`, { body: { permission: 'USE' } }), 400);
    refused(await admin('POST', `${V2}/permissions/users/mallory/skills/${VIC.toUpperCase()}`, { body: { permission: 'READ' } }), 400);
    refused(await admin('POST', `${V2}/permissions/users/mallory/skills/${encodeURIComponent(`@acme/${VIC.toUpperCase()}`)}`, { body: { permission: 'READ' } }), 400);
    refused(await admin('POST', `${V2}/permissions/users/mallory/skills/${encodeURIComponent('@/x')}`, { body: { permission: 'READ' } }), 400);
    // Without its `@`, an organization's Skill is no Skill id: the encoded `/` keeps it one segment, a name no Skill may have.
    expect((await admin('POST', `${V2}/permissions/users/mallory/skills/${encodeURIComponent(`acme/${VIC}`)}`, { body: { permission: 'READ' } })).status).toBe(400);
    expect((await admin('POST', `${V2}/permissions/users/mallory/skills/acme/${VIC}`, { body: { permission: 'READ' } })).status).toBe(404);
    for (const id of [VIC, `@acme/${VIC}`]) expect(await malloryHolds(id)).toBe(404);
  });

  it("a Skill's uploaded content is not reachable through the artifact proxy", async () => {
    for (const path of [`skills/${VIC}`, `skills/@acme/${VIC}`, 'skills'])
      expect([400, 403], path).toContain((await mallory('GET', `/api/2.0/mlflow-artifacts/artifacts/${path}`)).status);
  });

  it("alice's Skills are as they were, and mallory was answered none of them", async () => {
    expect(await aliceSkills()).toBe(aliceBefore);
    expect(malloryExchanges.length).toBeGreaterThan(100);
    // alice's Skills carry her description and tag; mallory's carry neither.
    for (const e of malloryExchanges) expect(e.text, `${e.method} ${e.url}`).not.toMatch(/"description": ?"alice"|"team": ?"alice"/);
    expect(exchanges.some((e) => /"description": ?"alice"/.test(e.text))).toBe(true);
  });
});
