import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, startStubUpstream } from '../helpers/flowgate.js';
import { CookieJar, flowgateClientAt, freePort, HTML, loginWithFetch, startOidcFlowgate, startOidcProvider, type OidcFlowgate, type TestProvider } from '../helpers/oidc-provider.js';

/**
 * The attacker knows no one's credentials and floods `GET /flowgate/login`: every sign-in started is a
 * pending login written to the store (purged every 10 minutes), so a flood would otherwise be a stream of
 * writes competing with everyone's grants and sessions, and a table that grows by one row per request.
 * Starts are taken at 20 per second after a burst of 200, all clients together; past that a start is a
 * 503 with Retry-After that writes nothing. A person signing in a moment later gets through.
 */
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let idp: TestProvider;
let fg: OidcFlowgate;
let base: string;

beforeAll(async () => {
  upstream = await startStubUpstream();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  idp = await startOidcProvider({ ...flowgateClientAt(base), accounts: [{ username: 'pat', name: 'Pat', roles: [] }] });
  fg = await startOidcFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_OIDC_ISSUER_URL: idp.issuer }, port);
}, 120_000);

afterAll(async () => {
  await fg?.close();
  if (fg) removeDir(fg.dir);
  await idp?.close();
  await upstream?.close();
});

describe('a flood of sign-in starts', () => {
  it('starts at most the burst and the rate, refuses the rest with 503 and Retry-After, and lets a person in a moment later', async () => {
    const started = Date.now();
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 400; i++) {
      const r = await fetch(`${base}/flowgate/login`, { redirect: 'manual', headers: { accept: HTML } });
      statuses.push(r.status);
      if (r.status === 503) retryAfter ??= r.headers.get('retry-after');
      await r.arrayBuffer();
    }
    const seconds = (Date.now() - started) / 1000;
    const begun = statuses.filter((s) => s === 302).length;
    const refused = statuses.filter((s) => s === 503).length;
    expect(begun + refused).toBe(400);
    expect(begun).toBeGreaterThanOrEqual(200);
    expect(begun).toBeLessThanOrEqual(200 + Math.ceil(seconds * 20) + 1);
    expect(refused).toBeGreaterThan(0);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    await new Promise((r) => setTimeout(r, 1000));
    const run = await loginWithFetch(new CookieJar(), `${base}/flowgate/login`, 'pat');
    expect(run.final.status).toBeLessThan(400);
  });
});
