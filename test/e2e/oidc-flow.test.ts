import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startStubUpstream } from '../helpers/flowgate.js';
import {
  afterSignOut,
  CLIENT,
  confirmProviderLogout,
  CookieJar,
  flowgateClientAt,
  freePort,
  HTML,
  loginWithFetch,
  send,
  startOidcFlowgate,
  startOidcProvider,
  type OidcFlowgate,
  type TestProvider,
} from '../helpers/oidc-provider.js';

/**
 * OIDC login end to end with a real OpenID Provider (npm oidc-provider on loopback) and fetch with a
 * cookie jar standing in for the browser; MLflow is a stub here (the browser test uses the real one).
 */
const SESSION = 'flowgate_session';
const IDLE_MIN = 30;
const ABSOLUTE_H = 1;

let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let idp: TestProvider;
let fg: OidcFlowgate;
let fgPort: number;
let base: string;

beforeAll(async () => {
  upstream = await startStubUpstream();
  fgPort = await freePort();
  base = `http://127.0.0.1:${fgPort}`;
  idp = await startOidcProvider({
    ...flowgateClientAt(base),
    accounts: [
      { username: 'alice', name: 'Alice Analyst', roles: ['team-a'] },
      { username: 'bob', name: 'Bob Builder', roles: ['team-a'] },
      { username: 'root', name: 'Root Admin', roles: ['mlflow-admin', 'team-a'] },
      { username: 'eve', name: 'Eve Outsider', roles: ['other-team'] },
      { username: 'team-a-sa', name: 'Pipelines', roles: ['team-a'] },
      { username: 'carol', name: 'Carol', roles: ['team-a'] },
      { username: 'dave', name: 'Dave', roles: ['team-a'] },
    ],
  });
  fg = await startOidcFlowgate(
    {
      FLOWGATE_UPSTREAM_URL: upstream.url,
      FLOWGATE_OIDC_ISSUER_URL: idp.issuer,
      FLOWGATE_OIDC_ADMIN_ROLE: 'mlflow-admin',
      FLOWGATE_OIDC_ALLOWED_ROLES: 'team-a,team-b',
      FLOWGATE_SESSION_IDLE_MINUTES: String(IDLE_MIN),
      FLOWGATE_SESSION_ABSOLUTE_HOURS: String(ABSOLUTE_H),
    },
    fgPort,
  );
});

afterAll(async () => {
  await fg?.close();
  await idp?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

async function login(username: string, returnTo = '/'): Promise<{ jar: CookieJar; location: string | null; status: number }> {
  const jar = new CookieJar();
  const run = await loginWithFetch(jar, `${base}/flowgate/login?return_to=${encodeURIComponent(returnTo)}`, username);
  return { jar, location: run.final.headers.get('location'), status: run.final.status };
}
const current = (jar: CookieJar) =>
  send(jar, `${base}/api/2.0/mlflow/permissions/users/current`, { headers: { accept: 'application/json' } });
const userRow = async (username: string) =>
  (await fg.store.sql.get('SELECT * FROM users WHERE username = ?', [username])) as { is_admin: number; display_name: string } | undefined;
const groupsOf = async (jar: CookieJar) => ((await (await current(jar)).json()) as { user: { groups: string[] } }).user.groups;
const sessionCount = async () => ((await fg.store.sql.get('SELECT count(*) AS n FROM sessions')) as { n: number }).n;

/** The sign-out page's own form: a POST from flowgate's origin (a GET only shows that form). */
const postLogout = (jar: CookieJar) => send(jar, `${base}/flowgate/logout`, { method: 'POST', headers: { accept: HTML, origin: base } });

async function logout(jar: CookieJar): Promise<{ status: number; location: string }> {
  const res = await postLogout(jar);
  const location = (await afterSignOut(res, base)).href;
  if (location.startsWith(idp.issuer)) await confirmProviderLogout(jar, location);
  return { status: res.status, location };
}

describe('browser or program without credentials', () => {
  it('redirects a browser navigation to login, keeping where it was going', async () => {
    const res = await send(new CookieJar(), `${base}/experiments?view=list`, { headers: { accept: HTML } });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`/flowgate/login?return_to=${encodeURIComponent('/experiments?view=list')}`);
  });

  it('sends a browser opening the MLflow UI (a public page) to login; programs still get the page', async () => {
    const page = await send(new CookieJar(), `${base}/`, { headers: { accept: HTML } });
    expect(page.status).toBe(302);
    expect(page.headers.get('location')).toBe('/flowgate/login?return_to=%2F');
    const program = await send(new CookieJar(), `${base}/`, { headers: { accept: 'application/json' } });
    expect(program.status).toBe(200);
  });

  it('answers API calls, non-GET and non-HTML requests with 401 JSON', async () => {
    const jar = new CookieJar();
    for (const [path, init] of [
      ['/api/2.0/mlflow/experiments/search', { headers: { accept: HTML } }],
      ['/ajax-api/2.0/mlflow/experiments/search', { headers: { accept: 'application/json, text/plain, */*' } }],
      ['/experiments', { headers: { accept: 'application/json' } }],
      ['/', { method: 'POST', headers: { accept: HTML } }],
      ['/api/2.0/mlflow/permissions/users/current', { headers: { accept: HTML } }],
    ] as const) {
      const res = await send(jar, base + path, init);
      expect(res.status, path).toBe(401);
      expect(await res.json()).toMatchObject({ error_code: 'UNAUTHENTICATED' });
    }
  });

  it('keeps refusing a browser that sends wrong Basic credentials (no redirect)', async () => {
    const res = await send(new CookieJar(), `${base}/`, { headers: { accept: HTML, authorization: basic('admin', 'wrong') } });
    expect(res.status).toBe(401);
  });
});

describe('login', () => {
  it('after a real sign-in, returns to no other host, however the return address hides one', async () => {
    for (const returnTo of ['/%3F/..//evil.example/phish', '/%23/..//evil.example', '//evil.example/']) {
      const { location, status } = await login('alice', returnTo);
      expect(status, returnTo).toBe(302);
      expect(location, returnTo).toBe('/');
    }
  });

  it('creates the user with groups from the role claim, sets a session cookie and returns to the page', async () => {
    const jar = new CookieJar();
    const run = await loginWithFetch(jar, `${base}/flowgate/login?return_to=${encodeURIComponent('/experiments?x=1')}`, 'alice');
    expect(run.final.status).toBe(302);
    expect(run.final.headers.get('location')).toBe('/experiments?x=1');
    const setCookie = run.final.headers.getSetCookie().find((c) => c.startsWith(`${SESSION}=`))!;
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Lax/i);
    expect(setCookie).toMatch(/Path=\//);
    expect(setCookie).not.toMatch(/Secure/i);
    const id = jar.get(SESSION)!;
    expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Only the hash is stored.
    expect(JSON.stringify((await fg.store.sql.all('SELECT * FROM sessions')))).not.toContain(id);

    const me = await current(jar);
    expect(me.status).toBe(200);
    expect(((await me.json()) as { user: unknown }).user).toMatchObject({ username: 'alice', display_name: 'Alice Analyst', is_admin: false, groups: ['team-a'] });

    const audit = (await fg.store.sql.all("SELECT action, target FROM audit_log WHERE actor = 'oidc'"));
    expect(audit).toEqual(
      expect.arrayContaining([
        { action: 'user.create', target: 'user:alice' },
        { action: 'group.create', target: 'group:team-a' },
        { action: 'group.memberships', target: 'user:alice' },
      ]),
    );
  });

  it('gives a signed-in user what their identity-provider groups are granted, and nothing else', async () => {
    const { jar } = await login('alice');
    const get = () => send(jar, `${base}/ajax-api/2.0/mlflow/experiments/get?experiment_id=1`, { headers: { accept: 'application/json' } });
    expect((await get()).status).toBe(403);
    const grant = await fetch(`${base}/api/2.0/mlflow/permissions/groups/team-a/experiments/1`, {
      method: 'POST',
      headers: { authorization: adminAuth(), 'content-type': 'application/json' },
      body: JSON.stringify({ permission: 'READ' }),
    });
    expect(grant.status).toBeLessThan(300);
    expect((await get()).status).toBe(200);
    const other = await send(jar, `${base}/ajax-api/2.0/mlflow/experiments/get?experiment_id=2`, { headers: { accept: 'application/json' } });
    expect(other.status).toBe(403);
  });

  it('makes a holder of the admin role an admin, who reaches MLflow', async () => {
    const { jar } = await login('root');
    expect((await userRow('root'))!.is_admin).toBe(1);
    const seen = upstream.seen.length;
    const res = await send(jar, `${base}/ajax-api/2.0/mlflow/experiments/search`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(200);
    expect(upstream.seen.length).toBe(seen + 1);
    expect(String(upstream.seen.at(-1)!.headers.cookie ?? '')).not.toMatch(/flowgate_/);
  });

  it('refuses a user without an allowed role with a clear 403 page and creates nothing', async () => {
    const { status } = await login('eve');
    expect(status).toBe(403);
    const jar = new CookieJar();
    const run = await loginWithFetch(jar, `${base}/flowgate/login`, 'eve');
    expect(run.final.headers.get('content-type')).toMatch(/text\/html/);
    expect(await run.final.text()).toContain('Access not granted');
    expect(jar.get(SESSION)).toBeUndefined();
    expect((await userRow('eve'))).toBeUndefined();
  });

  it('refuses a service account with a clear page', async () => {
    const created = await fetch(`${base}/api/2.0/mlflow/users/create`, {
      method: 'POST',
      headers: { authorization: adminAuth(), 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'team-a-sa', display_name: 'SA', is_admin: false, is_service_account: true }),
    });
    expect(created.status).toBe(201);
    const jar = new CookieJar();
    const run = await loginWithFetch(jar, `${base}/flowgate/login`, 'team-a-sa');
    expect(run.final.status).toBe(403);
    expect(await run.final.text()).toContain('Service accounts cannot sign in');
    expect(jar.get(SESSION)).toBeUndefined();
    const row = (await fg.store.sql.get("SELECT count(*) AS n FROM group_members m JOIN users u ON u.id = m.user_id WHERE u.username = 'team-a-sa'")) as { n: number };
    expect(row.n).toBe(0);
  });
});

describe('login response checks', () => {
  it('uses state once: a replayed callback is refused and creates no session', async () => {
    const jar = new CookieJar();
    const run = await loginWithFetch(jar, `${base}/flowgate/login`, 'bob');
    expect(run.final.status).toBe(302);
    const before = (await sessionCount());
    const replay = await send(jar, run.callbackUrl!, { headers: { accept: HTML } });
    expect(replay.status).toBe(400);
    expect(await replay.text()).toContain('already used');
    expect((await sessionCount())).toBe(before);
  });

  it('refuses an ID token whose nonce is not the one sent', async () => {
    const jar = new CookieJar();
    const run = await loginWithFetch(jar, `${base}/flowgate/login`, 'bob', {
      tamper: (u) => {
        u.searchParams.set('nonce', 'attacker-chosen-nonce-0123456789');
        return u;
      },
    });
    expect(run.final.status).toBe(400);
    expect(await run.final.text()).toContain('Sign-in failed');
    expect(jar.get(SESSION)).toBeUndefined();
  });

  it('refuses a code issued for another PKCE challenge', async () => {
    const jar = new CookieJar();
    const run = await loginWithFetch(jar, `${base}/flowgate/login`, 'bob', {
      tamper: (u) => {
        u.searchParams.set('code_challenge', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
        return u;
      },
    });
    expect(run.final.status).toBe(400);
    expect(jar.get(SESSION)).toBeUndefined();
  });

  it('refuses a callback delivered to a browser that did not start the login (login CSRF)', async () => {
    const victim = new CookieJar();
    const attacker = new CookieJar();
    const run = await loginWithFetch(attacker, `${base}/flowgate/login`, 'bob', { stopBeforeCallback: true });
    const res = await send(victim, run.callbackUrl!, { headers: { accept: HTML } });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('not started in this browser');
    expect(victim.get(SESSION)).toBeUndefined();
  });

  it('refuses a callback without state or with an unknown state', async () => {
    for (const q of ['', '?code=x', '?code=x&state=unknown-state']) {
      const res = await send(new CookieJar(), `${base}/flowgate/callback${q}`, { headers: { accept: HTML } });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/text\/html/);
    }
  });
});

describe('return targets', () => {
  it.each([
    '//evil.example',
    '/\\evil.example',
    '/\t/evil.example',
    '/\r\n/evil.example',
    'https://evil.example/',
    '/%2F%2Fevil.example',
    'http:/evil.example',
    '/flowgate/logout',
  ])('sends %j back to the base path', async (target) => {
    const { location, status } = await login('bob', target);
    expect(status).toBe(302);
    expect(location).toBe('/');
  });
});

describe('sessions', () => {
  it('treats a tampered or unknown session cookie as no session', async () => {
    const { jar } = await login('carol');
    const id = jar.get(SESSION)!;
    for (const bad of [id.slice(0, -1) + (id.endsWith('A') ? 'B' : 'A'), 'x'.repeat(43), 'not-a-session', '']) {
      const j = new CookieJar();
      j.set(SESSION, bad);
      const api = await current(j);
      expect(api.status).toBe(401);
      const page = await send(j, `${base}/`, { headers: { accept: HTML } });
      expect(page.status).toBe(302);
      expect(page.headers.get('location')).toMatch(/^\/flowgate\/login\?return_to=/);
    }
  });

  it('expires after the idle lifetime', async () => {
    const { jar } = await login('carol');
    expect((await current(jar)).status).toBe(200);
    fg.advance((IDLE_MIN - 1) * 60_000);
    expect((await current(jar)).status).toBe(200);
    fg.advance((IDLE_MIN + 1) * 60_000);
    expect((await current(jar)).status).toBe(401);
  });

  it('expires after the absolute lifetime even when in use', async () => {
    const { jar } = await login('carol');
    const step = (IDLE_MIN - 5) * 60_000;
    let elapsed = 0;
    while (elapsed + step < ABSOLUTE_H * 3_600_000) {
      fg.advance(step);
      elapsed += step;
      expect((await current(jar)).status).toBe(200);
    }
    fg.advance(step);
    expect((await current(jar)).status).toBe(401);
  });

  it('logout destroys the session and signs out at the provider too', async () => {
    const { jar } = await login('dave');
    const id = jar.get(SESSION)!;
    const storedTokens = async () =>
      ((await fg.store.sql.get("SELECT count(*) AS n FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.username = 'dave' AND s.id_token IS NOT NULL")) as { n: number }).n;
    const before = await storedTokens();
    expect(before).toBeGreaterThanOrEqual(1);
    // A GET (a link, an image on another site) only shows the sign-out form.
    const page = await send(jar, `${base}/flowgate/logout`, { headers: { accept: HTML } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<form method="post" action="/flowgate/logout">');
    expect(await storedTokens()).toBe(before);
    const res = await postLogout(jar);
    expect(res.status).toBe(200);
    expect(res.headers.get('set-cookie')).toMatch(/^flowgate_session=;/);
    expect(await storedTokens()).toBe(before - 1);
    const location = await afterSignOut(res, base);
    expect(location.origin).toBe(idp.issuer);
    expect(location.searchParams.get('post_logout_redirect_uri')).toBe(`${base}/flowgate/logged-out`);
    // The ID token of this login goes back as the hint (providers such as Keycloak then skip their confirmation).
    const hint = location.searchParams.get('id_token_hint');
    expect(hint).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const payload = JSON.parse(Buffer.from(hint!.split('.')[1]!, 'base64url').toString()) as { sub: string; aud: string | string[]; iss: string };
    expect(payload.sub).toBe('dave');
    expect(payload.iss).toBe(idp.issuer);
    expect([payload.aud].flat()).toContain(CLIENT.id);
    expect(((await fg.store.sql.get('SELECT count(*) AS n FROM sessions WHERE id_token = ?', [hint])) as { n: number }).n).toBe(0);
    const done = await confirmProviderLogout(jar, location.href);
    expect(done.finalUrl).toBe(`${base}/flowgate/logged-out`);
    expect(await done.final.text()).toContain('You are signed out');
    const old = new CookieJar();
    old.set(SESSION, id);
    expect((await current(old)).status).toBe(401);
    // The provider session is gone too: the next login asks for credentials again.
    const again = await send(jar, `${base}/flowgate/login`, { headers: { accept: HTML } });
    const atProvider = await send(jar, again.headers.get('location')!, { headers: { accept: HTML } });
    const interaction = await send(jar, new URL(atProvider.headers.get('location')!, idp.issuer).href, { headers: { accept: HTML } });
    expect(await interaction.text()).toContain('name="login"');
  });

  it('an admin can end all sessions of a user', async () => {
    const a = await login('dave');
    const b = await login('dave');
    const res = await fetch(`${base}/api/2.0/mlflow/permissions/users/dave/sessions`, {
      method: 'DELETE',
      headers: { authorization: adminAuth() },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { ended: number }).ended).toBeGreaterThanOrEqual(2);
    expect((await current(a.jar)).status).toBe(401);
    expect((await current(b.jar)).status).toBe(401);
    const audit = (await fg.store.sql.get("SELECT actor FROM audit_log WHERE action = 'session.end_all' AND target = 'user:dave'"));
    expect(audit).toEqual({ actor: 'admin' });
  });

  it('purges expired sessions from the store', async () => {
    await login('dave');
    fg.advance(2 * ABSOLUTE_H * 3_600_000);
    const fresh = await fg.restart();
    fg = fresh;
    expect((await sessionCount())).toBe(0);
  });
});

describe('roles are read at login', () => {
  it('applies a role added at the provider only after the user signs in again', async () => {
    const { jar } = await login('bob');
    expect(await groupsOf(jar)).toEqual(['team-a']);
    idp.accounts.get('bob')!.roles.push('team-b');
    expect(await groupsOf(jar)).toEqual(['team-a']);
    await logout(jar);
    const again = await login('bob');
    expect(await groupsOf(again.jar)).toEqual(['team-a', 'team-b']);
    const change = (await fg.store.sql.get("SELECT old_value, new_value FROM audit_log WHERE actor = 'oidc' AND action = 'group.memberships' AND target = 'user:bob' ORDER BY id DESC")) as { old_value: string; new_value: string };
    expect(JSON.parse(change.old_value)).toEqual({ groups: ['team-a'] });
    expect(JSON.parse(change.new_value)).toEqual({ groups: ['team-a', 'team-b'] });
    // Removing a role removes the membership at the next login.
    idp.accounts.get('bob')!.roles = ['team-b'];
    const third = await login('bob');
    expect(await groupsOf(third.jar)).toEqual(['team-b']);
  });

  it('removes admin rights when the admin role is gone', async () => {
    await login('root');
    expect((await userRow('root'))!.is_admin).toBe(1);
    idp.accounts.get('root')!.roles = ['team-a'];
    const { jar } = await login('root');
    expect((await userRow('root'))!.is_admin).toBe(0);
    const res = await send(jar, `${base}/ajax-api/2.0/mlflow/experiments/get?experiment_id=999`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(403);
    idp.accounts.get('root')!.roles = ['mlflow-admin', 'team-a'];
  });
});

describe('CSRF on session-authenticated state changes', () => {
  const create = (jar: CookieJar, headers: Record<string, string>) =>
    send(jar, `${base}/ajax-api/2.0/mlflow/experiments/create`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ name: 'x' }),
    });

  it('refuses a cross-origin POST with a session cookie (403 JSON) and accepts a same-origin one', async () => {
    const { jar } = await login('root');
    for (const headers of [{ origin: 'http://evil.example' } as Record<string, string>, { origin: 'null' }, {}, { referer: 'http://evil.example/page' }, { origin: `http://localhost:${fgPort}` }]) {
      const res = await create(jar, headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(await res.json()).toMatchObject({ error_code: 'PERMISSION_DENIED' });
    }
    expect((await create(jar, { origin: base })).status).toBe(200);
    expect((await create(jar, { referer: `${base}/` })).status).toBe(200);
  });

  it('covers PATCH and DELETE on the admin API too', async () => {
    const { jar } = await login('alice');
    const patch = await send(jar, `${base}/ajax-api/2.0/mlflow/permissions/users/access-token`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', origin: 'http://evil.example' },
      body: '{}',
    });
    expect(patch.status).toBe(403);
    const del = await send(jar, `${base}/api/2.0/mlflow/permissions/users/alice/sessions`, { method: 'DELETE', headers: { origin: 'http://evil.example' } });
    expect(del.status).toBe(403);
    expect((await current(jar)).status).toBe(200);
  });

  it('does not apply to Basic-authenticated requests', async () => {
    const res = await fetch(`${base}/ajax-api/2.0/mlflow/experiments/create`, {
      method: 'POST',
      headers: { authorization: adminAuth(), origin: 'http://evil.example', 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'y' }),
    });
    expect(res.status).toBe(200);
  });
});

describe('create access key', () => {
  it('sends a browser without a session to login first', async () => {
    const res = await send(new CookieJar(), `${base}/flowgate/access-key`, { headers: { accept: HTML } });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`/flowgate/login?return_to=${encodeURIComponent('/flowgate/access-key')}`);
  });

  it('lets a signed-in user mint their own token, which then works with Basic', async () => {
    const { jar } = await login('alice', '/flowgate/access-key');
    const page = await send(jar, `${base}/flowgate/access-key`, { headers: { accept: HTML } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'nonce-");
    expect(await page.text()).toContain('Create access key');
    const res = await send(jar, `${base}/ajax-api/2.0/mlflow/permissions/users/access-token`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', origin: base },
      body: '{}',
    });
    expect(res.status).toBe(200);
    const { token, username } = (await res.json()) as { token: string; username: string };
    expect(username).toBe('alice');
    const viaBasic = await fetch(`${base}/api/2.0/mlflow/permissions/users/current`, { headers: { authorization: basic('alice', token) } });
    expect(viaBasic.status).toBe(200);
    // A session cannot mint a token for someone else.
    const other = await send(jar, `${base}/ajax-api/2.0/mlflow/permissions/users/access-token`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', origin: base },
      body: JSON.stringify({ username: 'root' }),
    });
    expect(other.status).toBe(403);
  });
});

describe('identity provider down', () => {
  it('shows a clear page at login, keeps existing sessions working, and recovers', async () => {
    const { jar } = await login('alice');
    await idp.stop();
    try {
      fg = await fg.restart();
      const res = await send(new CookieJar(), `${base}/flowgate/login`, { headers: { accept: HTML } });
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toMatch(/text\/html/);
      expect(await res.text()).toContain('Sign-in is temporarily unavailable');
      expect((await current(jar)).status).toBe(200);
    } finally {
      await idp.start();
    }
    await new Promise((r) => setTimeout(r, 5_500));
    const after = await login('alice');
    expect(after.status).toBe(302);
  });

  it('a sign-out on a flowgate started while the provider was down still ends the session at the provider', async () => {
    const { jar } = await login('carol');
    await idp.stop();
    try {
      fg = await fg.restart();
    } finally {
      await idp.start();
    }
    // Past the cooldown after the failed discovery at start; nobody has signed in on this flowgate since.
    await new Promise((r) => setTimeout(r, 5_500));
    const res = await postLogout(jar);
    expect(res.status).toBe(200);
    const location = await afterSignOut(res, base);
    expect(location.origin).toBe(idp.issuer);
    expect(location.searchParams.get('id_token_hint')).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    await confirmProviderLogout(jar, location.href);
    // The provider session is gone: the next sign-in in this browser asks for credentials, never silently signs carol in.
    const again = await send(jar, `${base}/flowgate/login`, { headers: { accept: HTML } });
    const atProvider = await send(jar, again.headers.get('location')!, { headers: { accept: HTML } });
    const interaction = await send(jar, new URL(atProvider.headers.get('location')!, idp.issuer).href, { headers: { accept: HTML } });
    expect(await interaction.text()).toContain('name="login"');
  });

  it('answers 502 when the provider goes away between login and callback', async () => {
    const jar = new CookieJar();
    const run = await loginWithFetch(jar, `${base}/flowgate/login`, 'alice', { stopBeforeCallback: true });
    const callback = run.callbackUrl;
    expect(callback).toMatch(/\/flowgate\/callback\?/);
    await idp.stop();
    try {
      const res = await send(jar, callback!, { headers: { accept: HTML } });
      expect(res.status).toBe(502);
      expect(await res.text()).toContain('Sign-in is temporarily unavailable');
    } finally {
      await idp.start();
    }
  });
});

describe('with a Kubernetes bearer issuer configured, a sign-in takes none of its names', () => {
  let k8sIdp: TestProvider;
  let k8sFg: OidcFlowgate;
  let k8sBase = '';
  const keysDir = mkdtempSync(join(tmpdir(), 'flowgate-k8s-keys-'));

  beforeAll(async () => {
    const { publicKey } = await generateKeyPair('RS256');
    writeFileSync(join(keysDir, 'jwks.json'), JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] }));
    const port = await freePort();
    k8sBase = `http://127.0.0.1:${port}`;
    k8sIdp = await startOidcProvider({
      ...flowgateClientAt(k8sBase),
      accounts: [
        { username: 'k8s.team-b.pipelines', name: 'Squatter', roles: ['team-a'] },
        { username: 'kim', name: 'Kim', roles: ['team-a', 'k8s:team-a'] },
      ],
    });
    k8sFg = await startOidcFlowgate(
      {
        FLOWGATE_UPSTREAM_URL: upstream.url,
        FLOWGATE_OIDC_ISSUER_URL: k8sIdp.issuer,
        FLOWGATE_BEARER_ISSUERS: JSON.stringify([{ kind: 'kubernetes', issuer: 'https://kubernetes.default.svc', audience: 'mlflow', jwks_file: join(keysDir, 'jwks.json') }]),
      },
      port,
    );
  });
  afterAll(async () => {
    await k8sFg?.close();
    await k8sIdp?.close();
    if (k8sFg) removeDir(k8sFg.dir);
    removeDir(keysDir);
  });

  it("refuses a service account's name and leaves a namespace's group out", async () => {
    const squat = await loginWithFetch(new CookieJar(), `${k8sBase}/flowgate/login`, 'k8s.team-b.pipelines');
    expect(squat.final.status).toBe(403);
    expect(await k8sFg.store.sql.get("SELECT 1 AS one FROM users WHERE username = 'k8s.team-b.pipelines'")).toBeUndefined();
    const jar = new CookieJar();
    expect((await loginWithFetch(jar, `${k8sBase}/flowgate/login`, 'kim')).final.status).toBe(302);
    const me = (await (await send(jar, `${k8sBase}/api/2.0/mlflow/permissions/users/current`, { headers: { accept: 'application/json' } })).json()) as { user: { groups: string[] } };
    expect(me.user.groups).toEqual(['team-a']);
    expect(await k8sFg.store.sql.get("SELECT 1 AS one FROM groups WHERE name = 'k8s:team-a'")).toBeUndefined();
  });
});
