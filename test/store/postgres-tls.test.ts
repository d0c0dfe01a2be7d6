import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runStoreCopy } from '../../src/commands/store-copy.js';
import { loadConfig } from '../../src/config.js';
import { openSqliteStore } from '../../src/store/database.js';
import { openStore } from '../../src/store/store.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';

/** A CA and a server certificate for 127.0.0.1 signed by it, made with the machine's openssl. */
function makeCertificates(dir: string) {
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=flowgate test CA', '-keyout', 'ca.key', '-out', 'ca.crt');
  run('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', 'server.key', '-out', 'server.csr');
  const ext = join(dir, 'ext.cnf');
  execFileSync('sh', ['-c', `printf 'subjectAltName=IP:127.0.0.1\\n' > ${ext}`]);
  run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', ext, '-out', 'server.crt');
  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=another CA', '-keyout', 'other.key', '-out', 'other.crt');
}

let server: PostgresServer;
let certs: string;
beforeAll(async () => {
  certs = mkdtempSync(join(tmpdir(), 'flowgate-pg-tls-'));
  makeCertificates(certs);
  server = await startPostgres({
    prepare: ({ dir, chown }) => {
      for (const f of ['server.crt', 'server.key']) {
        const to = join(dir, f);
        execFileSync('cp', [join(certs, f), to]);
        chmodSync(to, 0o600);
        chown(to);
      }
      // TLS only for flowgate's databases, as a PostgreSQL run as docs/configuration.md says would be (the
      // helper's own start-up probe and createDatabase use the `postgres` database in the clear).
      const hba = join(dir, 'hba.conf');
      writeFileSync(hba, 'local all all trust\nhostnossl postgres all 127.0.0.1/32 trust\nhostssl all all 127.0.0.1/32 trust\n');
      chown(hba);
      return { ssl: 'on', ssl_cert_file: join(dir, 'server.crt'), ssl_key_file: join(dir, 'server.key'), hba_file: hba };
    },
  });
});
afterAll(async () => {
  await server?.stop();
  if (certs) rmSync(certs, { recursive: true, force: true });
});

const tlsConfig = (url: string, caFile: string) =>
  loadConfig({ FLOWGATE_DATABASE_URL: url, FLOWGATE_DATABASE_CA_FILE: caFile, FLOWGATE_DATABASE_CONNECT_TIMEOUT_MS: '2000' });

describe('TLS to PostgreSQL (FLOWGATE_DATABASE_CA_FILE)', () => {
  it('connects over TLS with the server certificate verified against the configured CA', async () => {
    const url = await server.createDatabase();
    const config = tlsConfig(url, join(certs, 'ca.crt'));
    expect(config.postgres.caCertificate).toBe(readFileSync(join(certs, 'ca.crt'), 'utf8'));
    const store = await openStore({ dbPath: '', databaseUrl: config.databaseUrl, watchMs: 0, postgres: config.postgres });
    try {
      const row = await store.sql.get<{ ssl: boolean }>('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
      expect(row).toEqual({ ssl: true });
    } finally {
      await store.close();
    }
  });

  it('store copy --to "$FLOWGATE_DATABASE_URL" reaches it over TLS too, with the configured CA', async () => {
    const url = await server.createDatabase();
    const source = join(certs, 'source.db');
    const sql = openSqliteStore(source);
    await sql.run("INSERT INTO users (username, display_name, created_at) VALUES ('ann', 'Ann', 1)");
    await sql.close();
    // The documented move (docs/deployment.md), with flowgate's own configuration: it connected in the clear,
    // ignoring FLOWGATE_DATABASE_CA_FILE, and this server refuses that.
    const config = tlsConfig(url, join(certs, 'ca.crt'));
    const err: string[] = [];
    const code = await runStoreCopy(['--from', `sqlite:${source}`, '--to', url], () => undefined, (t) => err.push(t), config.postgres);
    expect(err.join('')).toBe('');
    expect(code).toBe(0);
    const store = await openStore({ dbPath: '', databaseUrl: config.databaseUrl, watchMs: 0, postgres: config.postgres });
    try {
      expect(await store.sql.all('SELECT username FROM users')).toEqual([{ username: 'ann' }]);
    } finally {
      await store.close();
    }
    // And it verifies the certificate: another CA's is refused, nothing copied.
    const other = await server.createDatabase();
    const refused: string[] = [];
    expect(await runStoreCopy(['--from', `sqlite:${source}`, '--to', other], () => undefined, (t) => refused.push(t), tlsConfig(other, join(certs, 'other.crt')).postgres)).toBe(1);
    expect(refused.join('')).toMatch(/self[- ]signed|unable to verify|certificate/i);
  });

  it('refuses a server whose certificate another CA signed', async () => {
    const url = await server.createDatabase();
    const config = tlsConfig(url, join(certs, 'other.crt'));
    await expect(openStore({ dbPath: '', databaseUrl: config.databaseUrl, watchMs: 0, postgres: config.postgres })).rejects.toThrow(/self[- ]signed|unable to verify|certificate/i);
  });

  // node-postgres applied the URL's TLS settings over flowgate's `ssl`, so any sslmode dropped the CA.
  describe('with an sslmode in FLOWGATE_DATABASE_URL', () => {
    const sslOf = async (store: Awaited<ReturnType<typeof openStore>>) =>
      (await store.sql.get<{ ssl: boolean }>('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()'))?.ssl;
    const open = (config: ReturnType<typeof tlsConfig>) => openStore({ dbPath: '', databaseUrl: config.databaseUrl, watchMs: 0, postgres: config.postgres });

    it('?sslmode=verify-full (as the chart and overlay say) with the right CA connects, verified', async () => {
      const url = await server.createDatabase();
      const store = await open(tlsConfig(`${url}?sslmode=verify-full&application_name=mine`, join(certs, 'ca.crt')));
      try {
        expect(await sslOf(store)).toBe(true);
        // The URL's other parameters still apply.
        expect(await store.sql.get('SELECT current_setting($1) AS name', ['application_name'])).toEqual({ name: 'mine' });
      } finally {
        await store.close();
      }
    });

    it('?sslmode=no-verify cannot turn verification off: another CA is refused', async () => {
      // Start-up refuses this URL with a CA file (below); `store copy --to` takes a URL past that check.
      const url = await server.createDatabase();
      const { postgres } = tlsConfig(url, join(certs, 'other.crt'));
      await expect(openStore({ dbPath: '', databaseUrl: `${url}?sslmode=no-verify`, watchMs: 0, postgres })).rejects.toThrow(/self[- ]signed|unable to verify|certificate/i);
    });

    it('an sslrootcert in the URL does not replace the CA file', async () => {
      const url = await server.createDatabase();
      const config = tlsConfig(`${url}?sslmode=verify-full&sslrootcert=${encodeURIComponent(join(certs, 'ca.crt'))}`, join(certs, 'other.crt'));
      await expect(open(config)).rejects.toThrow(/self[- ]signed|unable to verify|certificate/i);
    });

    it('a URL asking for plaintext, optional or unverified TLS is refused at start, its password not echoed', () => {
      for (const query of ['sslmode=disable', 'sslmode=allow', 'sslmode=prefer', 'sslmode=no-verify', 'uselibpqcompat=true&sslmode=require', 'ssl=0']) {
        let message = '';
        try {
          tlsConfig(`postgres://flowgate:s3cret-pw@127.0.0.1:5432/flowgate?${query}`, join(certs, 'ca.crt'));
        } catch (e) {
          message = (e as Error).message;
        }
        expect(message, query).toMatch(/FLOWGATE_DATABASE_CA_FILE: .*FLOWGATE_DATABASE_URL asks for/);
        expect(message).not.toContain('s3cret-pw');
      }
      expect(tlsConfig('postgres://flowgate:pw@127.0.0.1:5432/flowgate?sslmode=verify-full', join(certs, 'ca.crt')).databaseUrl).toContain('verify-full');
    });
  });
});
