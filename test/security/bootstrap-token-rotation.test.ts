import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logging.js';
import { startFlowgate, type Flowgate } from '../../src/main.js';
import type { Sql } from '../../src/store/sql.js';
import { openStore } from '../../src/store/store.js';
import { hashToken } from '../../src/tokens/token.js';
import { ADMIN, basic, logCapture, removeDir, startStubUpstream } from '../helpers/flowgate.js';
import { storeSettings } from '../helpers/test-store.js';
import { randomHex } from './harness/world.js';

/**
 * The bootstrap admin token (FLOWGATE_ADMIN_TOKEN / _FILE) is rotated by starting flowgate with a new
 * one, usually because the old one leaked. A flowgate started again with the old setting (a rollback,
 * an old ReplicaSet's pod, a stale Secret) must not make the rotated token valid again: it refuses to
 * start, names the setting (never the token) and changes nothing in the store. Every flowgate here is
 * started the way `flowgate serve` starts one (loadConfig from the environment, then startFlowgate),
 * several of them on one store, as replicas share one.
 */
const T1 = `rotation-one-${randomHex(16)}`;
const T2 = `rotation-two-${randomHex(16)}`;
const T3 = `rotation-three-${randomHex(16)}`;
const ADMIN_PATH = `/api/2.0/mlflow/permissions/users/${ADMIN.username}`;

let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
const dirs: string[] = [];
const running = new Set<Flowgate>();

beforeAll(async () => {
  upstream = await startStubUpstream();
});
afterAll(async () => {
  for (const fg of running) await fg.close();
  await upstream?.close();
  for (const dir of dirs) removeDir(dir);
});

function newStoreDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-rotation-'));
  dirs.push(dir);
  return dir;
}

interface Started {
  readonly fg?: Flowgate;
  readonly error?: Error;
  readonly logs: string[];
}

/** The settings of a flowgate on the store in `dir` whose bootstrap admin is `username` with `token`. */
async function configFor(dir: string, token: string, username = ADMIN.username) {
  return loadConfig({
    FLOWGATE_HOST: '127.0.0.1',
    FLOWGATE_PORT: '0',
    FLOWGATE_METRICS_HOST: '127.0.0.1',
    FLOWGATE_METRICS_PORT: '0',
    FLOWGATE_UPSTREAM_URL: upstream.url,
    ...(await storeSettings(dir)),
    FLOWGATE_ADMIN_USERNAME: username,
    FLOWGATE_ADMIN_TOKEN: token,
    FLOWGATE_STORE_WATCH_MS: '200',
    FLOWGATE_LOG_LEVEL: 'debug',
  });
}

/** A flowgate on the store in `dir`, configured with `token` for the bootstrap admin; its start's error if it refused. */
async function start(dir: string, token: string, username = ADMIN.username): Promise<Started> {
  const { logs, sink } = logCapture();
  const config = await configFor(dir, token, username);
  try {
    const fg = await startFlowgate(config, { logger: createLogger(config.logLevel, sink) });
    running.add(fg);
    return { fg, logs };
  } catch (error) {
    return { error: error as Error, logs };
  }
}
async function started(dir: string, token: string, username = ADMIN.username): Promise<Flowgate> {
  const s = await start(dir, token, username);
  if (!s.fg) throw new Error(`flowgate did not start: ${s.error?.message}`);
  return s.fg;
}
async function stop(fg: Flowgate): Promise<void> {
  running.delete(fg);
  await fg.close();
}

/** The status flowgate answers the admin's own record with, authenticated by `token`. */
async function statusWith(fg: Flowgate, token: string, username = ADMIN.username): Promise<number> {
  const res = await fetch(fg.url + ADMIN_PATH, { headers: { authorization: basic(username, token) } });
  await res.arrayBuffer();
  return res.status;
}
/** Polls until `fg` answers `token` with `status` (another flowgate's change reaches it within its watch interval). */
async function eventually(fg: Flowgate, token: string, status: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const got = await statusWith(fg, token);
    if (got === status || Date.now() > deadline) return expect(got).toBe(status);
    await new Promise((r) => setTimeout(r, 100));
  }
}
async function call(fg: Flowgate, auth: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(fg.url + path, {
    method,
    headers: { authorization: auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** What a start could change: the admin's record, every token row, the audit log. */
async function storeState(sql: Sql): Promise<string> {
  return JSON.stringify([
    await sql.get('SELECT id, is_admin, is_service_account, sign_in, disabled_at FROM users WHERE username = ?', [ADMIN.username]),
    await sql.all('SELECT id, user_id, token_hash, expires_at, revoked_at, name FROM access_tokens ORDER BY id'),
    await sql.all('SELECT id, actor, action, target, old_value, new_value FROM audit_log ORDER BY id'),
  ]);
}
/** The store in `dir` read with no flowgate running (a start would change what is to be looked at). */
async function peek<T>(dir: string, read: (sql: Sql) => Promise<T>): Promise<T> {
  const config = await configFor(dir, T1);
  const store = await openStore({ dbPath: config.dbPath, databaseUrl: config.databaseUrl, watchMs: 0, postgres: config.postgres });
  try {
    return await read(store.sql);
  } finally {
    await store.close();
  }
}
const auditActions = async (fg: Flowgate): Promise<string[]> =>
  (await fg.store.sql.all<{ action: string }>("SELECT action FROM audit_log WHERE action LIKE 'token.%' OR action = 'user.repair' ORDER BY id")).map((r) => r.action);

/** The refusal: names the setting and the admin, never a token or its hash, in the error or the logs. */
function expectRefused(s: Started): void {
  expect(s.fg, 'flowgate started with a revoked configured token').toBeUndefined();
  // A ConfigError is what `flowgate serve` turns into exit 78 (EX_CONFIG): the setting is outdated, nothing crashed.
  expect(s.error).toBeInstanceOf(ConfigError);
  expect(s.error?.message).toMatch(/^invalid configuration:\n {2}- FLOWGATE_ADMIN_TOKEN or FLOWGATE_ADMIN_TOKEN_FILE: the configured token of the bootstrap admin 'admin' was revoked on \d{4}-/);
  expect(s.error?.message).toContain('never becomes valid again');
  for (const secret of [T1, T2, T3, hashToken(T1), hashToken(T2), hashToken(T3)]) {
    expect(s.error?.message).not.toContain(secret);
    expect(s.logs.join('')).not.toContain(secret);
  }
}

describe('a rotated bootstrap admin token never comes back by configuration', () => {
  it('install T1, rotate to T2, start again with T1: refused, nothing changed, T1 still refused and T2 still the token', async () => {
    const dir = newStoreDir();
    const first = await started(dir, T1);
    expect(await statusWith(first, T1)).toBe(200);
    await stop(first);

    // The rotation: a flowgate with the new setting (it stays up, as the new ReplicaSet's pod does).
    const rotated = await started(dir, T2);
    expect(await statusWith(rotated, T1)).toBe(401);
    expect(await statusWith(rotated, T2)).toBe(200);
    const before = await storeState(rotated.store.sql);

    // An old pod (or a rollback) starts with the previous setting.
    const outdated = await start(dir, T1);
    expectRefused(outdated);
    expect(await storeState(rotated.store.sql)).toBe(before);
    expect(await statusWith(rotated, T1)).toBe(401);
    expect(await statusWith(rotated, T2)).toBe(200);
    // Again, as a crash-looping pod would: still refused, still nothing changed.
    expectRefused(await start(dir, T1));
    expect(await storeState(rotated.store.sql)).toBe(before);

    // The next start with the current setting: T1 stays dead; the audit log holds the two installs only.
    await stop(rotated);
    const again = await started(dir, T2);
    expect(await statusWith(again, T1)).toBe(401);
    expect(await statusWith(again, T2)).toBe(200);
    expect(await auditActions(again)).toEqual(['token.install', 'token.install']);
    const live = await again.store.sql.all<{ token_hash: string }>('SELECT token_hash FROM access_tokens WHERE revoked_at IS NULL');
    expect(live.map((r) => r.token_hash)).toEqual([hashToken(T2)]);
    await stop(again);
  });

  it('a rollback to the token before last is refused too, and a token revoked through the admin API stays revoked', async () => {
    const dir = newStoreDir();
    await stop(await started(dir, T1));
    await stop(await started(dir, T2));
    const third = await started(dir, T3);
    expect([await statusWith(third, T1), await statusWith(third, T2), await statusWith(third, T3)]).toEqual([401, 401, 200]);
    await stop(third);
    for (const old of [T1, T2]) expectRefused(await start(dir, old));

    // Revoked through the admin API of a flowgate whose bootstrap admin is someone else (to which
    // 'admin' is an ordinary administrator): audited, and configuration does not bring it back.
    const OPS_TOKEN = `rotation-ops-${randomHex(16)}`;
    const other = await started(dir, OPS_TOKEN, 'ops');
    const revoked = await call(other, basic('ops', OPS_TOKEN), 'DELETE', `${ADMIN_PATH}/access-token`);
    expect(revoked).toMatchObject({ status: 200, json: { revoked: 1 } });
    await stop(other);
    const before = await peek(dir, storeState);
    expect(before).toContain('"actor":"ops","action":"token.revoke"');
    expectRefused(await start(dir, T3));
    expect(await peek(dir, storeState)).toBe(before);
  });

  it('a replica still running with the old token serves it no longer, and cannot revoke the new one by minting a token for the admin', async () => {
    const dir = newStoreDir();
    const old = await started(dir, T1);
    // A second administrator, to act on the old replica once T1 is rotated away.
    expect((await call(old, basic(ADMIN.username, T1), 'POST', '/api/2.0/mlflow/users/create', { username: 'root', is_admin: true })).status).toBe(201);
    const minted = await call(old, basic(ADMIN.username, T1), 'PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username: 'root' });
    expect(minted.status).toBe(200);
    const root = basic('root', minted.json.token as string);

    const rotated = await started(dir, T2);
    await eventually(old, T1, 401);
    expect(await statusWith(old, T2)).toBe(200);

    // Minting the admin's personal token replaces their unnamed tokens but the configured one; the old
    // replica no longer knows which that is, so it refuses rather than revoke T2.
    const stale = await call(old, root, 'PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username: ADMIN.username });
    expect(stale.status).toBe(503);
    expect(stale.json.message).toContain('FLOWGATE_ADMIN_TOKEN or FLOWGATE_ADMIN_TOKEN_FILE');
    expect(await statusWith(rotated, T2)).toBe(200);
    // Through the current replica it works and spares T2.
    const personal = await call(rotated, root, 'PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username: ADMIN.username });
    expect(personal.status).toBe(200);
    expect(await statusWith(old, T2)).toBe(200);
    expect(await statusWith(rotated, T2)).toBe(200);
    expect(await statusWith(rotated, personal.json.token as string)).toBe(200);

    // The old pod restarts with its old setting: refused; the current replica is untouched.
    await stop(old);
    const before = await storeState(rotated.store.sql);
    expectRefused(await start(dir, T1));
    expect(await storeState(rotated.store.sql)).toBe(before);
    expect(await statusWith(rotated, T1)).toBe(401);
    expect(await statusWith(rotated, T2)).toBe(200);
    await stop(rotated);
  });

  it('a repaired admin record keeps the live configured token; with a revoked one the start is refused before any repair', async () => {
    const dir = newStoreDir();
    await stop(await started(dir, T1));
    let fg = await started(dir, T2);
    const personal = await call(fg, basic(ADMIN.username, T2), 'PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username: ADMIN.username });
    expect(personal.status).toBe(200);
    // What an older flowgate, or someone with the store, could leave: the admin demoted.
    await fg.store.sql.run('UPDATE users SET is_admin = 0 WHERE username = ?', [ADMIN.username]);
    await stop(fg);

    // The outdated setting: refused, the record left as it was (no repair, no audit).
    const before = await peek(dir, storeState);
    expectRefused(await start(dir, T1));
    expect(await peek(dir, storeState)).toBe(before);

    fg = await started(dir, T2);
    expect(Number((await fg.store.sql.get<{ is_admin: number }>('SELECT is_admin FROM users WHERE username = ?', [ADMIN.username]))!.is_admin)).toBe(1);
    expect(await statusWith(fg, T2)).toBe(200);
    expect(await statusWith(fg, personal.json.token as string)).toBe(401);
    expect(await statusWith(fg, T1)).toBe(401);
    expect(await auditActions(fg)).toEqual(['token.install', 'token.install', 'token.issue', 'user.repair', 'token.revoke']);
    const revoke = await fg.store.sql.get<{ old_value: string }>("SELECT old_value FROM audit_log WHERE action = 'token.revoke'");
    expect(JSON.parse(revoke!.old_value)).toEqual({ revoked_tokens: 1 });
    await stop(fg);
  });
});
