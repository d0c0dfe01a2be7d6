import type { Browser, BrowserContext, Page } from 'playwright-core';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { launchBrowser } from '../helpers/browser.js';
import { removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { keycloakHome, KEYCLOAK_VERSION, startKeycloak, type Keycloak } from '../helpers/keycloak.js';
import { runPython, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { freePort, startOidcFlowgate, type OidcFlowgate } from '../helpers/oidc-provider.js';

/**
 * flowgate against a real Keycloak 26 (Maven Central's keycloak-quarkus-dist, run with this
 * machine's JDK) and a realm imported from test/fixtures/keycloak-realm.json, in Chromium. Keycloak
 * puts realm roles in the access token only; the realm's `mlflow` client carries the mapper
 * docs/oidc.md describes, its `mlflow-unmapped` client is the same client without it. Its
 * `ml-pipeline` client is a machine (service account enabled, an audience mapper for flowgate):
 * the real MLflow Python client calls flowgate in front of the real MLflow with
 * `MLFLOW_TRACKING_TOKEN` from Keycloak's client-credentials grant (docs/machine-identity.md).
 */
const REALM_FILE = fileURLToPath(new URL('../fixtures/keycloak-realm.json', import.meta.url));
const KEYCLOAK_MS = 300_000;
/** The audience the realm's `ml-pipeline` client adds to its access tokens (an audience mapper). */
const FLOWGATE_AUDIENCE = 'mlflow-through-flowgate';
const home = await keycloakHome();
if ('unavailable' in home) console.warn(`keycloak-real: skipped, Keycloak ${KEYCLOAK_VERSION} cannot be had here: ${home.unavailable}`);

type Current = { user: { username: string; display_name: string; groups: string[] } };

describe.skipIf('unavailable' in home)(`flowgate with a real Keycloak ${KEYCLOAK_VERSION}`, () => {
  let keycloak: Keycloak;
  let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
  let fg: OidcFlowgate;
  let unmapped: OidcFlowgate;
  let browser: Browser;
  let base = '';
  let unmappedBase = '';
  let mlflow: MlflowServer;
  let machines: TestFlowgate;
  const admin = jsonCaller(() => machines.url);

  beforeAll(async () => {
    const [port, unmappedPort] = [await freePort(), await freePort()];
    base = `http://127.0.0.1:${port}`;
    unmappedBase = `http://127.0.0.1:${unmappedPort}`;
    [keycloak, mlflow] = await Promise.all([
      startKeycloak((home as { home: string }).home, REALM_FILE, { FLOWGATE: base, FLOWGATE_UNMAPPED: unmappedBase }),
      startMlflowServer(),
    ]);
    upstream = await startStubUpstream();
    const oidc = {
      FLOWGATE_UPSTREAM_URL: upstream.url,
      FLOWGATE_OIDC_ISSUER_URL: keycloak.issuer,
      FLOWGATE_OIDC_SCOPES: 'openid profile email',
      FLOWGATE_OIDC_GROUPS_CLAIM: 'realm_access.roles',
    };
    fg = await startOidcFlowgate({ ...oidc, FLOWGATE_OIDC_CLIENT_ID: 'mlflow', FLOWGATE_OIDC_CLIENT_SECRET: 'mlflow-client-secret-for-tests-0123456789' }, port);
    unmapped = await startOidcFlowgate(
      { ...oidc, FLOWGATE_OIDC_CLIENT_ID: 'mlflow-unmapped', FLOWGATE_OIDC_CLIENT_SECRET: 'mlflow-unmapped-secret-for-tests-0123456789' },
      unmappedPort,
    );
    // Keycloak's machine clients: service accounts named by their client id (their tokens'
    // preferred_username is Keycloak's `service-account-<client>`), groups from their realm roles.
    // No clock skew, so a token is refused the second it expires.
    machines = await startTestFlowgate({
      FLOWGATE_UPSTREAM_URL: mlflow.url,
      FLOWGATE_BEARER_CLOCK_SKEW_SECONDS: '0',
      FLOWGATE_BEARER_ISSUERS: JSON.stringify([
        { issuer: keycloak.issuer, audience: FLOWGATE_AUDIENCE, service_accounts: true, username_claim: ['client_id', 'azp'], groups_claim: 'realm_access.roles' },
      ]),
    });
    browser = await launchBrowser();
  }, KEYCLOAK_MS + 120_000);

  afterAll(async () => {
    await browser?.close();
    await fg?.close();
    await unmapped?.close();
    await upstream?.close();
    await machines?.close();
    await mlflow?.stop();
    await keycloak?.stop();
    if (fg) removeDir(fg.dir);
    if (unmapped) removeDir(unmapped.dir);
    if (machines) removeDir(machines.dir);
  });

  /** Signs in at Keycloak's own login form, from flowgate's login route, and waits to be back at flowgate. */
  async function signIn(page: Page, at: string): Promise<void> {
    await page.goto(`${at}/flowgate/login`);
    await page.waitForURL((u) => u.href.startsWith(keycloak.issuer));
    await page.fill('#username', 'kate');
    await page.fill('#password', 'kate-password');
    await page.click('#kc-login');
    await page.waitForURL((u) => u.href.startsWith(at) && !u.pathname.startsWith('/flowgate/'));
  }

  const current = async (page: Page) =>
    (await page.evaluate(async () => (await fetch('/api/2.0/mlflow/permissions/users/current')).json())) as Current;

  const kate = async () => {
    const found = (await (await keycloak.admin('GET', '/users?username=kate&exact=true')).json()) as Array<{ id: string }>;
    return found[0]!.id;
  };

  it('signs in at Keycloak, makes realm roles groups, ends the Keycloak session on sign-out, and applies a new role at the next sign-in only', async () => {
    const context: BrowserContext = await browser.newContext();
    const page = await context.newPage();
    await signIn(page, base);
    const first = await current(page);
    expect(first.user).toMatchObject({ username: 'kate', display_name: 'Kate Keycloak' });
    expect(first.user.groups).toContain('team-k');
    expect(first.user.groups).not.toContain('team-late');

    // A role granted at Keycloak while kate is signed in: her flowgate session keeps the groups it had.
    const role = (await (await keycloak.admin('GET', '/roles/team-late')).json()) as { id: string; name: string };
    const granted = await keycloak.admin('POST', `/users/${await kate()}/role-mappings/realm`, [role]);
    expect(granted.status).toBe(204);
    expect((await current(page)).user.groups).not.toContain('team-late');

    // Sign-out goes through Keycloak's end-session endpoint (with the ID token as hint, so no confirmation page).
    await page.goto(`${base}/flowgate/logout`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${base}/flowgate/logged-out`);
    expect((await context.cookies()).find((c) => c.name === 'flowgate_session')).toBeUndefined();
    const sessions = (await (await keycloak.admin('GET', `/users/${await kate()}/sessions`)).json()) as unknown[];
    expect(sessions).toEqual([]);

    // The Keycloak session is gone: signing in asks for the password again, and brings the new role.
    await page.goto(`${base}/flowgate/login`);
    await page.waitForURL((u) => u.href.startsWith(keycloak.issuer));
    expect(await page.locator('#password').count()).toBe(1);
    await signIn(page, base);
    const again = await current(page);
    expect(again.user.groups).toEqual(expect.arrayContaining(['team-k', 'team-late']));
    await context.close();
  }, 180_000);

  it('without the mapper Keycloak sends no realm roles to flowgate, which warns naming the claim and the claims present', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signIn(page, unmappedBase);
    expect((await current(page)).user.groups).toEqual([]);
    const lines = unmapped.logs.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    const warning = lines.find((l) => l.level === 'warn' && String(l.msg).startsWith('oidc login yielded no groups'));
    expect(warning).toMatchObject({ user: 'kate', groupsClaim: 'realm_access.roles' });
    expect(warning!.claimsPresent).toEqual(expect.arrayContaining(['preferred_username', 'sub', 'iss']));
    expect(warning!.claimsPresent).not.toContain('realm_access');
    // The mapped client's logins carried roles: no such warning there.
    expect(fg.logs.join('')).not.toContain('oidc login yielded no groups');
    await context.close();
  }, 180_000);

  /** An access token from the realm's token endpoint by the client-credentials grant (client_secret_basic). */
  async function clientCredentials(clientId: string, secret: string): Promise<string> {
    const r = await fetch(`${keycloak.issuer}/protocol/openid-connect/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'client_credentials' }),
    });
    if (!r.ok) throw new Error(`client credentials for ${clientId}: ${r.status} ${await r.text()}`);
    return ((await r.json()) as { access_token: string }).access_token;
  }
  const pipelineToken = () => clientCredentials('ml-pipeline', 'ml-pipeline-secret-for-tests-0123456789');
  const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, any>;

  const OPS = `
import json, os
from mlflow import MlflowClient
c = MlflowClient()
out = {}
def attempt(label, fn):
    try:
        out[label] = {"ok": True, "value": fn()}
    except Exception as e:
        out[label] = {"ok": False, "error": getattr(e, "error_code", None) or str(e)[:300]}
A, B = os.environ["EXP_GRANTED"], os.environ["EXP_OTHER"]
attempt("get_granted", lambda: c.get_experiment(A).name)
attempt("log_granted", lambda: (lambda r: (c.log_metric(r, "loss", 0.5), c.get_run(r).data.metrics["loss"])[1])(c.create_run(A).info.run_id))
attempt("get_other", lambda: c.get_experiment(B).name)
attempt("run_other", lambda: c.create_run(B).info.run_id)
attempt("search", lambda: sorted(e.experiment_id for e in c.search_experiments()))
print("@@RESULT@@" + json.dumps(out))
`;
  type Outcome = { ok: true; value: unknown } | { ok: false; error: string };
  /** The real MLflow Python client through flowgate with MLFLOW_TRACKING_TOKEN (sent as `Authorization: Bearer`). */
  async function withToken(token: string, experiments: { granted: string; other: string }): Promise<Record<string, Outcome>> {
    const r = await runPython(mlflow.venv, OPS, {
      MLFLOW_TRACKING_URI: machines.url,
      MLFLOW_TRACKING_TOKEN: token,
      MLFLOW_HTTP_REQUEST_MAX_RETRIES: '0',
      EXP_GRANTED: experiments.granted,
      EXP_OTHER: experiments.other,
    });
    const line = r.stdout.split('\n').find((l) => l.startsWith('@@RESULT@@'));
    if (!line) throw new Error(`python failed (${r.code}):\n${r.stderr.slice(-3000)}`);
    return JSON.parse(line.slice('@@RESULT@@'.length)) as Record<string, Outcome>;
  }

  it("MLFLOW_TRACKING_TOKEN from Keycloak's client-credentials grant: allowed where its realm role is granted, refused elsewhere, refused once expired or for another audience", async () => {
    const experiments = {
      granted: (await admin.call('POST', '/api/2.0/mlflow/experiments/create', { name: 'keycloak-machine-granted' })).experiment_id as string,
      other: (await admin.call('POST', '/api/2.0/mlflow/experiments/create', { name: 'keycloak-machine-other' })).experiment_id as string,
    };
    // Granted to the realm role before the client's first call: the grant makes the group, the first call joins it.
    await admin.call('POST', `/api/2.0/mlflow/permissions/groups/team-pipelines/experiments/${experiments.granted}`, { permission: 'EDIT' });

    const token = await pipelineToken();
    // A machine's token: no email, Keycloak's own name for its service-account user, the client id in azp.
    const claims = claimsOf(token);
    expect(claims).toMatchObject({ iss: keycloak.issuer, azp: 'ml-pipeline', preferred_username: 'service-account-ml-pipeline' });
    expect(claims.email).toBeUndefined();
    expect([claims.aud].flat()).toContain(FLOWGATE_AUDIENCE);

    const out = await withToken(token, experiments);
    expect(out.get_granted).toEqual({ ok: true, value: 'keycloak-machine-granted' });
    expect(out.log_granted).toEqual({ ok: true, value: 0.5 });
    expect(out.get_other).toEqual({ ok: false, error: 'PERMISSION_DENIED' });
    expect(out.run_other).toEqual({ ok: false, error: 'PERMISSION_DENIED' });
    expect(out.search).toEqual({ ok: true, value: [experiments.granted] });
    const me = await admin.call('GET', '/api/2.0/mlflow/permissions/users/current', undefined, `Bearer ${token}`);
    expect(me.user).toMatchObject({ username: 'ml-pipeline', is_service_account: true, is_admin: false });
    expect((me.user as { groups: string[] }).groups).toContain('team-pipelines');

    // Another client of the same realm, whose tokens carry no flowgate audience: not a caller at all.
    const elsewhere = await clientCredentials('ml-elsewhere', 'ml-elsewhere-secret-for-tests-0123456789');
    expect([claimsOf(elsewhere).aud].flat()).not.toContain(FLOWGATE_AUDIENCE);
    expect((await withToken(elsewhere, experiments)).get_granted).toEqual({ ok: false, error: 'UNAUTHENTICATED' });

    // The granted client's token once it has expired: Keycloak made to issue one-second tokens.
    const [client] = (await (await keycloak.admin('GET', '/clients?clientId=ml-pipeline')).json()) as Array<{ id: string; attributes?: Record<string, string> }>;
    const lifespan = async (seconds: string | undefined) => {
      const attributes = { ...client!.attributes, 'access.token.lifespan': seconds ?? '' };
      expect((await keycloak.admin('PUT', `/clients/${client!.id}`, { ...client, attributes })).status).toBe(204);
    };
    await lifespan('1');
    try {
      const brief = await pipelineToken();
      const { exp } = claimsOf(brief) as { exp: number };
      expect(exp - Math.floor(Date.now() / 1000)).toBeLessThanOrEqual(2);
      await new Promise((r) => setTimeout(r, Math.max(0, (exp + 1) * 1000 - Date.now())));
      const expired = await withToken(brief, experiments);
      expect(expired.get_granted).toEqual({ ok: false, error: 'UNAUTHENTICATED' });
      expect(expired.get_other).toEqual({ ok: false, error: 'UNAUTHENTICATED' });
    } finally {
      await lifespan(client!.attributes?.['access.token.lifespan']);
    }
    // A fresh token of the same client works again: the refusal was the expiry.
    expect((await withToken(await pipelineToken(), experiments)).get_granted).toEqual({ ok: true, value: 'keycloak-machine-granted' });
    // Tokens never reach the log.
    expect(machines.logs.join('')).not.toContain(token.split('.')[2]!);
  }, 300_000);
});
