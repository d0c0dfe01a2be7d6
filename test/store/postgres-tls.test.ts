import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
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
      return { ssl: 'on', ssl_cert_file: join(dir, 'server.crt'), ssl_key_file: join(dir, 'server.key') };
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

  it('refuses a server whose certificate another CA signed', async () => {
    const url = await server.createDatabase();
    const config = tlsConfig(url, join(certs, 'other.crt'));
    await expect(openStore({ dbPath: '', databaseUrl: config.databaseUrl, watchMs: 0, postgres: config.postgres })).rejects.toThrow(/self[- ]signed|unable to verify|certificate/i);
  });
});
