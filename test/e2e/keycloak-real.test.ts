import type { Browser, BrowserContext, Page } from 'playwright-core';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.js';
import { removeDir, startStubUpstream } from '../helpers/flowgate.js';
import { keycloakHome, KEYCLOAK_VERSION, startKeycloak, type Keycloak } from '../helpers/keycloak.js';
import { freePort, startOidcFlowgate, type OidcFlowgate } from '../helpers/oidc-provider.js';

/**
 * flowgate against a real Keycloak 26 (Maven Central's keycloak-quarkus-dist, run with this
 * machine's JDK) and a realm imported from test/fixtures/keycloak-realm.json, in Chromium. Keycloak
 * puts realm roles in the access token only; the realm's `mlflow` client carries the mapper
 * docs/oidc.md describes, its `mlflow-unmapped` client is the same client without it.
 */
const REALM_FILE = fileURLToPath(new URL('../fixtures/keycloak-realm.json', import.meta.url));
const KEYCLOAK_MS = 300_000;
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

  beforeAll(async () => {
    const [port, unmappedPort] = [await freePort(), await freePort()];
    base = `http://127.0.0.1:${port}`;
    unmappedBase = `http://127.0.0.1:${unmappedPort}`;
    keycloak = await startKeycloak((home as { home: string }).home, REALM_FILE, { FLOWGATE: base, FLOWGATE_UNMAPPED: unmappedBase });
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
    browser = await launchBrowser();
  }, KEYCLOAK_MS + 60_000);

  afterAll(async () => {
    await browser?.close();
    await fg?.close();
    await unmapped?.close();
    await upstream?.close();
    await keycloak?.stop();
    if (fg) removeDir(fg.dir);
    if (unmapped) removeDir(unmapped.dir);
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
});
