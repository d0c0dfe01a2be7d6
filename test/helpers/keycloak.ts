import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './mlflow-server.js';
import { superviseGroup } from './process-group.js';

/** A Keycloak 26 release Maven Central serves (keycloak-quarkus-dist, the server distribution). */
export const KEYCLOAK_VERSION = process.env.FLOWGATE_KEYCLOAK_VERSION ?? '26.5.6';
const ADMIN = { username: 'kc-admin', password: 'kc-admin-password-for-tests' };

const run = (cmd: string, args: string[], opts: { cwd?: string; timeout?: number } = {}) =>
  new Promise<{ code: number; out: string }>((resolve) => {
    execFile(cmd, args, { ...opts, maxBuffer: 8 << 20 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });

/**
 * The Keycloak distribution under ~/.cache/flowgate/keycloak-<version>, downloaded once from Maven
 * Central with `mvn dependency:copy` and reused after. Resolves to the directory, or to a reason
 * it cannot be had here (no Java 17+, no Maven, no download).
 */
export async function keycloakHome(): Promise<{ home: string } | { unavailable: string }> {
  const java = await run('java', ['-version']);
  const major = /version "(\d+)/.exec(java.out)?.[1];
  if (java.code !== 0 || !major || Number(major) < 17) return { unavailable: `Keycloak 26 needs Java 17 or later; java -version said: ${java.out.trim() || 'no java'}` };
  const cache = join(homedir(), '.cache', 'flowgate');
  const home = join(cache, `keycloak-${KEYCLOAK_VERSION}`);
  if (existsSync(join(home, 'bin', 'kc.sh'))) return { home };

  const download = join(cache, `keycloak-${KEYCLOAK_VERSION}.download`);
  rmSync(download, { recursive: true, force: true });
  mkdirSync(download, { recursive: true });
  const artifact = `org.keycloak:keycloak-quarkus-dist:${KEYCLOAK_VERSION}:tar.gz`;
  const got = await run('mvn', ['-q', '-B', 'dependency:copy', `-Dartifact=${artifact}`, `-DoutputDirectory=${download}`], { cwd: download, timeout: 900_000 });
  const archive = readdirSync(download).find((f) => f.endsWith('.tar.gz'));
  if (got.code !== 0 || !archive) return { unavailable: `could not download ${artifact} with Maven: ${got.out.slice(-800)}` };
  const unpacked = join(download, 'dist');
  mkdirSync(unpacked);
  const tar = await run('tar', ['-xzf', join(download, archive), '-C', unpacked, '--strip-components=1']);
  if (tar.code !== 0) return { unavailable: `could not unpack ${archive}: ${tar.out}` };
  rmSync(home, { recursive: true, force: true });
  renameSync(unpacked, home);
  rmSync(download, { recursive: true, force: true });
  return { home };
}

export interface Keycloak {
  readonly url: string;
  /** The issuer of the realm imported at start. */
  readonly issuer: string;
  /** Calls the admin REST API of the imported realm (`/admin/realms/<realm>` + path). */
  admin(method: string, path: string, body?: unknown): Promise<Response>;
  logs(): string;
  stop(): Promise<void>;
}

/**
 * `kc.sh start-dev` on a free 127.0.0.1 port with an in-memory database, then the realm in
 * `realmFile` (a test fixture, `${placeholders}` replaced from `values`) imported through the
 * admin API.
 */
export async function startKeycloak(home: string, realmFile: string, values: Record<string, string>, startTimeoutMs = 300_000): Promise<Keycloak> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    join(home, 'bin', 'kc.sh'),
    ['start-dev', '--http-host=127.0.0.1', `--http-port=${port}`, '--db=dev-mem', '--health-enabled=false', '--metrics-enabled=false'],
    {
      env: { ...process.env, KC_BOOTSTRAP_ADMIN_USERNAME: ADMIN.username, KC_BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  const { logs, stop } = superviseGroup(child, 300, 10_000);

  try {
    const deadline = Date.now() + startTimeoutMs;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`Keycloak exited early (${child.exitCode}):\n${logs()}`);
      if (Date.now() > deadline) throw new Error(`Keycloak did not start within ${startTimeoutMs} ms:\n${logs()}`);
      const r = await fetch(`${url}/realms/master/.well-known/openid-configuration`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined);
      if (r?.ok) break;
      await new Promise((r) => setTimeout(r, 1_000));
    }
    const adminToken = async () => {
      const r = await fetch(`${url}/realms/master/protocol/openid-connect/token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'password', client_id: 'admin-cli', ...ADMIN }),
      });
      if (!r.ok) throw new Error(`Keycloak admin token: ${r.status} ${await r.text()}`);
      return ((await r.json()) as { access_token: string }).access_token;
    };
    const realm = JSON.parse(
      readFileSync(realmFile, 'utf8').replace(/\$\{(\w+)\}/g, (whole, name: string) => values[name] ?? whole),
    ) as { realm: string };
    const call = async (method: string, path: string, body?: unknown) =>
      fetch(`${url}/admin/realms${path}`, {
        method,
        headers: { authorization: `Bearer ${await adminToken()}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const imported = await call('POST', '', realm);
    if (imported.status !== 201) throw new Error(`Keycloak realm import: ${imported.status} ${await imported.text()}`);
    return {
      url,
      issuer: `${url}/realms/${realm.realm}`,
      admin: (method, path, body) => call(method, `/${realm.realm}${path}`, body),
      logs,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
