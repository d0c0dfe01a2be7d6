import { createServer, type Server } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { base64url, exportSPKI, SignJWT, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, adminAuth, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { jsonCaller } from '../helpers/admin-calls.js';
import { newKey, serviceAccountClaims, signWith, startLocalIssuer, type IssuerKey, type LocalIssuer } from '../helpers/jwt-issuers.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { freePort } from '../helpers/oidc-provider.js';
import { onPostgres } from '../helpers/test-store.js';

/**
 * Bearer JWTs attacked against the real MLflow: every forged, stale, misdirected or oversized token
 * is a 401 in MLflow's error JSON with RFC 6750's `invalid_token` challenge, never echoing the token;
 * and no name claim reaches the bootstrap admin, a local user, a service account or another
 * issuer's principal.
 */
const AUD = 'mlflow';
const K8S_ISSUER = 'https://kubernetes.default.svc.cluster.local';

let mlflow: MlflowServer;
let a: LocalIssuer;
let b: LocalIssuer;
let k8sKey: IssuerKey;
let fg: TestFlowgate;
let attacker: Server;
let attackerUrl: string;
const attackerHits: string[] = [];
const admin = jsonCaller(() => fg.url);
let expA: string;

const now = () => Math.floor(Date.now() / 1000);
const claims = (iss: string, extra: JWTPayload = {}): JWTPayload => ({ iss, aud: AUD, sub: 'sub-1', iat: now(), exp: now() + 300, ...extra });

async function callWith(token: string, path = `/api/2.0/mlflow/experiments/get?experiment_id=${expA}`) {
  const r = await fetch(fg.url + path, { headers: { authorization: `Bearer ${token}` } });
  const text = await r.text();
  return { status: r.status, text, json: text ? (JSON.parse(text) as Record<string, unknown>) : undefined, challenge: r.headers.get('www-authenticate') };
}
const me = async (token: string) => (await callWith(token, '/api/2.0/mlflow/permissions/users/current')).json?.user as Record<string, unknown> | undefined;

/** Refused as RFC 6750 says, in MLflow's shape, without the token in the answer or the log. */
async function expectRefused(token: string, what: string) {
  const r = await callWith(token);
  expect(r.status, `${what}: ${r.text}`).toBe(401);
  expect(r.json?.error_code, what).toBe('UNAUTHENTICATED');
  expect(r.challenge, what).toBe('Bearer error="invalid_token"');
  expect(r.text.includes(token.slice(-40)), `${what}: the answer echoes the token`).toBe(false);
  expect(fg.logs.join('').includes(token.slice(-40)), `${what}: the log holds the token`).toBe(false);
  return r.json?.message as string;
}

beforeAll(async () => {
  mlflow = await startMlflowServer();
  a = await startLocalIssuer({ path: '/realms/a' });
  // Issuer B uses the same key id as A: keys are looked up per issuer, never across.
  b = await startLocalIssuer({ path: '/realms/b', discovery: false });
  k8sKey = await newKey('k8s-1');
  attacker = createServer((req, res) => {
    attackerHits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [] }));
  });
  const port = await freePort();
  await new Promise<void>((done) => attacker.listen(port, '127.0.0.1', () => done()));
  attackerUrl = `http://127.0.0.1:${port}`;

  // The kubernetes issuer's keys are a file (offline: no cluster to ask).
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-bearer-'));
  const jwksFile = join(dir, 'k8s-jwks.json');
  writeFileSync(jwksFile, JSON.stringify({ keys: [k8sKey.publicJwk] }));
  fg = await startTestFlowgate(
    {
      FLOWGATE_UPSTREAM_URL: mlflow.url,
      FLOWGATE_BEARER_ISSUERS: JSON.stringify([
        { issuer: a.issuer, audience: AUD, jwks_cooldown_seconds: 1 },
        { issuer: b.issuer, audience: [AUD, 'other'], jwks_url: b.jwksUrl, username_claim: ['preferred_username', 'email'] },
        { kind: 'kubernetes', issuer: K8S_ISSUER, audience: AUD, jwks_file: jwksFile },
      ]),
    },
    dir,
  );
  await admin.call('POST', '/api/2.0/mlflow/users/create', { username: 'alice' });
  await admin.call('POST', '/api/2.0/mlflow/users/create', { username: 'robot', is_service_account: true });
  expA = (await admin.call('POST', '/api/2.0/mlflow/experiments/create', { name: `bearer-sec-${Date.now()}` })).experiment_id as string;
}, 300_000);

afterAll(async () => {
  await fg?.close();
  await a?.close();
  await b?.close();
  await new Promise<void>((done) => (attacker ? attacker.close(() => done()) : done()));
  await mlflow?.stop();
  if (fg) removeDir(fg.dir);
});

describe('a valid token (the control)', () => {
  it('proves its account: a principal bound to (issuer, sub) is made on first use, groups from the claim', async () => {
    const token = await a.sign(claims(a.issuer, { sub: 'carol-sub', preferred_username: 'carol', groups: ['team-c'] }));
    const user = await me(token);
    expect(user).toMatchObject({ username: 'carol', is_admin: false, is_service_account: false, groups: ['team-c'] });
    // No grant yet: the gate, not authentication, refuses MLflow calls.
    expect((await callWith(token)).status).toBe(403);
  });
});

describe('time, audience and shape', () => {
  it('refuses an expired token', async () => {
    expect(await expectRefused(await a.sign(claims(a.issuer, { exp: now() - 120 })), 'expired')).toMatch(/expired/);
  });
  it('refuses a token not valid yet (nbf, and iat in the future)', async () => {
    expect(await expectRefused(await a.sign(claims(a.issuer, { nbf: now() + 300 })), 'nbf')).toMatch(/not valid yet/);
    expect(await expectRefused(await a.sign(claims(a.issuer, { iat: now() + 300 })), 'iat')).toMatch(/not valid yet/);
  });
  it('accepts the bounded clock skew, and nothing beyond it', async () => {
    expect((await callWith(await a.sign(claims(a.issuer, { exp: now() - 10 })))).status).not.toBe(401);
    await expectRefused(await a.sign(claims(a.issuer, { exp: now() - 45 })), 'beyond skew');
  });
  it('refuses a token for another audience, and one without exp', async () => {
    expect(await expectRefused(await a.sign(claims(a.issuer, { aud: 'https://other.example' })), 'wrong audience')).toMatch(/audience/);
    await expectRefused(await a.sign(claims(a.issuer, { aud: 'other' })), 'audience of issuer B only');
    const noExp = claims(a.issuer);
    delete noExp.exp;
    await expectRefused(await a.sign(noExp), 'no exp');
  });
  it('refuses claims spelled in other cases (ISS, Aud, EXP, Sub): JSON claims are case-sensitive', async () => {
    const base = claims(a.issuer);
    const { iss, aud, exp, sub, ...rest } = base;
    await expectRefused(await a.sign({ ...rest, ISS: iss, aud, exp, sub }), 'ISS');
    await expectRefused(await a.sign({ ...rest, iss, Aud: aud, exp, sub }), 'Aud');
    await expectRefused(await a.sign({ ...rest, iss, aud, EXP: exp, sub }), 'EXP');
    await expectRefused(await a.sign({ ...rest, iss, aud, exp, Sub: sub, preferred_username: 'casey' }), 'Sub');
    // An upper-case issuer is another issuer.
    await expectRefused(await a.sign({ ...base, iss: a.issuer.toUpperCase() }), 'ISSUER in capitals');
  });
  it('refuses an oversized token before reading it', async () => {
    const big = await a.sign(claims(a.issuer, { pad: 'x'.repeat(9000) }));
    expect(big.length).toBeGreaterThan(8192);
    expect(await expectRefused(big, 'oversized')).toMatch(/too large/);
  });
  it('refuses what is not a signed compact JWT', async () => {
    for (const t of ['not-a-jwt', 'a.b', 'a.b.c.d.e', '....', 'eyJhbGciOiJSUzI1NiJ9.e30.%%%']) await expectRefused(t, t);
  });
});

describe('algorithms and keys', () => {
  it('refuses alg none (with and without a signature)', async () => {
    const header = base64url.encode(JSON.stringify({ alg: 'none', typ: 'JWT' }));
    const body = base64url.encode(JSON.stringify(claims(a.issuer)));
    await expectRefused(`${header}.${body}.`, 'alg none, empty signature');
    await expectRefused(`${header}.${body}.${base64url.encode('sig')}`, 'alg none, some signature');
    const upper = base64url.encode(JSON.stringify({ alg: 'NONE', kid: 'key-1' }));
    await expectRefused(`${upper}.${body}.${base64url.encode('sig')}`, 'alg NONE');
  });
  it('refuses HS256 signed with the issuer public key as the HMAC secret (algorithm confusion)', async () => {
    const pem = await exportSPKI((await import('node:crypto')).createPublicKey({ key: a.keys[0]!.publicJwk as never, format: 'jwk' }) as never);
    for (const secret of [pem, JSON.stringify(a.keys[0]!.publicJwk), a.keys[0]!.publicJwk.n!]) {
      const token = await new SignJWT(claims(a.issuer)).setProtectedHeader({ alg: 'HS256', kid: 'key-1' }).sign(new TextEncoder().encode(secret));
      expect(await expectRefused(token, 'HS256 with the public key')).toMatch(/algorithm/);
    }
  });
  it('refuses an algorithm the issuer does not allow (RS512 with the right key)', async () => {
    // (WebCrypto binds a key to one hash, so the RS512 signature is made with a key of its own under A's kid.)
    const rs512 = await newKey('key-1', 'RS512');
    expect(await expectRefused(await signWith(rs512, claims(a.issuer)), 'RS512')).toMatch(/algorithm/);
  });
  it('refuses an unknown kid, and re-reads the keys for it at most once per cooldown', async () => {
    const stranger = await newKey('key-unknown');
    const before = a.requests.filter((p) => p.endsWith('/keys')).length;
    for (let i = 0; i < 5; i++) await expectRefused(await signWith(stranger, claims(a.issuer)), 'unknown kid');
    expect(a.requests.filter((p) => p.endsWith('/keys')).length - before).toBeLessThanOrEqual(1);
  });
  it('never follows a kid, jku, x5u or jwk header somewhere else (path- and URL-like kids only compared)', async () => {
    const forged = await newKey('forged');
    for (const kid of ['../../../../etc/passwd', `${attackerUrl}/jwks`, 'file:///etc/passwd', '%2e%2e%2fkeys'])
      await expectRefused(await signWith(forged, claims(a.issuer), { kid }), `kid ${kid}`);
    await expectRefused(await signWith(forged, claims(a.issuer), { jku: `${attackerUrl}/jwks` }), 'jku');
    await expectRefused(await signWith(forged, claims(a.issuer), { x5u: `${attackerUrl}/cert` }), 'x5u');
    await expectRefused(await signWith(forged, claims(a.issuer), { jwk: forged.publicJwk }), 'embedded jwk');
    await expectRefused(await signWith(forged, claims(a.issuer), { kid: 'x'.repeat(300) }), 'long kid');
    expect(attackerHits).toEqual([]);
  });
  it("refuses issuer A's token presented with issuer B's iss (the same kid at both)", async () => {
    expect(a.keys[0]!.kid).toBe(b.keys[0]!.kid);
    await expectRefused(await a.sign(claims(b.issuer)), 'A-signed, iss B');
    await expectRefused(await b.sign(claims(a.issuer)), 'B-signed, iss A');
    await expectRefused(await a.sign(claims('https://unknown.example')), 'unknown issuer');
  });
  it('after a rotation: the new key works at once, the retired key and a key swapped in under the new kid do not', async () => {
    const retired = a.keys[0]!;
    const next = await newKey('key-2');
    a.keys = [next];
    await new Promise((r) => setTimeout(r, 1100)); // past the cooldown of the last unknown-kid read
    expect((await me(await signWith(next, claims(a.issuer, { sub: 'rot-sub', preferred_username: 'rotated' }))))?.username).toBe('rotated');
    await expectRefused(await signWith(retired, claims(a.issuer, { sub: 'rot-sub' })), 'retired key');
    const swapped = { ...(await newKey('key-2')) };
    await expectRefused(await signWith(swapped, claims(a.issuer, { sub: 'rot-sub' })), 'another key under the new kid');
    // The same kid reused for new key material: tokens of the old material are refused once the keys are re-read.
    const reissued = await newKey('key-2');
    a.keys = [reissued];
    await new Promise((r) => setTimeout(r, 1100));
    await expectRefused(await signWith(await newKey('key-3'), claims(a.issuer)), 'unknown kid triggers the re-read');
    await expectRefused(await signWith(next, claims(a.issuer, { sub: 'rot-sub', jti: 'fresh' })), 'old material of a reused kid');
    expect((await me(await signWith(reissued, claims(a.issuer, { sub: 'rot-sub' }))))?.username).toBe('rotated');
    // Back to A's first key for the tests after this one: re-read once the cooldown has passed.
    a.keys = [retired, reissued];
    await new Promise((r) => setTimeout(r, 1100));
    expect((await me(await a.sign(claims(a.issuer, { sub: 'carol-sub', preferred_username: 'carol', groups: ['team-c'] }))))?.username).toBe('carol');
  });
});

describe('a name claim never takes over', () => {
  it('not the bootstrap admin', async () => {
    const token = await a.sign(claims(a.issuer, { sub: 'impostor-admin', preferred_username: ADMIN.username, groups: ['x'] }));
    expect(await expectRefused(token, 'admin name')).toMatch(/belongs to another/);
    const still = await admin.call('GET', '/api/2.0/mlflow/permissions/users/current');
    expect(still.user).toMatchObject({ username: ADMIN.username, is_admin: true, sign_in: 'local', oidc_linked: false });
  });
  it('not a local user, nor a service account', async () => {
    await admin.call('POST', `/api/2.0/mlflow/permissions/users/alice/experiments/${expA}`, { permission: 'READ' });
    await expectRefused(await a.sign(claims(a.issuer, { sub: 'impostor-alice', preferred_username: 'alice' })), 'local user');
    await expectRefused(await b.sign(claims(b.issuer, { sub: 'impostor-alice', preferred_username: 'alice' })), 'local user via B');
    await expectRefused(await a.sign(claims(a.issuer, { sub: 'impostor-robot', client_id: 'robot' })), 'service account');
    const alice = await admin.call('GET', '/api/2.0/mlflow/permissions/users/alice');
    expect(alice.user).toMatchObject({ sign_in: 'local' });
  });
  it("not another issuer's principal, and not another account of the same issuer: each (issuer, sub) is its own", async () => {
    // carol is bound to (A, carol-sub) by the control test above.
    await expectRefused(await b.sign(claims(b.issuer, { sub: 'carol-sub', preferred_username: 'carol' })), 'same sub and name at B');
    await expectRefused(await a.sign(claims(a.issuer, { sub: 'carol-twin', preferred_username: 'carol' })), 'another sub at A');
    // The bound account keeps its principal whatever name it sends later.
    expect((await me(await a.sign(claims(a.issuer, { sub: 'carol-sub', preferred_username: 'carol-renamed', groups: ['team-c'] }))))?.username).toBe('carol');
  });
  it('not by an email address its issuer has not verified; a linked account keeps its principal whatever name it sends later', async () => {
    expect(await expectRefused(await b.sign(claims(b.issuer, { sub: 'mallory-sub', email: 'newhire@corp.example', email_verified: false })), 'unverified email')).toMatch(/not verified/);
    expect(await expectRefused(await b.sign(claims(b.issuer, { sub: 'mallory-sub', email: 'newhire@corp.example' })), 'email_verified absent')).toMatch(/not verified/);
    expect((await me(await b.sign(claims(b.issuer, { sub: 'newhire-sub', email: 'newhire@corp.example', email_verified: true }))))?.username).toBe('newhire@corp.example');
    // carol is bound to (A, carol-sub): a name flowgate would not make still reaches her, and an address unverified since changes nothing.
    expect((await me(await a.sign(claims(a.issuer, { sub: 'carol-sub', preferred_username: 'Carol Renamed' }))))?.username).toBe('carol');
    expect((await me(await b.sign(claims(b.issuer, { sub: 'newhire-sub', email: 'newhire@elsewhere.example', email_verified: false }))))?.username).toBe('newhire@corp.example');
  });
  it('an administrator unlinking the principal ends its tokens, already verified or not', async () => {
    const token = await a.sign(claims(a.issuer, { sub: 'dave-sub', preferred_username: 'dave' }));
    expect((await me(token))?.username).toBe('dave');
    await admin.call('PATCH', '/api/2.0/mlflow/permissions/users/dave', { sign_in: 'local' });
    await expectRefused(token, 'unlinked, cached token');
    await expectRefused(await a.sign(claims(a.issuer, { sub: 'dave-sub', preferred_username: 'dave', jti: 'new' })), 'unlinked, new token');
  });
  it('Basic with a bearer-made user name and no token is still refused', async () => {
    const r = await fetch(`${fg.url}/api/2.0/mlflow/experiments/get?experiment_id=${expA}`, { headers: { authorization: basic('carol', 'x'.repeat(40)) } });
    expect(r.status).toBe(401);
  });
});

describe('Kubernetes service-account tokens', () => {
  it('map system:serviceaccount:<ns>:<sa> to a service account in the group k8s:<ns>', async () => {
    const user = await me(await signWith(k8sKey, serviceAccountClaims(K8S_ISSUER, 'team-a', 'trainer', AUD)));
    expect(user).toMatchObject({ username: 'k8s.team-a.trainer', is_service_account: true, is_admin: false, groups: ['k8s:team-a'] });
  });
  it('refuse a kubernetes.io claim that disagrees with the subject, a subject that is no service account, and a legacy token without exp', async () => {
    const c = serviceAccountClaims(K8S_ISSUER, 'team-a', 'trainer', AUD);
    await expectRefused(await signWith(k8sKey, { ...c, 'kubernetes.io': { namespace: 'kube-system', serviceaccount: { name: 'trainer' } } }), 'namespace mismatch');
    await expectRefused(await signWith(k8sKey, { ...c, 'kubernetes.io': undefined }), 'no kubernetes.io claim');
    await expectRefused(await signWith(k8sKey, { ...c, sub: 'system:node:worker-1' }), 'a node');
    await expectRefused(await signWith(k8sKey, { ...c, sub: 'system:serviceaccount:team-a:trainer:extra' }), 'extra segment');
    const legacy: JWTPayload = { ...c, iss: 'kubernetes/serviceaccount' };
    delete legacy.exp;
    await expectRefused(await signWith(k8sKey, legacy), 'legacy secret token');
    const noExp = { ...c };
    delete noExp.exp;
    await expectRefused(await signWith(k8sKey, noExp), 'no exp');
    await expectRefused(await signWith(k8sKey, { ...c, aud: ['https://kubernetes.default.svc'] }), 'the API server audience');
  });
  it("a namespace's group and a service account's name are the cluster's: no other issuer's token joins or squats them", async () => {
    await admin.call('POST', `/api/2.0/mlflow/permissions/groups/k8s:team-g/experiments/${expA}`, { permission: 'READ' });
    // An OIDC token claiming the namespace group is not made a member (its other groups are kept).
    const mallory = await a.sign(claims(a.issuer, { sub: 'mallory-sub', preferred_username: 'mallory', groups: ['k8s:team-g', 'K8S:team-g', 'team-m'] }));
    expect(await me(mallory)).toMatchObject({ username: 'mallory', groups: ['team-m'] });
    expect((await callWith(mallory)).status).toBe(403);
    expect(fg.logs.join('')).toMatch(/groups of a Kubernetes namespace's shape left out/);
    // An OIDC token taking a service account's name before its first call is refused, in any case.
    for (const name of ['k8s.team-g.pipelines', 'K8S.team-g.pipelines'])
      expect(await expectRefused(await b.sign(claims(b.issuer, { sub: `squat-${name}`, preferred_username: name })), `squat ${name}`)).toMatch(/Kubernetes service account/);
    expect(await userRow('k8s.team-g.pipelines')).toBeUndefined();
    // The real service account then is itself, in its namespace's group with its grant.
    const real = await signWith(k8sKey, serviceAccountClaims(K8S_ISSUER, 'team-g', 'pipelines', AUD));
    expect(await me(real)).toMatchObject({ username: 'k8s.team-g.pipelines', groups: ['k8s:team-g'] });
    expect((await callWith(real)).status).toBe(200);
  });
  it("an administrator makes no user or service account of a service account's name, in any case, by any create route: 400 in MLflow's shape; the real one is then itself", async () => {
    const adminBasic = { authorization: adminAuth() };
    const attempts: Array<[string, string, unknown]> = [
      ['POST', '/api/2.0/mlflow/users/create', { username: 'k8s.team-h.pipelines', is_service_account: true }],
      ['POST', '/api/2.0/mlflow/users/create', { username: 'K8S.team-h.pipelines' }],
      ['POST', '/api/2.0/mlflow/users', { username: 'k8s.team-h.pipelines', is_service_account: true }],
      // MLflow's AuthServiceClient.create_user (a password, answered with basic-auth's 200 when made).
      ['POST', '/api/2.0/mlflow/users/create', { username: 'k8s.team-h.pipelines', password: 'secret' }],
      ['POST', '/api/2.0/mlflow/permissions/batch', { calls: [{ method: 'POST', path: 'users/create', body: { username: 'k8s.team-h.pipelines', is_service_account: true } }] }],
    ];
    for (const [method, path, body] of attempts) {
      const r = await adminWith(adminBasic, method, path, body);
      expect(r.status, `${path} ${JSON.stringify(body)}: ${JSON.stringify(r.json)}`).toBe(400);
      expect(r.json?.error_code).toBe('INVALID_PARAMETER_VALUE');
      expect(r.json?.message).toMatch(/has the shape of a Kubernetes service account's name, which only the kubernetes issuer makes/);
    }
    expect(await userRow('k8s.team-h.pipelines')).toBeUndefined();
    expect(await fg.store.sql.get('SELECT id FROM users WHERE lower(username) = ?', ['k8s.team-h.pipelines'])).toBeUndefined();
    // Names outside the template's shape are made as before.
    expect((await adminWith(adminBasic, 'POST', '/api/2.0/mlflow/users/create', { username: 'k8s-team-h-pipelines', is_service_account: true })).status).toBe(201);
    // The real service account's first call makes it, in its namespace's group, with the group's grant.
    await admin.call('POST', `/api/2.0/mlflow/permissions/groups/k8s:team-h/experiments/${expA}`, { permission: 'READ' });
    const real = await signWith(k8sKey, serviceAccountClaims(K8S_ISSUER, 'team-h', 'pipelines', AUD));
    expect(await me(real)).toMatchObject({ username: 'k8s.team-h.pipelines', is_service_account: true, groups: ['k8s:team-h'] });
    expect((await callWith(real)).status).toBe(200);
  });
  it('two kubernetes issuers that could make one same user or group stop the start, the keys named', async () => {
    const second = { kind: 'kubernetes', issuer: 'https://dev-cluster.example', audience: AUD, jwks_file: '/nonexistent.json' };
    await expect(
      startTestFlowgate({
        FLOWGATE_UPSTREAM_URL: mlflow.url,
        FLOWGATE_BEARER_ISSUERS: JSON.stringify([{ kind: 'kubernetes', issuer: K8S_ISSUER, audience: AUD, jwks_file: '/nonexistent.json' }, second]),
      }),
    ).rejects.toThrow(/\[1\]\["username_template"\].*[\s\S]*\[1\]\["namespace_group"\]/);
  });
  it("refuse a service-account token signed by another cluster's key", async () => {
    await expectRefused(await signWith(await newKey('k8s-1'), serviceAccountClaims(K8S_ISSUER, 'team-a', 'trainer', AUD)), 'other cluster');
  });
});

/** An admin-API call with `auth` (a `Bearer …` or `Basic …` value, or a session cookie): status and JSON, never thrown. */
async function adminWith(auth: { authorization: string } | { cookie: string }, method: string, path: string, body?: unknown) {
  const r = await fetch(fg.url + path, {
    method,
    headers: { ...auth, 'content-type': 'application/json', origin: new URL(fg.url).origin },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await r.text();
  return { status: r.status, json: (text ? JSON.parse(text) : undefined) as Record<string, unknown> | undefined };
}
const bearerAuth = (token: string) => ({ authorization: `Bearer ${token}` });
/** Every access token or key row the user ever held (revoked ones too): a refused mint leaves none. */
const tokenRows = async (username: string) =>
  Number(((await fg.store.sql.get('SELECT count(*) AS n FROM access_tokens t JOIN users u ON u.id = t.user_id WHERE u.username = ?', [username])) as { n: number | string }).n);
const userRow = (username: string) => fg.store.sql.get('SELECT id FROM users WHERE username = ?', [username]);

/** Every way the admin API mints or replaces an access token or key for `username`, as that user would call it. */
const MINTS = (username: string): Array<[string, string, unknown]> => [
  ['PATCH', '/api/2.0/mlflow/permissions/users/access-token', {}],
  ['PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username, expiration: new Date(Date.now() + 300 * 86_400_000).toISOString() }],
  ['PATCH', '/api/2.0/mlflow/users/access-token', {}],
  ['POST', `/api/2.0/mlflow/permissions/users/${username}/access-keys`, { name: 'laptop' }],
  ['POST', '/api/2.0/mlflow/users/current/tokens', { name: 'pipeline' }],
  ['POST', `/api/2.0/mlflow/users/${username}/tokens`, { name: 'pipeline' }],
];

async function expectNoMint(auth: { authorization: string }, username: string, what: string) {
  for (const [method, path, body] of MINTS(username)) {
    const r = await adminWith(auth, method, path, body);
    expect(r.status, `${what}: ${method} ${path}: ${JSON.stringify(r.json)}`).toBe(403);
    expect(r.json?.error_code, what).toBe('PERMISSION_DENIED');
    expect(r.json?.message, what).toMatch(/bearer token.*outlive it.*signing in.*administrator/);
    expect(JSON.stringify(r.json), `${what}: a token in the answer`).not.toMatch(/fgt_/);
  }
  expect(await tokenRows(username), `${what}: a token row was written`).toBe(0);
}

describe('a bearer JWT mints no access token (it would outlive the JWT and its account)', () => {
  it("a person's JWT cannot mint, replace or create their own access token or key; listing and revoking stay open", async () => {
    const token = await a.sign(claims(a.issuer, { sub: 'erin-sub', preferred_username: 'erin' }));
    expect((await me(token))?.username).toBe('erin');
    await expectNoMint(bearerAuth(token), 'erin', 'person');
    expect(await adminWith(bearerAuth(token), 'GET', '/api/2.0/mlflow/permissions/users/erin/access-keys')).toEqual({ status: 200, json: { access_keys: [] } });
    expect((await adminWith(bearerAuth(token), 'GET', '/api/2.0/mlflow/users/current/tokens')).json).toEqual({ tokens: [] });
    expect((await adminWith(bearerAuth(token), 'DELETE', '/api/2.0/mlflow/permissions/users/erin/access-token')).status).toBe(200);
  });

  it("a pod's projected Kubernetes token cannot mint one for its service account", async () => {
    const token = await signWith(k8sKey, serviceAccountClaims(K8S_ISSUER, 'team-m', 'minter', AUD));
    expect((await me(token))?.username).toBe('k8s.team-m.minter');
    await expectNoMint(bearerAuth(token), 'k8s.team-m.minter', 'kubernetes');
  });

  it('an administrator acting through a JWT mints for other users, never for their own account (the batch route included)', async () => {
    await admin.call('POST', '/api/2.0/mlflow/users/create', { username: 'gina' });
    const token = await a.sign(claims(a.issuer, { sub: 'frank-sub', preferred_username: 'frank' }));
    expect((await me(token))?.username).toBe('frank');
    await admin.call('PATCH', '/api/2.0/mlflow/permissions/users/frank', { is_admin: true });
    expect((await me(token))?.is_admin).toBe(true);
    await expectNoMint(bearerAuth(token), 'frank', 'admin for themselves');
    const batch = await adminWith(bearerAuth(token), 'POST', '/api/2.0/mlflow/permissions/batch', {
      calls: [{ method: 'POST', path: 'permissions/users/frank/access-keys', body: { name: 'batched' } }],
    });
    expect(batch.status, JSON.stringify(batch.json)).toBe(403);
    expect(await tokenRows('frank')).toBe(0);

    const forGina = await adminWith(bearerAuth(token), 'PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username: 'gina' });
    expect(forGina.status, JSON.stringify(forGina.json)).toBe(200);
    expect(forGina.json?.token).toMatch(/^fgt_/);
    const keyForGina = await adminWith(bearerAuth(token), 'POST', '/api/2.0/mlflow/permissions/users/gina/access-keys', { name: 'from-admin' });
    expect(keyForGina.status).toBe(201);
  });

  it('the control: a caller with Basic or a session still mints their own', async () => {
    await admin.call('POST', '/api/2.0/mlflow/users/create', { username: 'hana' });
    const first = (await admin.call('PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username: 'hana' })).token as string;
    const viaBasic = { authorization: basic('hana', first) };
    const key = await adminWith(viaBasic, 'POST', '/api/2.0/mlflow/permissions/users/hana/access-keys', { name: 'laptop' });
    expect(key.status, JSON.stringify(key.json)).toBe(201);
    expect((await adminWith(viaBasic, 'POST', '/api/2.0/mlflow/users/current/tokens', { name: 'notebook' })).status).toBe(201);
    const rotated = await adminWith(viaBasic, 'PATCH', '/api/2.0/mlflow/permissions/users/access-token', {});
    expect(rotated.status, JSON.stringify(rotated.json)).toBe(200);

    // A session opened on the sign-in page with an access token mints too.
    const login = await fetch(`${fg.url}/flowgate/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: new URL(fg.url).origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ username: 'hana', token: key.json!.token as string, return_to: '/' }).toString(),
    });
    expect(login.status).toBe(302);
    const cookie = login.headers.getSetCookie().find((c) => /^(__Host-)?flowgate_session=/.test(c))!.split(';')[0]!;
    const viaSession = await adminWith({ cookie }, 'POST', '/ajax-api/2.0/mlflow/permissions/users/hana/access-keys', { name: 'browser' });
    expect(viaSession.status, JSON.stringify(viaSession.json)).toBe(201);
  });
});

describe('unlinking: what it ends', () => {
  it("ends the account's JWTs and sessions, not access tokens minted for the user before; revoking them ends those", async () => {
    const jwt = await a.sign(claims(a.issuer, { sub: 'ivan-sub', preferred_username: 'ivan' }));
    expect((await me(jwt))?.username).toBe('ivan');
    const minted = (await admin.call('PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username: 'ivan' })).token as string;
    const viaBasic = { authorization: basic('ivan', minted) };
    await admin.call('PATCH', '/api/2.0/mlflow/permissions/users/ivan', { sign_in: 'local' });
    await expectRefused(jwt, 'unlinked');
    // The administrator's token is the user's, not the account's: it survives the unlinking…
    expect((await adminWith(viaBasic, 'GET', '/api/2.0/mlflow/permissions/users/current')).status).toBe(200);
    // …until it is revoked.
    await admin.call('DELETE', '/api/2.0/mlflow/permissions/users/ivan/access-token');
    expect((await adminWith(viaBasic, 'GET', '/api/2.0/mlflow/permissions/users/current')).status).toBe(401);
  });
  it("deleting the user does not shut its account out: the account's next JWT is a first use again", async () => {
    const jwt = await a.sign(claims(a.issuer, { sub: 'kim-sub', preferred_username: 'kim' }));
    expect((await me(jwt))?.username).toBe('kim');
    await admin.call('DELETE', '/api/2.0/mlflow/permissions/users/kim');
    expect(await userRow('kim')).toBeUndefined();
    expect(await me(jwt)).toMatchObject({ username: 'kim', origin: 'bearer' });
    const audited = await fg.store.sql.all<{ action: string; actor: string }>("SELECT action, actor FROM audit_log WHERE target = 'user:kim' AND action IN ('user.create', 'user.delete') ORDER BY id");
    expect(audited).toEqual([
      { action: 'user.create', actor: 'bearer' },
      { action: 'user.delete', actor: ADMIN.username },
      { action: 'user.create', actor: 'bearer' },
    ]);
  });
  it("a cached JWT of an unlinked account stays refused after the user's own Basic request loaded them again", async () => {
    const jwt = await a.sign(claims(a.issuer, { sub: 'uma-sub', preferred_username: 'uma' }));
    expect((await me(jwt))?.username).toBe('uma');
    const minted = (await admin.call('PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username: 'uma' })).token as string;
    await admin.call('PATCH', '/api/2.0/mlflow/permissions/users/uma', { sign_in: 'local' });
    expect((await adminWith({ authorization: basic('uma', minted) }, 'GET', '/api/2.0/mlflow/permissions/users/current')).status).toBe(200);
    await expectRefused(jwt, 'unlinked, cached token, after a Basic request of its user');
  });
  it("a cached JWT of a deleted user never becomes a new administrator given the same user id", async () => {
    const jwt = await a.sign(claims(a.issuer, { sub: 'contractor-sub', preferred_username: 'contractor' }));
    const contractor = (await me(jwt))!;
    expect(contractor).toMatchObject({ username: 'contractor', is_admin: false });
    await admin.call('DELETE', '/api/2.0/mlflow/permissions/users/contractor');
    const boss = (await admin.call('POST', '/api/2.0/mlflow/users/create', { username: 'boss', is_admin: true, sign_in: 'local' })).user as Record<string, unknown>;
    // SQLite hands the freed highest id out again; PostgreSQL's sequence never does (the hole this closes is SQLite's).
    if (!onPostgres()) expect(boss.id, 'the store hands the freed id out again').toBe(contractor.id);
    const bossToken = (await admin.call('PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username: 'boss' })).token as string;
    expect((await adminWith({ authorization: basic('boss', bossToken) }, 'GET', '/api/2.0/mlflow/permissions/users/current')).json?.user).toMatchObject({ username: 'boss', is_admin: true });
    // The old JWT is its account's again (a first use after the deletion, as documented), never boss.
    const after = await callWith(jwt, '/api/2.0/mlflow/permissions/users/current');
    expect(after.status === 401 || (after.json?.user as Record<string, unknown>)?.username === 'contractor', after.text).toBe(true);
    expect((after.json?.user as Record<string, unknown> | undefined)?.is_admin ?? false).toBe(false);
    expect((await adminWith(bearerAuth(jwt), 'GET', '/api/2.0/mlflow/permissions/users')).status).not.toBe(200);
    expect((await adminWith(bearerAuth(jwt), 'POST', '/api/2.0/mlflow/users/create', { username: 'planted', is_admin: true })).status).not.toBe(200);
    expect(await userRow('planted')).toBeUndefined();
  });
  it('a service account (Kubernetes, or an issuer of machines) cannot be unlinked: disabling or deleting it ends its tokens', async () => {
    const token = await signWith(k8sKey, serviceAccountClaims(K8S_ISSUER, 'team-u', 'job', AUD));
    expect((await me(token))?.username).toBe('k8s.team-u.job');
    expect((await adminWith({ authorization: adminAuth() }, 'PATCH', '/api/2.0/mlflow/permissions/users/k8s.team-u.job', { sign_in: 'local' })).status).toBe(400);
    await admin.call('POST', '/api/2.0/mlflow/permissions/users/k8s.team-u.job/disable', {});
    await expectRefused(token, 'disabled service account');
  });
});

describe("sign-in's allowed roles, and an issuer's required groups", () => {
  let gated: TestFlowgate;
  beforeAll(async () => {
    // Sign-in at issuer A, admitting holders of mlflow-users (or the admin role); issuer B admits only its pipelines group.
    gated = await startTestFlowgate({
      FLOWGATE_UPSTREAM_URL: mlflow.url,
      FLOWGATE_OIDC_ISSUER_URL: a.issuer,
      FLOWGATE_OIDC_CLIENT_ID: 'flowgate',
      FLOWGATE_OIDC_CLIENT_SECRET: 'secret-of-the-sign-in-client',
      FLOWGATE_OIDC_REDIRECT_URL: 'http://127.0.0.1:9/flowgate/callback',
      FLOWGATE_SESSION_COOKIE_SECURE: 'false',
      FLOWGATE_OIDC_GROUPS_CLAIM: 'realm_access.roles',
      FLOWGATE_OIDC_ALLOWED_ROLES: 'mlflow-users',
      FLOWGATE_OIDC_ADMIN_ROLE: 'mlflow-admin',
      FLOWGATE_BEARER_ISSUERS: JSON.stringify([
        { issuer: a.issuer, audience: AUD, groups_claim: 'realm_access.roles' },
        { issuer: b.issuer, audience: AUD, jwks_url: b.jwksUrl, required_groups: ['pipelines'] },
      ]),
    });
  }, 120_000);
  afterAll(async () => {
    await gated?.close();
    if (gated) removeDir(gated.dir);
  });
  const call = async (token: string, method: string, path: string, body?: unknown) => {
    const r = await fetch(gated.url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await r.text();
    return { status: r.status, text, json: text ? (JSON.parse(text) as Record<string, unknown>) : undefined, challenge: r.headers.get('www-authenticate') };
  };
  const gatedRow = (username: string) => gated.store.sql.get('SELECT id FROM users WHERE username = ?', [username]);
  async function expectNotAdmitted(token: string, username: string, what: string) {
    for (const [method, path, body] of [
      ['GET', '/api/2.0/mlflow/permissions/users/current', undefined],
      ['POST', '/api/2.0/mlflow/experiments/create', { name: `not-admitted-${username}-${Date.now()}` }],
    ] as const) {
      const r = await call(token, method, path, body);
      expect(r.status, `${what}: ${method} ${path}: ${r.text}`).toBe(403);
      expect(r.json?.error_code, what).toBe('PERMISSION_DENIED');
      expect(r.challenge, what).toBe('Bearer error="insufficient_scope"');
      expect(r.text.includes(token.slice(-40)), what).toBe(false);
    }
    expect(await gatedRow(username), `${what}: a principal was made`).toBeUndefined();
    expect(gated.logs.join('').includes(token.slice(-40)), `${what}: the log holds the token`).toBe(false);
  }

  it("refuses a token of the sign-in issuer without an allowed role (403, nothing made), as sign-in refuses", async () => {
    await expectNotAdmitted(await a.sign(claims(a.issuer, { sub: 'out-sub', preferred_username: 'outsider', realm_access: { roles: ['default-roles-ml'] } })), 'outsider', 'no allowed role');
    await expectNotAdmitted(await a.sign(claims(a.issuer, { sub: 'out-sub2', preferred_username: 'outsider2' })), 'outsider2', 'no roles claim at all');
    // The roles are read where the configuration says, not from a claim of the same name elsewhere.
    await expectNotAdmitted(await a.sign(claims(a.issuer, { sub: 'out-sub3', preferred_username: 'outsider3', groups: ['mlflow-users'] })), 'outsider3', 'role in another claim');
    expect(gated.logs.join('')).toMatch(/bearer token refused: its account holds none of the roles or groups admitted/);
  });
  it('admits a holder of an allowed role, and of the admin role (never made an administrator by the token)', async () => {
    const member = await call(await a.sign(claims(a.issuer, { sub: 'in-sub', preferred_username: 'insider', realm_access: { roles: ['mlflow-users'] } })), 'GET', '/api/2.0/mlflow/permissions/users/current');
    expect(member.status, member.text).toBe(200);
    expect(member.json?.user).toMatchObject({ username: 'insider', groups: ['mlflow-users'] });
    const boss = await call(await a.sign(claims(a.issuer, { sub: 'boss-sub', preferred_username: 'rolled-admin', realm_access: { roles: ['mlflow-admin'] } })), 'GET', '/api/2.0/mlflow/permissions/users/current');
    expect(boss.status, boss.text).toBe(200);
    expect(boss.json?.user).toMatchObject({ username: 'rolled-admin', is_admin: false });
  });
  it("refuses an account already bound once its token lacks the role (the role was taken away at the provider)", async () => {
    await expectNotAdmitted(await a.sign(claims(a.issuer, { sub: 'in-sub', preferred_username: 'insider', realm_access: { roles: [] }, jti: 'later' })), 'nobody', 'bound account, role gone');
  });
  it("applies required_groups to the issuer that sets it; sign-in's roles only to the sign-in issuer", async () => {
    await expectNotAdmitted(await b.sign(claims(b.issuer, { sub: 'b-out', preferred_username: 'b-outsider', groups: ['mlflow-users'] })), 'b-outsider', 'no required group');
    const r = await call(await b.sign(claims(b.issuer, { sub: 'b-in', preferred_username: 'b-pipeline', groups: ['pipelines'] })), 'GET', '/api/2.0/mlflow/permissions/users/current');
    expect(r.status, r.text).toBe(200);
    expect(r.json?.user).toMatchObject({ username: 'b-pipeline', groups: ['pipelines'] });
  });
});

describe('an ID token is no bearer token', () => {
  it('refuses a JWT with a nonce (an ID token of an authorization-code sign-in), and creates no principal', async () => {
    const idToken = await a.sign(claims(a.issuer, { sub: 'jill-sub', preferred_username: 'jill', nonce: 'n-0123456789', at_hash: 'x' }));
    expect(await expectRefused(idToken, 'nonce')).toMatch(/ID token/);
    expect(await userRow('jill')).toBeUndefined();
    // Nor for an account already bound (carol's), nor an empty nonce, nor Keycloak's typ "ID" without one.
    expect(await expectRefused(await a.sign(claims(a.issuer, { sub: 'carol-sub', preferred_username: 'carol', nonce: 'n' })), 'bound account')).toMatch(/ID token/);
    await expectRefused(await a.sign(claims(a.issuer, { sub: 'jill-sub', preferred_username: 'jill', nonce: '' })), 'empty nonce');
    await expectRefused(await a.sign(claims(a.issuer, { sub: 'jill-sub', preferred_username: 'jill', typ: 'ID' })), 'typ ID');
    expect(await userRow('jill')).toBeUndefined();
    // The same claims as an access token (no nonce; Keycloak's typ "Bearer") are the account.
    expect((await me(await a.sign(claims(a.issuer, { sub: 'jill-sub', preferred_username: 'jill', typ: 'Bearer' }))))?.username).toBe('jill');
  });
});
