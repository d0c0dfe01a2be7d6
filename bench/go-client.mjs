// The Go load client (bench/loadgen) behind the interface run.mjs uses for a forked bench/load.mjs:
// send(message), 'message' and 'exit' events, kill(), pid. Messages travel as JSON lines.
import { execFileSync, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** Builds the client into `outDir`; undefined (with the reason) when Go is missing or the build fails. */
export function buildGoClient(sourceDir, outDir) {
  const binary = join(outDir, 'loadgen');
  try {
    execFileSync('go', ['build', '-o', binary, '.'], { cwd: sourceDir, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, CGO_ENABLED: '0' } });
    return { binary };
  } catch (e) {
    return { reason: e.code === 'ENOENT' ? 'no Go toolchain on PATH' : String(e.stderr ?? e.message).trim().split('\n')[0] };
  }
}

/**
 * Two Go threads: the sender sleeps in the kernel on a thread of its own, and the answers are read on
 * another, so that neither waits for the other on the client's core.
 */
export function spawnGoClient(binary) {
  const proc = spawn(binary, [], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, GOMAXPROCS: '2' } });
  const client = new EventEmitter();
  createInterface({ input: proc.stdout }).on('line', (line) => client.emit('message', JSON.parse(line)));
  proc.on('exit', (code) => client.emit('exit', code));
  proc.stdin.on('error', () => undefined);
  client.pid = proc.pid;
  client.send = (message) => proc.stdin.write(`${JSON.stringify(message)}\n`);
  client.kill = (signal) => proc.kill(signal);
  return client;
}
