import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importStore } from '../../src/commands/import.js';
import { applyPlan } from '../../src/import/apply-plan.js';
import type { ImportPlan } from '../../src/import/plan.js';
import { createLegacyPasswordRepo } from '../../src/tokens/legacy-password-repo.js';
import { createLegacyPasswordVerifier } from '../../src/tokens/legacy-passwords.js';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { mlflowVenv, runPython } from '../helpers/mlflow-server.js';

/**
 * Passwords imported from MLflow basic-auth (issue 37), from an attacker's side: a wrong password, a
 * password of another imported user, a hash flowgate cannot check, a password after its user minted
 * a token, a password with legacy passwords turned off. Each is a 401 and nothing else; more checks at
 * once than flowgate runs are a 503 to retry, so a flood of wrong passwords never calls a right one wrong.
 */
const CURRENT = '/api/2.0/mlflow/users/current';
const PW = { ana: 'ana-old-password-1', ben: 'ben-old-password-2', cy: 'cy-old-password-3', dee: 'dee-old-password-4' };

let hashes: Record<string, string>;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let fg: TestFlowgate;

const get = (auth: string) => fetch(fg.url + CURRENT, { headers: { Authorization: auth } });
const planWith = (users: ImportPlan['users']): ImportPlan => ({ source: 'mlflow-basic-auth (test)', users, groups: [], grants: [], patterns: [], notImported: [], notes: [] });

beforeAll(async () => {
  const venv = await mlflowVenv();
  const r = await runPython(
    venv,
    `import json\nfrom werkzeug.security import generate_password_hash as g\nprint(json.dumps({"ana": g(${JSON.stringify(PW.ana)}), "ben": g(${JSON.stringify(PW.ben)}, method="pbkdf2:sha256:600000"), "dee": g(${JSON.stringify(PW.dee)}, method="pbkdf2:sha256:600000")}))`,
  );
  expect(r.code, r.stderr).toBe(0);
  hashes = JSON.parse(r.stdout) as Record<string, string>;
  upstream = await startStubUpstream();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  await applyPlan(
    planWith([
      { username: 'ana', isAdmin: false, isServiceAccount: false, passwordHash: hashes.ana! },
      { username: 'ben', isAdmin: false, isServiceAccount: false, passwordHash: hashes.ben! },
      // A hash of a kind flowgate does not check (werkzeug's removed plain method): refused, never compared as text.
      { username: 'cy', isAdmin: false, isServiceAccount: false, passwordHash: `plain$$${PW.cy}` },
      // Signs in only during the flood below: her right password is not remembered before it.
      { username: 'dee', isAdmin: false, isServiceAccount: false, passwordHash: hashes.dee! },
      // ana's password under other names: each loses it another way below.
      ...['eve', 'fay', 'gus'].map((username) => ({ username, isAdmin: false, isServiceAccount: false, passwordHash: hashes.ana! })),
    ]),
    importStore(fg.store.sql, 'admin'),
    { actor: 'test', dryRun: false },
  );
}, 900_000);

afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

describe('imported basic-auth passwords', () => {
  it('the right password works, for scrypt and pbkdf2 hashes alike', async () => {
    expect((await get(basic('ana', PW.ana))).status).toBe(200);
    expect((await get(basic('ben', PW.ben))).status).toBe(200);
    expect(((await (await get(basic('ana', PW.ana))).json()) as { user: { username: string } }).user.username).toBe('ana');
  });

  it('a wrong password, another user\'s password, or a name that is not the hash\'s owner: 401', async () => {
    for (const auth of [basic('ana', 'ana-old-password-X'), basic('ana', PW.ben), basic('ben', PW.ana), basic('nobody', PW.ana), basic('ana', ''), basic('ANA', PW.ana)]) {
      const r = await get(auth);
      expect(r.status, auth).toBe(401);
      expect(((await r.json()) as { error_code: string }).error_code).toBe('UNAUTHENTICATED');
    }
  });

  it('a remembered success belongs to the exact credentials: another spelling of them is checked afresh, a wrong one stays refused', async () => {
    expect((await get(basic('ana', PW.ana))).status).toBe(200);
    expect((await get(basic('ana', `${PW.ana} `))).status).toBe(401);
    expect((await get(basic('ana', PW.ana.slice(0, -1)))).status).toBe(401);
  });

  it('a hash of a kind flowgate cannot check refuses every password, the stored text included', async () => {
    for (const attempt of [PW.cy, `plain$$${PW.cy}`, '']) expect((await get(basic('cy', attempt))).status).toBe(401);
    expect(fg.logs.join('')).toContain('imported password hash of a kind flowgate cannot check');
    expect(fg.logs.join('')).not.toContain(PW.cy);
  });

  it('never logs a password or a hash', () => {
    const logs = fg.logs.join('');
    for (const p of Object.values(PW)) expect(logs).not.toContain(p);
    expect(logs).not.toContain(hashes.ana!.split('$')[2]!);
    expect(logs).not.toContain(hashes.ben!.split('$')[1]!);
  });

  it('once the user mints a token, the old password stops at once and its hash is gone', async () => {
    expect((await get(basic('ben', PW.ben))).status).toBe(200);
    const minted = await fetch(`${fg.url}/api/2.0/mlflow/permissions/users/access-token`, {
      method: 'PATCH',
      headers: { Authorization: adminAuth(), 'Content-Type': 'application/json' },
      body: JSON.stringify({ username: 'ben' }),
    });
    expect(minted.status).toBe(200);
    const { token } = (await minted.json()) as { token: string };
    expect((await get(basic('ben', PW.ben))).status).toBe(401);
    expect((await get(basic('ben', token))).status).toBe(200);
    expect(await fg.store.sql.get("SELECT 1 AS one FROM legacy_passwords lp JOIN users u ON u.id = lp.user_id WHERE u.username = 'ben'")).toBeUndefined();
  });

  it('goes with every other credential: revoked with all tokens, by a disable (enabling gives nothing back), by a link to the identity provider', async () => {
    const admin = (method: string, path: string, body?: unknown) =>
      fetch(`${fg.url}/api/2.0/mlflow/permissions/users/${path}`, { method, headers: { Authorization: adminAuth(), 'Content-Type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    const hashLeft = async (username: string) => (await fg.store.sql.get('SELECT 1 AS one FROM legacy_passwords lp JOIN users u ON u.id = lp.user_id WHERE u.username = ?', [username])) !== undefined;
    for (const u of ['eve', 'fay', 'gus']) expect((await get(basic(u, PW.ana))).status, u).toBe(200);

    expect((await admin('DELETE', 'eve/access-token')).status).toBe(200);
    expect((await get(basic('eve', PW.ana))).status).toBe(401);
    expect(await hashLeft('eve')).toBe(false);
    const audited = (await fg.store.sql.get("SELECT old_value FROM audit_log WHERE action = 'token.revoke' AND target = 'user:eve'")) as { old_value: string };
    expect(JSON.parse(audited.old_value)).toMatchObject({ imported_password: true });

    expect((await admin('POST', 'fay/disable')).status).toBe(200);
    expect((await get(basic('fay', PW.ana))).status).toBe(401);
    expect((await admin('POST', 'fay/enable')).status).toBe(200);
    expect((await get(basic('fay', PW.ana))).status).toBe(401);
    expect(await hashLeft('fay')).toBe(false);

    expect((await admin('PATCH', 'gus', { sign_in: 'oidc' })).status).toBe(200);
    expect((await get(basic('gus', PW.ana))).status).toBe(401);
    expect((await admin('PATCH', 'gus', { sign_in: 'local' })).status).toBe(200);
    expect((await get(basic('gus', PW.ana))).status).toBe(401);
    expect(await hashLeft('gus')).toBe(false);
  });

  it('with FLOWGATE_LEGACY_PASSWORDS=off no imported password works', async () => {
    const off = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_LEGACY_PASSWORDS: 'off' }, fg.dir);
    try {
      const r = await fetch(off.url + CURRENT, { headers: { Authorization: basic('ana', PW.ana) } });
      expect(r.status).toBe(401);
    } finally {
      await off.close();
    }
  });
});

describe('the legacy password check under load', () => {
  it('refuses beyond its concurrent hash checks instead of queueing a slow KDF per attempt, as busy (503, Retry-After), not as a wrong password', async () => {
    const repo = createLegacyPasswordRepo(fg.store.sql);
    const verifier = createLegacyPasswordVerifier({ repo, cacheSize: 16, maxConcurrent: 1 });
    const encoded = (pw: string) => Buffer.from(`ana:${pw}`).toString('base64');
    const answers = await Promise.allSettled([verifier.verify(encoded(PW.ana)), verifier.verify(encoded(PW.ana))]);
    // One check ran and succeeded; the one beyond the limit was refused, not run, and not called wrong.
    expect(answers.filter((a) => a.status === 'fulfilled' && a.value !== undefined)).toHaveLength(1);
    const refused = answers.find((a) => a.status === 'rejected') as PromiseRejectedResult | undefined;
    expect(refused?.reason).toMatchObject({ code: 'TEMPORARILY_UNAVAILABLE', status: 503, headers: { 'Retry-After': '1' } });
    expect(verifier.cached(encoded(PW.ana))).toMatchObject({ username: 'ana' });
    expect(verifier.cached(encoded('wrong'))).toBeUndefined();
  });

  it('through flowgate, a flood of wrong passwords makes the right one wait (503, Retry-After), never wrong (401)', async () => {
    // Each wrong password is a full KDF check, and dee's right one was never remembered.
    const wrong = Array.from({ length: 12 }, (_, i) => get(basic('dee', `wrong-${i}`)));
    const right = get(basic('dee', PW.dee));
    const answers = await Promise.all([...wrong, right]);
    const rightAnswer = answers.at(-1)!;
    expect([200, 503]).toContain(rightAnswer.status);
    const statuses = answers.slice(0, -1).map((r) => r.status);
    expect(statuses.every((s) => s === 401 || s === 503), statuses.join(',')).toBe(true);
    const busy = answers.filter((r) => r.status === 503);
    expect(busy.length, 'more checks at once than the limit (4) were busy').toBeGreaterThan(0);
    for (const r of busy) {
      expect(r.headers.get('retry-after')).toBe('1');
      expect(await r.json()).toMatchObject({ error_code: 'TEMPORARILY_UNAVAILABLE' });
    }
    // Once the flood is over, the right password works.
    expect((await get(basic('dee', PW.dee))).status).toBe(200);
  });

  it('compares digests in constant time (node:crypto timingSafeEqual), whatever the password', async () => {
    const source = await import('node:fs/promises').then((fs) => fs.readFile(new URL('../../src/tokens/werkzeug-hash.ts', import.meta.url), 'utf8'));
    expect(source).toMatch(/timingSafeEqual\(computed, hash\.digest\)/);
    expect(source).not.toMatch(/computed\.equals\(|\.toString\('hex'\)\s*===/);
  });
});
