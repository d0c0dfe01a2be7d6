import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { clusterNamesOf } from '../../src/bearer/cluster-names.js';
import { createLogger } from '../../src/logging.js';
import { createDirectory, type Directory } from '../../src/principals/directory.js';
import { createPrincipalWriter } from '../../src/principals/principal-writer.js';
import { createUserSwitch } from '../../src/principals/user-switch.js';
import { createScim } from '../../src/scim/index.js';
import { openSqliteStore } from '../../src/store/database.js';
import type { Sql } from '../../src/store/sql.js';
import { openStore } from '../../src/store/store.js';
import { removeDir } from '../helpers/flowgate.js';
import { GROUP_SCHEMA, PATCH_OP, SCIM_JSON, USER_SCHEMA } from '../helpers/scim.js';
import { onPostgres } from '../helpers/test-store.js';

/**
 * Two SCIM PATCHes of one resource at once. scimmy's PATCH reads the resource, applies its
 * operations to what it read and writes the whole back; without a lock the later write puts back
 * what the earlier one changed. The race is made certain: the first PATCH is held just after its
 * read (of the group's members, of the user) until the second has read too (or 400 ms passed), and
 * the second, after its read, until the first has answered. Without serialization both read the same state and the second writes over
 * the first; with it the second reads only once the first has committed (the first's wait times out).
 *
 * On SQLite both requests go through one store (one flowgate: SQLite has one). With
 * FLOWGATE_TEST_STORE=postgres each goes through a flowgate of its own, each with its own
 * connection pool on one database, as replicas do.
 */
const TOKEN = 'scim-race-token-0123456789abcdef0123456789ab';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Which of the two racing requests a call belongs to (the test server runs each under its x-race header). */
const racer = new AsyncLocalStorage<string>();

/** Holds each racer's first read, as described above; every later call passes. */
function raceGate() {
  const seen = new Set<string>();
  let firstArrived!: () => void;
  let secondArrived!: () => void;
  const first = new Promise<void>((r) => (firstArrived = r));
  const second = new Promise<void>((r) => (secondArrived = r));
  let firstAnswered: Promise<unknown> = Promise.resolve();
  return {
    /** Resolves once the first request has read (and waits). */
    first,
    answered(p: Promise<unknown>): void {
      firstAnswered = p;
    },
    async pass(): Promise<void> {
      const me = racer.getStore();
      if ((me !== 'first' && me !== 'second') || seen.has(me)) return;
      seen.add(me);
      if (me === 'first') {
        firstArrived();
        await Promise.race([second, sleep(400)]);
      } else {
        secondArrived();
        await Promise.race([firstAnswered.catch(() => undefined), sleep(3000)]);
      }
    },
  };
}
type Gate = ReturnType<typeof raceGate>;

/** The directory with `method` held by the gate just after it read. */
function gated(directory: Directory, method: 'userById' | 'membersOfGroup', gate: Gate): Directory {
  return new Proxy(directory, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== method || typeof v !== 'function') return v;
      return async (...args: unknown[]) => {
        const read = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        await gate.pass();
        return read;
      };
    },
  });
}

interface Flowgate {
  readonly url: string;
  readonly directory: Directory;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** One store per flowgate given: SQLite, one in-memory store shared; PostgreSQL, a pool each on one new database. */
async function stores(n: number): Promise<Sql[]> {
  if (!onPostgres()) {
    const sql = openSqliteStore(':memory:');
    cleanups.push(() => sql.close());
    return Array.from({ length: n }, () => sql);
  }
  const server = process.env.FLOWGATE_TEST_POSTGRES_URL!;
  const name = `fg_race_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`).finally(() => admin.end());
  const url = new URL(server);
  url.pathname = `/${name}`;
  const out: Sql[] = [];
  for (let i = 0; i < n; i++) {
    const opened = await openStore({ dbPath: 'unused', databaseUrl: url.toString(), watchMs: 0, postgres: { poolSize: 4, statementTimeoutMs: 5000, connectTimeoutMs: 5000 } });
    cleanups.push(() => opened.close());
    out.push(opened.sql);
  }
  return out;
}

/** A flowgate's SCIM alone, on `sql`, its directory's `method` held by `gate`. */
async function scimOn(sql: Sql, method: 'userById' | 'membersOfGroup', gate: Gate): Promise<Flowgate> {
  const dir = mkdtempSync(join(tmpdir(), 'scim-race-'));
  cleanups.push(async () => removeDir(dir));
  writeFileSync(join(dir, 'token'), TOKEN);
  const plain = createDirectory(sql);
  const directory = gated(plain, method, gate);
  const principalWriter = createPrincipalWriter({ sql, directory, audit: createAuditLog(sql), bootstrapAdmin: 'admin' });
  const quiet = new Writable({ write: (_c, _e, cb) => cb() });
  const { ownRoute } = createScim({
    config: { tokenFile: join(dir, 'token'), graceSeconds: 0, ratePerSecond: 1000, burst: 1000 },
    basePath: '',
    maxBodyBytes: 1 << 20,
    sql,
    directory,
    principalWriter,
    setActive: createUserSwitch({ principalWriter, revokeTokens: async () => 0, endSessionsOf: async () => 0, forgetUser: () => undefined, principalsChanged: () => undefined }),
    principalsChanged: () => undefined,
    policyChanged: async () => undefined,
    forgetUser: () => undefined,
    endSessionsOf: async () => 0,
    signIn: 'local',
    protectedAdmin: 'admin',
    clusterNames: clusterNamesOf(undefined),
    logger: createLogger('silent', quiet),
  });
  const server: Server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    const name = req.headers['x-race'];
    void racer.run(typeof name === 'string' ? name : '', async () => ownRoute(req, res, { path: u.pathname, search: u.search, requestId: 'r' })).then((answered) => {
      if (!answered) res.writeHead(404).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, directory: plain };
}

async function call(fg: Flowgate, method: string, path: string, body?: object, as = ''): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${fg.url}/scim/v2${path}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': SCIM_JSON, 'X-Race': as },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  return { status: r.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}
const patch = (fg: Flowgate, path: string, ops: object[], as: 'first' | 'second') => call(fg, 'PATCH', path, { schemas: [PATCH_OP], Operations: ops }, as);

/** Starts `first`, waits until it has read, then starts `second`; both answers. */
async function race<T>(gate: Gate, first: () => Promise<T>, second: () => Promise<T>): Promise<[T, T]> {
  const a = first();
  gate.answered(a);
  await gate.first;
  const b = second();
  return Promise.all([a, b]);
}

describe('concurrent SCIM PATCHes of one resource', () => {
  it('a group: "remove member X" and "add member Y" at once leave Y alone, X out (X kept the group and its grants without serialization)', async () => {
    const gate = raceGate();
    const [sqlA, sqlB] = await stores(2);
    const a = await scimOn(sqlA!, 'membersOfGroup', gate);
    const b = await scimOn(sqlB!, 'membersOfGroup', gate);
    const x = (await call(a, 'POST', '/Users', { schemas: [USER_SCHEMA], userName: 'race-x' })).body.id as string;
    const y = (await call(a, 'POST', '/Users', { schemas: [USER_SCHEMA], userName: 'race-y' })).body.id as string;
    const made = await call(a, 'POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'race-team', members: [{ value: x }] });
    expect(made.status).toBe(201);
    const id = made.body.id as string;

    const [removed, added] = await race(
      gate,
      () => patch(a, `/Groups/${id}`, [{ op: 'remove', path: `members[value eq "${x}"]` }], 'first'),
      () => patch(b, `/Groups/${id}`, [{ op: 'add', path: 'members', value: [{ value: y }] }], 'second'),
    );
    expect([removed.status, added.status]).toEqual([200, 200]);
    const members = (await a.directory.membersOfGroup(Number(id))).map((u) => u.username).sort();
    expect(members).toEqual(['race-y']);
    expect(((added.body.members ?? []) as { value: string }[]).map((m) => m.value)).toEqual([y]);
  });

  it('a user: "active: false" and a displayName change at once leave the user disabled (the second re-enabled them without serialization)', async () => {
    const gate = raceGate();
    const [sqlA, sqlB] = await stores(2);
    const a = await scimOn(sqlA!, 'userById', gate);
    const b = await scimOn(sqlB!, 'userById', gate);
    const id = (await call(a, 'POST', '/Users', { schemas: [USER_SCHEMA], userName: 'race-gone', displayName: 'Before' })).body.id as string;

    const [off, renamed] = await race(
      gate,
      () => patch(a, `/Users/${id}`, [{ op: 'replace', path: 'active', value: false }], 'first'),
      () => patch(b, `/Users/${id}`, [{ op: 'replace', path: 'displayName', value: 'After' }], 'second'),
    );
    expect([off.status, renamed.status]).toEqual([200, 200]);
    const user = (await a.directory.userById(Number(id)))!;
    expect({ disabled: user.disabledAt !== null, disabledBy: user.disabledBy, displayName: user.displayName }).toEqual({ disabled: true, disabledBy: 'scim', displayName: 'After' });
    expect(renamed.body.active).toBe(false);
  });
});
