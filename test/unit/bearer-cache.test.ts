import { mkdtempSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { createBearer } from '../../src/bearer/index.js';
import { parseBearerIssuers } from '../../src/bearer/config.js';
import { createLogger } from '../../src/logging.js';
import { createDirectory } from '../../src/principals/directory.js';
import { createPrincipalCache } from '../../src/principals/principal-cache.js';
import { createPrincipalWriter } from '../../src/principals/principal-writer.js';
import { logCapture, removeDir } from '../helpers/flowgate.js';
import { newKey, signWith } from '../helpers/jwt-issuers.js';
import { freshStore, onPostgres } from '../helpers/test-store.js';

const ISSUER = 'https://idp.test/realms/ml';
const request = (authorization: string) => ({ headers: { authorization } }) as unknown as IncomingMessage;
const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

async function setup() {
  const store = await freshStore();
  closers.push(store.close);
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-bearer-unit-'));
  closers.push(() => removeDir(dir));
  const key = await newKey('k1');
  const jwksFile = join(dir, 'jwks.json');
  writeFileSync(jwksFile, JSON.stringify({ keys: [key.publicJwk] }));
  const directory = createDirectory(store.sql);
  const principals = createPrincipalCache(directory, 100);
  const writer = createPrincipalWriter({ sql: store.sql, directory, audit: createAuditLog(store.sql) });
  const { logs, sink } = logCapture();
  const problems: string[] = [];
  const issuers = parseBearerIssuers(JSON.stringify([{ issuer: ISSUER, audience: 'mlflow', jwks_file: jwksFile }]), 'X', problems)!;
  const bearer = createBearer({
    config: { issuers, clockSkewSeconds: 30, maxTokenBytes: 8192 },
    sql: store.sql,
    directory,
    principalWriter: writer,
    principals,
    policyChanged: () => principals.invalidate(),
    protectedAdmin: 'admin',
    signInIssuer: undefined,
    cacheSize: 100,
    logger: createLogger('info', sink),
  });
  const now = Math.floor(Date.now() / 1000);
  const token = (extra: Record<string, unknown> = {}) =>
    signWith(key, { iss: ISSUER, aud: 'mlflow', sub: 'u-1', preferred_username: 'uma', groups: ['g1'], iat: now, exp: now + 300, ...extra });
  return { bearer, principals, directory, writer, token, logs, jwksFile };
}

describe('the bearer loader', () => {
  it('answers a verified token synchronously from its cache: no signature check, no promise, no SQL', async () => {
    const { bearer, token } = await setup();
    const t = await token();
    const first = bearer.loader(request(`Bearer ${t}`));
    expect(first).toBeInstanceOf(Promise);
    const principal = await first;
    expect(principal).toMatchObject({ username: 'uma', via: 'bearer', isServiceAccount: false });
    const again = bearer.loader(request(`bearer   ${t}`));
    expect(again).not.toBeInstanceOf(Promise);
    expect(again).toBe(principal);
  });

  it('a burst of first requests with one token provisions once', async () => {
    const { bearer, token, logs } = await setup();
    const t = await token();
    const all = await Promise.all(Array.from({ length: 10 }, () => bearer.loader(request(`Bearer ${t}`))));
    expect(new Set(all.map((p) => p!.userId)).size).toBe(1);
    expect(logs.join('')).not.toContain(t.slice(-30));
  });

  it('re-checks the binding when the principal cache was dropped, and refuses a token whose account was unlinked', async () => {
    const { bearer, principals, directory, writer, token } = await setup();
    const t = await token();
    const p = (await bearer.loader(request(`Bearer ${t}`)))!;
    principals.invalidate();
    expect(await bearer.loader(request(`Bearer ${t}`))).toMatchObject({ userId: p.userId });
    await writer.setSignIn('test', (await directory.userById(p.userId))!, 'local');
    principals.invalidate();
    await expect(Promise.resolve().then(() => bearer.loader(request(`Bearer ${t}`)))).rejects.toMatchObject({
      status: 401,
      headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' },
    });
  });

  it('refuses a cached token of an unlinked account even when the user was loaded again (their Basic request) before its next use', async () => {
    const { bearer, principals, directory, writer, token } = await setup();
    const t = await token();
    const p = (await bearer.loader(request(`Bearer ${t}`)))!;
    await writer.setSignIn('test', (await directory.userById(p.userId))!, 'local');
    principals.invalidate();
    // The user's own Basic request refills the principal cache before the JWT comes back.
    expect(await principals.principal(p.userId, 'basic')).toMatchObject({ userId: p.userId, username: 'uma' });
    await expect(Promise.resolve().then(() => bearer.loader(request(`Bearer ${t}`)))).rejects.toMatchObject({ status: 401 });
  });

  it('a cached token of a deleted user never becomes the next user given the same id (a new administrator)', async () => {
    const { bearer, principals, directory, writer, token } = await setup();
    const t = await token({ sub: 'contractor-sub', preferred_username: 'contractor' });
    const p = (await bearer.loader(request(`Bearer ${t}`)))!;
    await writer.deleteUser('test', (await directory.userById(p.userId))!);
    principals.invalidate();
    const boss = await writer.createUser('test', { username: 'boss', displayName: 'Boss', isAdmin: true, isServiceAccount: false });
    if (!onPostgres()) expect(boss.id).toBe(p.userId); // SQLite hands the freed highest id out again; PostgreSQL's sequence never
    expect(await principals.principal(boss.id, 'basic')).toMatchObject({ username: 'boss', isAdmin: true });
    const again = await bearer.loader(request(`Bearer ${t}`));
    // Deleting does not shut the account out (docs/machine-identity.md): its token is a first use again, never boss.
    expect(again).toMatchObject({ username: 'contractor', isAdmin: false });
    expect(again!.userId).not.toBe(boss.id);
  });

  it('a cached token whose principal cache entry was refilled checks its binding once, then is answered synchronously again', async () => {
    const { bearer, principals, token } = await setup();
    const t = await token();
    const p = (await bearer.loader(request(`Bearer ${t}`)))!;
    principals.invalidate();
    await principals.principal(p.userId, 'basic');
    const checked = bearer.loader(request(`Bearer ${t}`));
    expect(checked).toBeInstanceOf(Promise);
    const q = await checked;
    expect(q).toMatchObject({ userId: p.userId, username: 'uma' });
    expect(bearer.loader(request(`Bearer ${t}`))).toBe(q);
  });

  it('leaves other schemes to other loaders, and refuses an empty or oversized bearer value without parsing it', async () => {
    const { bearer } = await setup();
    expect(bearer.loader(request('Basic abc'))).toBeUndefined();
    expect(bearer.loader({ headers: {} } as IncomingMessage)).toBeUndefined();
    expect(() => bearer.loader(request('Bearer '))).toThrow(/missing|malformed/);
    expect(() => bearer.loader(request(`Bearer ${'a'.repeat(9000)}`))).toThrow(/too large/);
  });
});
