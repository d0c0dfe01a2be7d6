import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error -- oidc-provider ships no type declarations; the small part used here is typed below.
import ProviderCtor from 'oidc-provider';
import { loadConfig, type Env } from '../../src/config.js';
import { createLogger } from '../../src/logging.js';
import { startFlowgate, type Flowgate } from '../../src/main.js';
import { ADMIN, logCapture } from './flowgate.js';
import { storeSettings } from './test-store.js';

/** A person at the test identity provider; `roles` is sent as `groups` and as Keycloak's `realm_access.roles`. */
export interface TestAccount {
  username: string;
  name: string;
  roles: string[];
  /** The `preferred_username` claim when it is not `username` (which stays the login name and `sub`). */
  preferredUsername?: string;
  /** The `email` claim (scope `email`), with `email_verified` as given (left out when undefined). */
  email?: string;
  emailVerified?: boolean;
}

export const CLIENT = { id: 'flowgate', secret: 'flowgate-test-client-secret-0123456789' };

interface ProviderInstance {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  Grant: new (init: { clientId: string; accountId: string }) => { addOIDCScope(s: string): void; save(): Promise<string> };
  on(event: string, listener: (...args: unknown[]) => void): void;
}
interface GrantFinder {
  find(id: string): Promise<unknown>;
}
const Provider = ProviderCtor as new (issuer: string, config: Record<string, unknown>) => ProviderInstance;

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const a = probe.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

export interface TestProvider {
  readonly issuer: string;
  readonly accounts: Map<string, TestAccount>;
  /** Stops listening (the provider is "down"); `start()` brings it back on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

/** The client's redirect and post-logout URIs for a flowgate served at `base`. */
export const flowgateClientAt = (base: string) => ({
  redirectUris: [`${base}/flowgate/callback`],
  postLogoutRedirectUris: [`${base}/flowgate/logged-out`],
});

/**
 * The npm `oidc-provider` on 127.0.0.1 with one confidential client (PKCE required), its dev
 * login form (any password), consent granted silently, and accounts whose roles are claims.
 * `claimsInIdToken`: put profile and role claims in the ID token (else only userinfo has them).
 */
export async function startOidcProvider(o: {
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  accounts: TestAccount[];
  claimsInIdToken?: boolean;
}): Promise<TestProvider> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const accounts = new Map(o.accounts.map((a) => [a.username, a]));
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT.id,
        client_secret: CLIENT.secret,
        redirect_uris: o.redirectUris,
        post_logout_redirect_uris: o.postLogoutRedirectUris,
        response_types: ['code'],
        grant_types: ['authorization_code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    pkce: { required: () => true },
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600 },
    claims: {
      openid: ['sub'],
      profile: ['name', 'preferred_username'],
      email: ['email', 'email_verified'],
      groups: ['groups'],
      roles: ['realm_access'],
    },
    scopes: ['openid', 'profile', 'email', 'groups', 'roles'],
    conformIdTokenClaims: !o.claimsInIdToken,
    features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
    cookies: { keys: ['test-cookie-key-0123456789abcdef'] },
    findAccount: (_ctx: unknown, id: string) => {
      const a = accounts.get(id);
      if (!a) return undefined;
      return {
        accountId: id,
        claims: () => ({
          sub: id,
          preferred_username: a.preferredUsername ?? a.username,
          name: a.name,
          groups: [...a.roles],
          realm_access: { roles: [...a.roles] },
          ...(a.email === undefined ? {} : { email: a.email }),
          ...(a.emailVerified === undefined ? {} : { email_verified: a.emailVerified }),
        }),
      };
    },
    loadExistingGrant: async (ctx: {
      oidc: { client: { clientId: string }; session: { accountId: string; grantIdFor(c: string): string | undefined }; provider: ProviderInstance & { Grant: GrantFinder } };
    }) => {
      const { client, session, provider: p } = ctx.oidc;
      const existing = session.grantIdFor(client.clientId);
      if (existing) return p.Grant.find(existing);
      const grant = new p.Grant({ clientId: client.clientId, accountId: session.accountId });
      grant.addOIDCScope('openid profile email groups roles');
      await grant.save();
      return grant;
    },
    renderError: (ctx: { type: string; body: string }, out: Record<string, string>) => {
      ctx.type = 'html';
      ctx.body = `<!doctype html><h1>provider error</h1><pre>${Object.entries(out)
        .map(([k, v]) => `${k}: ${String(v).replace(/[<>&]/g, '')}`)
        .join('\n')}</pre>`;
    },
  });
  provider.on('server_error', () => undefined);
  let server: Server | undefined;

  async function start(): Promise<void> {
    const s = createHttpServer(provider.callback());
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => resolve());
    });
    server = s;
  }
  async function stop(): Promise<void> {
    const s = server;
    server = undefined;
    if (!s) return;
    await new Promise<void>((resolve) => {
      s.close(() => resolve());
      s.closeAllConnections();
    });
  }
  await start();
  return { issuer, accounts, start, stop, close: stop };
}

/** A cookie jar good enough for loopback tests: cookies by host (ports shared, as browsers do), paths ignored. */
export class CookieJar {
  private readonly byHost = new Map<string, Map<string, string>>();

  store(url: string, res: Response): void {
    const host = new URL(url).hostname;
    const jar = this.byHost.get(host) ?? new Map<string, string>();
    this.byHost.set(host, jar);
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (/;\s*max-age=0/i.test(line) || /expires=Thu, 01 Jan 1970/i.test(line) || value === '') jar.delete(name);
      else jar.set(name, value);
    }
  }
  header(url: string): string {
    const jar = this.byHost.get(new URL(url).hostname);
    return jar ? [...jar].map(([k, v]) => `${k}=${v}`).join('; ') : '';
  }
  get(name: string, host = '127.0.0.1'): string | undefined {
    return this.byHost.get(host)?.get(name);
  }
  set(name: string, value: string, host = '127.0.0.1'): void {
    const jar = this.byHost.get(host) ?? new Map<string, string>();
    this.byHost.set(host, jar);
    jar.set(name, value);
  }
  delete(name: string, host = '127.0.0.1'): void {
    this.byHost.get(host)?.delete(name);
  }
  clone(): CookieJar {
    const c = new CookieJar();
    for (const [h, m] of this.byHost) c.byHost.set(h, new Map(m));
    return c;
  }
}

export const HTML = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

/** One request with the jar's cookies, never following redirects; stores what comes back. */
export async function send(jar: CookieJar, url: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const cookie = jar.header(url);
  if (cookie) headers.set('cookie', cookie);
  let res: Response;
  try {
    res = await fetch(url, { ...init, headers, redirect: 'manual' });
  } catch (e) {
    // A pooled keep-alive connection to a server that was just restarted: try once on a new one.
    if ((e as { cause?: { code?: string } }).cause?.code !== 'UND_ERR_SOCKET') throw e;
    res = await fetch(url, { ...init, headers, redirect: 'manual' });
  }
  jar.store(url, res);
  return res;
}

export interface LoginRun {
  /** The callback URL the provider sent the browser to (for replay tests), if reached. */
  callbackUrl?: string;
  /** flowgate's answer to the callback (or to whatever stopped the run). */
  final: Response;
  finalUrl: string;
}

/**
 * Drives a browser-like login with fetch: follows redirects from `start`, fills the provider's dev
 * login form for `login`, and stops after flowgate's answer to the callback. `tamper` may rewrite
 * the authorization URL flowgate sent (to test nonce and PKCE checks).
 */
export async function loginWithFetch(
  jar: CookieJar,
  start: string,
  login: string,
  opts: { tamper?: (authUrl: URL) => URL; stopBeforeCallback?: boolean } = {},
): Promise<LoginRun> {
  let url = start;
  let init: RequestInit = { headers: { accept: HTML } };
  let tampered = false;
  for (let hop = 0; hop < 20; hop++) {
    const res = await send(jar, url, init);
    if (new URL(url).pathname.endsWith('/flowgate/callback')) return { callbackUrl: url, final: res, finalUrl: url };
    if (res.status >= 300 && res.status < 400) {
      let next = new URL(res.headers.get('location')!, url);
      if (!tampered && opts.tamper && next.pathname.endsWith('/auth') && next.searchParams.has('code_challenge')) {
        next = opts.tamper(next);
        tampered = true;
      }
      url = next.href;
      init = { headers: { accept: HTML } };
      if (opts.stopBeforeCallback && next.pathname.endsWith('/flowgate/callback')) return { callbackUrl: url, final: res, finalUrl: url };
      continue;
    }
    const body = await res.text();
    const form = /<form[^>]*action="([^"]+)"[^>]*method="post"[\s\S]*?name="prompt" value="login"/.exec(body);
    if (res.status === 200 && form) {
      url = new URL(form[1]!.replace(/&amp;/g, '&'), url).href;
      init = {
        method: 'POST',
        headers: { accept: HTML, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ prompt: 'login', login, password: 'any' }).toString(),
      };
      continue;
    }
    return { final: new Response(body, { status: res.status, headers: res.headers }), finalUrl: url };
  }
  throw new Error('login did not finish within 20 hops');
}

/**
 * The ID token the provider issues to `CLIENT` for `login`'s account by an authorization-code grant
 * with PKCE, redeemed here as any client of the provider would (a fresh provider session each time,
 * so a token flowgate has not seen). With `nonce`, the authorization request sends one, as a sign-in
 * does, and the token carries it.
 */
export async function providerIdToken(issuer: string, redirectUri: string, login: string, opts: { nonce?: boolean } = {}): Promise<string> {
  const discovery = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as { authorization_endpoint: string; token_endpoint: string };
  const verifier = randomBytes(32).toString('base64url');
  const auth = new URL(discovery.authorization_endpoint);
  auth.search = new URLSearchParams({
    client_id: CLIENT.id,
    response_type: 'code',
    scope: 'openid profile groups',
    redirect_uri: redirectUri,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: randomBytes(8).toString('hex'),
    ...(opts.nonce ? { nonce: randomBytes(8).toString('hex') } : {}),
  }).toString();
  const run = await loginWithFetch(new CookieJar(), auth.href, login, { stopBeforeCallback: true });
  const code = new URL(run.callbackUrl!).searchParams.get('code');
  if (!code) throw new Error(`no code from the provider (${run.final.status})`);
  const r = await fetch(discovery.token_endpoint, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${CLIENT.id}:${CLIENT.secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier }).toString(),
  });
  if (!r.ok) throw new Error(`token endpoint: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { id_token: string }).id_token;
}

/** Follows the provider's sign-out confirmation page (posting "yes") and any redirects after it. */
/**
 * Where flowgate's sign-out (a POST) sends the browser next: its redirect, or, when the provider
 * ends the session too, the link its "Signing out" page follows by script.
 */
export async function afterSignOut(res: Response, base: string): Promise<URL> {
  if (res.status >= 300 && res.status < 400) return new URL(res.headers.get('location')!, base);
  const link = /<a id="continue"[^>]*href="([^"]+)"/.exec(await res.text());
  if (res.status !== 200 || !link) throw new Error(`sign-out answered ${res.status} without a way on`);
  return new URL(link[1]!.replace(/&amp;/g, '&'), base);
}

export async function confirmProviderLogout(jar: CookieJar, url: string): Promise<{ final: Response; finalUrl: string }> {
  let res = await send(jar, url, { headers: { accept: HTML } });
  let current = url;
  for (let hop = 0; hop < 10; hop++) {
    if (res.status >= 300 && res.status < 400) {
      current = new URL(res.headers.get('location')!, current).href;
      res = await send(jar, current, { headers: { accept: HTML } });
      continue;
    }
    const body = await res.text();
    const form = /<form[^>]*id="op.logoutForm"[^>]*>([\s\S]*?)<\/form>/.exec(body) ?? /<form[^>]*>([\s\S]*?)<\/form>/.exec(body);
    const action = /action="([^"]+)"/.exec(form?.[0] ?? '');
    if (!form || !action) return { final: new Response(body, { status: res.status, headers: res.headers }), finalUrl: current };
    const fields = new URLSearchParams();
    for (const m of form[1]!.matchAll(/<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"/g)) fields.set(m[1]!, m[2]!);
    fields.set('logout', 'yes');
    current = new URL(action[1]!, current).href;
    res = await send(jar, current, {
      method: 'POST',
      headers: { accept: HTML, 'content-type': 'application/x-www-form-urlencoded' },
      body: fields.toString(),
    });
  }
  throw new Error('provider logout did not finish');
}

export interface OidcFlowgate extends Flowgate {
  readonly dir: string;
  readonly logs: string[];
  readonly port: number;
  /** Moves flowgate's session clock. */
  advance(ms: number): void;
  /** Stops and starts again on the same port and store (fresh caches, lazy discovery). */
  restart(extraEnv?: Env): Promise<OidcFlowgate>;
}

/** flowgate in-process with OIDC on a fixed loopback port (so the redirect URL is known up front). */
export async function startOidcFlowgate(
  env: Env,
  port: number,
  dir = mkdtempSync(join(tmpdir(), 'flowgate-oidc-')),
  clock = { offset: 0 },
): Promise<OidcFlowgate> {
  const { logs, sink } = logCapture();
  const config = loadConfig({
    FLOWGATE_HOST: '127.0.0.1',
    FLOWGATE_PORT: String(port),
    FLOWGATE_METRICS_PORT: '0',
    FLOWGATE_METRICS_HOST: '127.0.0.1',
    ...(await storeSettings(dir)),
    FLOWGATE_ADMIN_USERNAME: ADMIN.username,
    FLOWGATE_ADMIN_TOKEN: ADMIN.token,
    FLOWGATE_LOG_LEVEL: 'info',
    FLOWGATE_SESSION_COOKIE_SECURE: 'false',
    FLOWGATE_OIDC_CLIENT_ID: CLIENT.id,
    FLOWGATE_OIDC_CLIENT_SECRET: CLIENT.secret,
    FLOWGATE_OIDC_REDIRECT_URL: `http://127.0.0.1:${port}${env.FLOWGATE_BASE_PATH ?? ''}/flowgate/callback`,
    FLOWGATE_OIDC_SCOPES: 'openid profile groups roles',
    ...env,
  });
  const fg = await startFlowgate(config, { logger: createLogger(config.logLevel, sink), now: () => Date.now() + clock.offset });
  return {
    ...fg,
    dir,
    logs,
    port,
    advance(ms: number) {
      clock.offset += ms;
    },
    async restart(extraEnv: Env = {}) {
      await fg.close();
      return startOidcFlowgate({ ...env, ...extraEnv }, port, dir, clock);
    },
  };
}
