import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { FlowgateError } from '../../src/errors.js';
import { createReadiness } from '../../src/proxy/health.js';
import { sqliteSql } from '../../src/store/sqlite-sql.js';
import { redactSecrets, StoreDuplicateError, storeError, StoreUnavailableError } from '../../src/store/store-errors.js';
import { connectMlflow, type MlflowConnection } from '../../src/upstream/mlflow-connection.js';
import { startStubUpstream } from '../helpers/flowgate.js';

const pgError = (code: string, message: string, extra: Record<string, string> = {}) => Object.assign(new Error(message), { code, ...extra });

describe('storeError: what a store failure becomes', () => {
  it.each([
    ['a statement with no answer (node-postgres query_timeout)', new Error('Query read timeout'), true],
    ['no connection from a full pool in time', new Error('timeout exceeded when trying to connect'), true],
    ['a new connection with no answer', new Error('Connection terminated due to connection timeout'), true],
    ['a connection the server dropped', new Error('Connection terminated unexpectedly'), true],
    ['a refused connection', pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'), true],
    ['the server shutting down', pgError('57P01', 'terminating connection due to administrator command'), false],
    ['the statement timeout', pgError('57014', 'canceling statement due to statement timeout'), false],
    ['a standby', pgError('25006', 'cannot execute INSERT in a read-only transaction'), false],
    ['too many connections', pgError('53300', 'sorry, too many clients already'), false],
    ['a connection exception class', pgError('08006', 'connection failure'), true],
    ['SQLite locked by another process past the busy timeout', pgError('SQLITE_BUSY', 'database is locked'), false],
    ['SQLite on a full disk', pgError('SQLITE_FULL', 'database or disk is full'), false],
    ['SQLite on a failing disk', pgError('SQLITE_IOERR_WRITE', 'disk I/O error'), false],
    ['SQLite on a read-only file', pgError('SQLITE_READONLY', 'attempt to write a readonly database'), false],
  ])('%s: 503 TEMPORARILY_UNAVAILABLE', (_what, err, connectionLost) => {
    const e = storeError(err);
    expect(e).toBeInstanceOf(StoreUnavailableError);
    expect((e as StoreUnavailableError).status).toBe(503);
    expect((e as StoreUnavailableError).code).toBe('TEMPORARILY_UNAVAILABLE');
    expect((e as StoreUnavailableError).connectionLost).toBe(connectionLost);
    // The client's message says nothing of the driver; the log's detail does.
    expect((e as StoreUnavailableError).message).toBe('The policy store is not available right now; try again shortly');
    expect((e as StoreUnavailableError).detail).toContain(err.message);
  });

  it.each([
    ['users', pgError('23505', 'duplicate key value violates unique constraint "users_username_key"', { table: 'users', constraint: 'users_username_key' }), 'A user of that name already exists'],
    ['groups', pgError('23505', 'duplicate key', { table: 'groups', constraint: 'groups_name_key' }), 'A group of that name already exists'],
    ['grants', pgError('23505', 'duplicate key', { table: 'grants', constraint: 'grants_of_user' }), 'The grantee already has a permission on that resource; use PATCH to change it'],
    ['SQLite users', pgError('SQLITE_CONSTRAINT_UNIQUE', 'UNIQUE constraint failed: users.username'), 'A user of that name already exists'],
    ['SQLite OIDC link', pgError('SQLITE_CONSTRAINT_UNIQUE', 'UNIQUE constraint failed: users.oidc_issuer, users.oidc_subject'), 'That identity-provider account is already linked to a user'],
    ['SQLite grants', pgError('SQLITE_CONSTRAINT_UNIQUE', 'UNIQUE constraint failed: grants.user_id, grants.resource_kind, grants.resource_id'), 'The grantee already has a permission on that resource; use PATCH to change it'],
  ])('a lost create race on %s: 409 RESOURCE_ALREADY_EXISTS, no key values echoed', (_what, err, message) => {
    const e = storeError(err);
    expect(e).toBeInstanceOf(StoreDuplicateError);
    expect((e as FlowgateError).status).toBe(409);
    expect((e as FlowgateError).message).toBe(message);
  });

  it('leaves flowgate errors and unknown failures (bugs: 500 as before) as they are', () => {
    const refusal = new FlowgateError('PERMISSION_DENIED', 'no');
    expect(storeError(refusal)).toBe(refusal);
    const bug = pgError('42P01', 'relation "nope" does not exist');
    expect(storeError(bug)).toBe(bug);
    const constraint = pgError('23503', 'violates foreign key constraint');
    expect(storeError(constraint)).toBe(constraint);
    expect(storeError('text')).toBe('text');
  });

  it('keeps passwords out of the detail it logs', () => {
    expect(redactSecrets('could not connect to postgres://flowgate:hunter2@db:5432/fg')).toBe('could not connect to postgres://flowgate:***@db:5432/fg');
    expect(redactSecrets('host=db password=hunter2 user=x')).toBe('host=db password=*** user=x');
    expect(new StoreUnavailableError('ECONNRESET: postgresql://u:p4ss@h/d').detail).not.toContain('p4ss');
  });
});

describe('the embedded store says what failed', () => {
  it('a duplicate insert is a 409 and a full file a 503 (PRAGMA max_page_count standing in for a full disk)', async () => {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT NOT NULL UNIQUE, bio TEXT)');
    const sql = sqliteSql(db);
    try {
      await sql.run('INSERT INTO users (username) VALUES (?)', ['alice']);
      await expect(sql.run('INSERT INTO users (username) VALUES (?)', ['alice'])).rejects.toBeInstanceOf(StoreDuplicateError);
      await expect(sql.transaction(() => sql.run('INSERT INTO users (username) VALUES (?)', ['alice']))).rejects.toMatchObject({ status: 409 });
      db.pragma(`max_page_count = ${Number(db.pragma('page_count', { simple: true }))}`);
      const big = 'x'.repeat(64 * 1024);
      await expect(sql.run('INSERT INTO users (username, bio) VALUES (?, ?)', ['bob', big])).rejects.toMatchObject({ status: 503, detail: expect.stringMatching(/^SQLITE_FULL/) });
      await expect(sql.transaction(() => sql.run('INSERT INTO users (username, bio) VALUES (?, ?)', ['carol', big]))).rejects.toBeInstanceOf(StoreUnavailableError);
      // What fits still goes in: the failure was this write's, not the store's for good.
      expect(await sql.get('SELECT count(*) AS n FROM users')).toEqual({ n: 1 });
    } finally {
      await sql.close();
    }
  });
});

describe('FLOWGATE_DATABASE_QUERY_TIMEOUT_MS', () => {
  const url = 'postgres://flowgate@db:5432/flowgate';
  it('defaults to the statement timeout + 1 s', () => {
    expect(loadConfig({ FLOWGATE_DATABASE_URL: url }).postgres.queryTimeoutMs).toBe(6000);
    expect(loadConfig({ FLOWGATE_DATABASE_URL: url, FLOWGATE_DATABASE_STATEMENT_TIMEOUT_MS: '2000' }).postgres.queryTimeoutMs).toBe(3000);
    expect(loadConfig({ FLOWGATE_DATABASE_URL: url, FLOWGATE_DATABASE_STATEMENT_TIMEOUT_MS: '2000', FLOWGATE_DATABASE_QUERY_TIMEOUT_MS: '2500' }).postgres.queryTimeoutMs).toBe(2500);
  });

  it('must be longer than the statement timeout, and a number', () => {
    expect(() => loadConfig({ FLOWGATE_DATABASE_URL: url, FLOWGATE_DATABASE_QUERY_TIMEOUT_MS: '5000' })).toThrow(
      /FLOWGATE_DATABASE_QUERY_TIMEOUT_MS: must be longer than FLOWGATE_DATABASE_STATEMENT_TIMEOUT_MS \(5000\)/,
    );
    expect(() => loadConfig({ FLOWGATE_DATABASE_QUERY_TIMEOUT_MS: 'soon' })).toThrow(ConfigError);
    expect(() => loadConfig({ FLOWGATE_DATABASE_QUERY_TIMEOUT_MS: '50' })).toThrow(/FLOWGATE_DATABASE_QUERY_TIMEOUT_MS/);
  });
});

describe('readiness with a store that never answers', () => {
  let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
  let mlflow: MlflowConnection;
  beforeAll(async () => {
    upstream = await startStubUpstream();
    mlflow = connectMlflow({ upstreamUrl: upstream.url, staticPrefix: '', timeoutMs: 5000 });
  });
  afterAll(async () => {
    await mlflow.close();
    await upstream.close();
  });

  it('is unready within its timeout, and asks the hung store once, not once per probe', async () => {
    let asked = 0;
    const check = createReadiness(
      () => {
        asked++;
        return new Promise<boolean>(() => undefined);
      },
      mlflow,
      { timeoutMs: 300, maxAgeMs: 0 },
    );
    const started = performance.now();
    expect(await check()).toEqual({ ready: false, store: false, upstream: true, reason: 'store-not-writable' });
    expect(performance.now() - started).toBeLessThan(1000);
    expect(await check()).toMatchObject({ ready: false, store: false });
    expect(asked).toBe(1);
  });

  it('is unready while the policy index may lack another process’s change, whatever the store and MLflow answer', async () => {
    let fresh = false;
    const check = createReadiness(async () => true, mlflow, { timeoutMs: 1000, maxAgeMs: 0, indexFresh: () => fresh });
    expect(await check()).toEqual({ ready: false, store: false, upstream: true, reason: 'policy-index-stale' });
    fresh = true;
    expect(await check()).toEqual({ ready: true, store: true, upstream: true });
  });
});
