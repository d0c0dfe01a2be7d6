import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './mlflow-server.js';

export interface PrometheusServer {
  readonly url: string;
  /** An instant query (at `time`, Unix seconds, or now); throws on anything but `status: success`. */
  query(expr: string, time?: number): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>;
  get<T>(path: string): Promise<T>;
  stop(): Promise<void>;
}

/**
 * Debian's Prometheus server on a free loopback port, scraping `targets` as job `flowgate` every
 * second and evaluating `ruleFiles` every second, with a throw-away TSDB.
 */
export async function startPrometheus(targets: readonly string[], ruleFiles: readonly string[] = []): Promise<PrometheusServer> {
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-prometheus-'));
  const port = await freePort();
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    JSON.stringify({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      rule_files: ruleFiles,
      scrape_configs: [{ job_name: 'flowgate', static_configs: [{ targets }] }],
    }),
  );
  let output = '';
  const child = spawn(
    'prometheus',
    [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', () => child.kill('SIGKILL'));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prometheus exited early (${child.exitCode}):\n${output}`);
    const ready = await fetch(`${url}/-/ready`).then((r) => r.ok, () => false);
    if (ready) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`prometheus did not become ready:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  async function get<T>(path: string): Promise<T> {
    const res = await fetch(`${url}${path}`);
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`prometheus ${path}: ${body.error ?? res.status}`);
    return body.data;
  }
  return {
    url,
    get,
    async query(expr, time) {
      const data = await get<{ result: Array<{ metric: Record<string, string>; value: [number, string] }> }>(
        `/api/v1/query?query=${encodeURIComponent(expr)}${time === undefined ? '' : `&time=${time}`}`,
      );
      return data.result;
    },
    stop,
  };
}
