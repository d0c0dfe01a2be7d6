import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/**
 * The attacker runs a page on another site and counts on a browser that holds credentials for
 * flowgate: Basic credentials cached from the password dialog a 401 on an API link raised (flowgate
 * answers API navigations with `WWW-Authenticate: Basic`, as MLflow basic-auth does). A form post
 * with `enctype=text/plain` can carry a JSON body the admin API parses, and the browser attaches the
 * cached Basic header to it. Sessions were already CSRF-checked; this is the Basic (and Bearer) side:
 * whatever the credential, flowgate changes nothing for a page of another site. Programs send neither
 * `Origin` nor `Sec-Fetch-Site` and are not affected.
 */
const V2 = '/api/2.0/mlflow';

let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let fg: TestFlowgate;

/** The body a `<form enctype=text/plain>` with one field named `{"calls":…"path":"…?x` and value `",…}` sends. */
const FORM_BODY = '{"calls":[{"method":"PATCH","path":"permissions/users/mallory?x=","body":{"is_admin":true}}]}\r\n';

const formPost = (headers: Record<string, string>) => {
  let r = request(fg.url).post(`${V2}/permissions/batch`).set('Authorization', adminAuth()).set('Content-Type', 'text/plain');
  for (const [k, v] of Object.entries(headers)) r = r.set(k, v);
  return r.send(FORM_BODY);
};
const malloryIsAdmin = async () => (await request(fg.url).get(`${V2}/permissions/users/mallory`).set('Authorization', adminAuth()).expect(200)).body.user.is_admin as boolean;

beforeAll(async () => {
  upstream = await startStubUpstream();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  await request(fg.url).post(`${V2}/users/create`).set('Authorization', adminAuth()).send({ username: 'mallory' }).expect(201);
}, 60_000);

afterAll(async () => {
  await fg?.close();
  if (fg) removeDir(fg.dir);
  await upstream?.close();
});

describe("another site's page riding a browser's cached Basic credentials", () => {
  it.each([
    ['a current browser (Sec-Fetch-Site and Origin)', { 'Sec-Fetch-Site': 'cross-site', Origin: 'https://evil.example' }],
    ['a sibling host of the same site', { 'Sec-Fetch-Site': 'same-site', Origin: 'https://evil.ml.example.com' }],
    ['a browser without Fetch Metadata (Origin only)', { Origin: 'https://evil.example' }],
    ['a sandboxed frame or data: page (Origin: null)', { Origin: 'null' }],
  ])('a text/plain form post from %s makes nobody an administrator: 403, nothing changed', async (_label, headers) => {
    const r = await formPost(headers);
    expect(r.status, r.text).toBe(403);
    expect(r.body.error_code).toBe('PERMISSION_DENIED');
    expect(r.body.message).toMatch(/cross-site/i);
    expect(await malloryIsAdmin()).toBe(false);
  });

  it('refuses every state-changing method from another site, and still answers its reads (no CORS: the page cannot read them)', async () => {
    const cross = { 'Sec-Fetch-Site': 'cross-site', Origin: 'https://evil.example' };
    const del = await request(fg.url).delete(`${V2}/permissions/users/mallory`).set('Authorization', adminAuth()).set(cross);
    expect(del.status, del.text).toBe(403);
    const patch = await request(fg.url).patch(`${V2}/permissions/users/mallory`).set('Authorization', adminAuth()).set(cross).send({ is_admin: true });
    expect(patch.status, patch.text).toBe(403);
    expect(await malloryIsAdmin()).toBe(false);
    const read = await request(fg.url).get(`${V2}/permissions/users/mallory`).set('Authorization', adminAuth()).set(cross);
    expect(read.status).toBe(200);
    expect(read.headers['access-control-allow-origin']).toBeUndefined();
  });

  it("a program's call (no Origin, no Fetch Metadata) and a page of flowgate's own origin still change things", async () => {
    const self = new URL(fg.url).origin;
    await request(fg.url).patch(`${V2}/permissions/users/mallory`).set('Authorization', adminAuth()).set({ Origin: self, 'Sec-Fetch-Site': 'same-origin' }).send({ is_admin: true }).expect(200);
    expect(await malloryIsAdmin()).toBe(true);
    // Behind an ingress that rewrites Host, the browser's own verdict (same-origin) is what counts.
    await request(fg.url).patch(`${V2}/permissions/users/mallory`).set('Authorization', adminAuth()).set({ Origin: 'https://ml.example.com', 'Sec-Fetch-Site': 'same-origin' }).send({ is_admin: false }).expect(200);
    expect(await malloryIsAdmin()).toBe(false);
    const r = await formPost({});
    expect(r.status, r.text).toBe(200);
    expect(await malloryIsAdmin()).toBe(true);
  });
});
