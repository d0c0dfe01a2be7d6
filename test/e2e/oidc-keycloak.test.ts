import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, startStubUpstream } from '../helpers/flowgate.js';
import {
  CookieJar,
  freePort,
  HTML,
  loginWithFetch,
  send,
  startOidcFlowgate,
  startOidcProvider,
  type OidcFlowgate,
  type TestProvider,
} from '../helpers/oidc-provider.js';

/** Keycloak's shape: roles under `realm_access.roles` in the ID token, flowgate under a base path. */
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let idp: TestProvider;
let fg: OidcFlowgate;
let base: string;

beforeAll(async () => {
  upstream = await startStubUpstream();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  idp = await startOidcProvider({
    redirectUris: [`${base}/mlflow/flowgate/callback`],
    postLogoutRedirectUris: [`${base}/mlflow/flowgate/logged-out`],
    accounts: [{ username: 'kate', name: 'Kate Keycloak', roles: ['default-roles-kubeflow', 'team-k'] }],
    claimsInIdToken: true,
  });
  fg = await startOidcFlowgate(
    {
      FLOWGATE_BASE_PATH: '/mlflow',
      FLOWGATE_UPSTREAM_URL: upstream.url,
      FLOWGATE_OIDC_ISSUER_URL: idp.issuer,
      FLOWGATE_OIDC_GROUPS_CLAIM: 'realm_access.roles',
    },
    port,
  );
});

afterAll(async () => {
  await fg?.close();
  await idp?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

describe('OIDC under a base path with Keycloak realm roles', () => {
  it('sends a browser at the UI to login under the base path', async () => {
    const res = await send(new CookieJar(), `${base}/mlflow/`, { headers: { accept: HTML } });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/mlflow/flowgate/login?return_to=%2Fmlflow%2F');
  });

  it('reads groups from realm_access.roles and scopes the cookie to the base path', async () => {
    const jar = new CookieJar();
    const run = await loginWithFetch(jar, `${base}/mlflow/flowgate/login?return_to=%2Fmlflow%2F%23%2Fexperiments`, 'kate');
    expect(run.final.status).toBe(302);
    expect(run.final.headers.get('location')).toBe('/mlflow/#/experiments');
    expect(run.final.headers.getSetCookie().find((c) => c.startsWith('flowgate_session='))).toMatch(/Path=\/mlflow(;|$)/);
    const me = await send(jar, `${base}/mlflow/api/2.0/mlflow/permissions/users/current`);
    expect(me.status).toBe(200);
    expect(((await me.json()) as { user: unknown }).user).toMatchObject({
      username: 'kate',
      display_name: 'Kate Keycloak',
      groups: ['default-roles-kubeflow', 'team-k'],
    });
  });

  it('never returns outside the base path', async () => {
    for (const target of ['/other', '//evil.example/mlflow/', '/mlflow/%2F%2Fevil.example']) {
      const jar = new CookieJar();
      const run = await loginWithFetch(jar, `${base}/mlflow/flowgate/login?return_to=${encodeURIComponent(target)}`, 'kate');
      expect(run.final.headers.get('location'), target).toBe('/mlflow/');
    }
  });
});
