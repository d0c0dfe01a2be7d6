import { mkdtempSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { createBearer } from '../../src/bearer/index.js';
import { parseBearerIssuers } from '../../src/bearer/config.js';
import { FlowgateError } from '../../src/errors.js';
import { createLogger } from '../../src/logging.js';
import { createDirectory } from '../../src/principals/directory.js';
import { createPrincipalCache } from '../../src/principals/principal-cache.js';
import { createPrincipalWriter } from '../../src/principals/principal-writer.js';
import { logCapture, removeDir } from '../helpers/flowgate.js';
import { newKey, signWith } from '../helpers/jwt-issuers.js';
import { freshStore } from '../helpers/test-store.js';

/** Who a bearer token of the sign-in issuer becomes, by its account and the name it carries (the loader, a store, no MLflow). */
const ISSUER = 'https://idp.test/realms/ml';
const request = (authorization: string) => ({ headers: { authorization } }) as unknown as IncomingMessage;
const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

async function setup(usernameClaim: string[], extra: Record<string, unknown> = {}) {
  const store = await freshStore();
  closers.push(store.close);
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-bearer-identity-'));
  closers.push(() => removeDir(dir));
  const key = await newKey('k1');
  const jwksFile = join(dir, 'jwks.json');
  writeFileSync(jwksFile, JSON.stringify({ keys: [key.publicJwk] }));
  const directory = createDirectory(store.sql);
  const principals = createPrincipalCache(directory, 100);
  const writer = createPrincipalWriter({ sql: store.sql, directory, audit: createAuditLog(store.sql) });
  const { logs, sink } = logCapture();
  // A kubernetes issuer too: its names (`k8s.<namespace>.<name>`) are no other issuer's to take.
  const issuers = parseBearerIssuers(
    JSON.stringify([
      { issuer: ISSUER, audience: 'mlflow', jwks_file: jwksFile, username_claim: usernameClaim, ...extra },
      { kind: 'kubernetes', issuer: 'https://k8s.example', audience: 'mlflow', jwks_file: jwksFile },
    ]),
    'X',
    [],
  )!;
  const bearer = createBearer({
    config: { issuers, clockSkewSeconds: 30, maxTokenBytes: 8192 },
    sql: store.sql,
    directory,
    principalWriter: writer,
    principals,
    policyChanged: () => principals.invalidate(),
    protectedAdmin: 'admin',
    signInIssuer: ISSUER,
    cacheSize: 100,
    logger: createLogger('info', sink),
  });
  const now = Math.floor(Date.now() / 1000);
  let n = 0;
  const call = async (claims: Record<string, unknown>) => {
    const token = await signWith(key, { iss: ISSUER, aud: 'mlflow', iat: now, exp: now + 300, jti: String(n++), ...claims });
    try {
      return await bearer.loader(request(`Bearer ${token}`));
    } catch (e) {
      if (e instanceof FlowgateError) return { status: e.status, message: e.message };
      throw e;
    }
  };
  const state = async () => JSON.stringify([await store.sql.all('SELECT * FROM users ORDER BY id'), await store.sql.all('SELECT * FROM group_members ORDER BY group_id, user_id')]);
  return { call, directory, state, logs };
}

describe('a name from the email claim is taken only when its issuer verified the address', () => {
  it('an unverified address binds no user created ahead for OIDC (an admin here) and creates none: 401, nothing changes', async () => {
    const w = await setup(['email']);
    const carol = await w.directory.createUser({ username: 'carol@corp.example', displayName: 'Carol', isAdmin: true, isServiceAccount: false, signIn: 'oidc' });
    const before = await w.state();
    for (const verified of [{ email_verified: false }, {}, { email_verified: 'no' }])
      expect(await w.call({ sub: 'mallory-sub', email: 'carol@corp.example', ...verified }), JSON.stringify(verified)).toEqual({
        status: 401,
        message: "Invalid bearer token: the token's user name is an email address its issuer has not verified",
      });
    expect(await w.call({ sub: 'mallory-sub', email: 'newhire@corp.example', email_verified: false })).toMatchObject({ status: 401 });
    expect(await w.state()).toBe(before);
    expect(await w.call({ sub: 'carol-sub', email: 'carol@corp.example', email_verified: true })).toMatchObject({ userId: carol.id, username: 'carol@corp.example' });
  });

  it('email_verified counts only when the name came from email (an earlier claim of the list named the caller)', async () => {
    const w = await setup(['preferred_username', 'email']);
    expect(await w.call({ sub: 'dan-sub', preferred_username: 'dan', email: 'dan@corp.example', email_verified: false })).toMatchObject({ username: 'dan' });
    expect(await w.call({ sub: 'erin-sub', email: 'erin@corp.example', email_verified: false })).toMatchObject({ status: 401 });
  });

  it('an issuer set with insecure_allow_unverified_email names the user by any address it sends (issuers that never send email_verified)', async () => {
    const w = await setup(['email'], { insecure_allow_unverified_email: true });
    const carol = await w.directory.createUser({ username: 'carol@corp.example', displayName: 'Carol', isAdmin: false, isServiceAccount: false, signIn: 'oidc' });
    expect(await w.call({ sub: 'carol-sub', email: 'carol@corp.example' })).toMatchObject({ userId: carol.id, username: 'carol@corp.example' });
    expect(await w.call({ sub: 'frank-sub', email: 'frank@corp.example', email_verified: false })).toMatchObject({ username: 'frank@corp.example' });
    // The other name checks still hold.
    expect(await w.call({ sub: 'gus-sub', email: 'not an address' })).toMatchObject({ status: 401 });
  });
});

describe('a linked account is its user whatever name its tokens carry later', () => {
  it('no name, one flowgate would not make, a Kubernetes-shaped one, an unverified address: the linked user, nothing renamed', async () => {
    const w = await setup(['preferred_username', 'email']);
    const kim = await w.call({ sub: 'kim-sub', preferred_username: 'kim', groups: ['team'] });
    expect(kim).toMatchObject({ username: 'kim' });
    for (const later of [{}, { preferred_username: 'Kim Lee' }, { preferred_username: 'kïm' }, { preferred_username: 'k8s.team-b.pipelines' }, { email: 'kim@elsewhere.example', email_verified: false }])
      expect(await w.call({ sub: 'kim-sub', ...later }), JSON.stringify(later)).toMatchObject({ userId: (kim as { userId: number }).userId, username: 'kim' });
    expect(await w.directory.userByName('k8s.team-b.pipelines')).toBeUndefined();
  });

  it('an account linked to no one is refused for such a name (401), and nothing changes', async () => {
    const w = await setup(['preferred_username']);
    const before = await w.state();
    expect(await w.call({ sub: 'new-sub' })).toEqual({ status: 401, message: 'Invalid bearer token: the token has no user name claim' });
    expect(await w.call({ sub: 'new-sub', preferred_username: 'Kim Lee' })).toEqual({ status: 401, message: "Invalid bearer token: the token's user name is not a flowgate user name" });
    expect(await w.call({ sub: 'new-sub', preferred_username: 'k8s.team-b.pipelines' })).toMatchObject({ status: 401, message: expect.stringMatching(/Kubernetes service account/) });
    expect(await w.state()).toBe(before);
    expect(w.logs.join('')).toContain('"holder":"kubernetes_name"');
  });
});
