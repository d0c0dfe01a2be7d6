import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/**
 * With OIDC configured, the Manage screens send a browser without a session to OIDC's login (the
 * identity provider), never to the user-name-and-token form, which only exists without OIDC.
 */
describe('the UI with OIDC configured', () => {
  let fg: TestFlowgate;
  let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
  const api = () => request(fg.url);

  beforeAll(async () => {
    upstream = await startStubUpstream();
    fg = await startTestFlowgate({
      FLOWGATE_UPSTREAM_URL: upstream.url,
      FLOWGATE_BASE_PATH: '/mlflow',
      FLOWGATE_SESSION_COOKIE_SECURE: 'false',
      // Nothing listens there: the login answers "provider unavailable", which is OIDC's page, not the form.
      FLOWGATE_OIDC_ISSUER_URL: 'http://127.0.0.1:9/realms/none',
      FLOWGATE_OIDC_CLIENT_ID: 'flowgate',
      FLOWGATE_OIDC_REDIRECT_URL: 'http://127.0.0.1:8080/mlflow/flowgate/callback',
    });
  });
  afterAll(async () => {
    await fg.close();
    await upstream.close();
    removeDir(fg.dir);
  });

  it('sends the Manage screens to OIDC’s login, which goes to the identity provider', async () => {
    const app = await api().get('/mlflow/flowgate/ui/').set('Accept', 'text/html');
    expect(app.status).toBe(302);
    expect(app.headers.location).toBe(`/mlflow/flowgate/login?return_to=${encodeURIComponent('/mlflow/flowgate/ui/')}`);
    const login = await api().get(app.headers.location as string);
    expect(login.text).not.toContain('name="token"');
    expect(login.status).toBe(503);
    expect(login.text).toContain('Sign-in is temporarily unavailable');
    const post = await api().post('/mlflow/flowgate/login').type('form').send({ username: 'admin', token: 'x' });
    expect(post.status).toBe(405);
  });
});
