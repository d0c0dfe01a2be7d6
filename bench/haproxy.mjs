// The reference row (h): HAProxy (Debian's package), one thread, keep-alive to the same upstream: what
// a proxy hop costs on this machine when the proxy is written in C. It runs as a child of this
// wrapper, which answers the bench's 'stats' with HAProxy's own CPU time and peak RSS (/proc) and
// pins it along with itself.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const upstream = new URL(process.argv[2]);
/** A free loopback port, chosen by the bench (its freePort). */
const port = Number(process.argv[3]);
const dir = mkdtempSync(join(tmpdir(), 'flowgate-bench-haproxy-'));
const config = join(dir, 'haproxy.cfg');
writeFileSync(
  config,
  [
    'global',
    '  nbthread 1',
    '  maxconn 4096',
    'defaults',
    '  mode http',
    '  timeout connect 5s',
    '  timeout client 120s',
    '  timeout server 120s',
    '  option http-keep-alive',
    'frontend bench',
    `  bind 127.0.0.1:${port}`,
    '  default_backend upstream',
    'backend upstream',
    '  http-reuse always',
    `  server upstream ${upstream.hostname}:${upstream.port}`,
    '',
  ].join('\n'),
);
const haproxy = spawn('haproxy', ['-db', '-f', config], { stdio: ['ignore', 'ignore', 'inherit'] });
haproxy.on('exit', (code) => {
  rmSync(dir, { recursive: true, force: true });
  if (code !== null && code !== 0) process.exit(1);
});

/** Waits until HAProxy accepts connections on its port. */
async function listening() {
  for (let i = 0; i < 100; i++) {
    const up = await new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('haproxy did not start listening');
}
await listening();

const TICK_US = 1e6 / Number(execFileSync('getconf', ['CLK_TCK']).toString().trim() || 100);
function cpu() {
  // utime and stime are the 14th and 15th fields of /proc/<pid>/stat, in clock ticks.
  const fields = readFileSync(`/proc/${haproxy.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return { user: Number(fields[11]) * TICK_US, system: Number(fields[12]) * TICK_US };
}
function peakRss() {
  const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${haproxy.pid}/status`, 'utf8'));
  return hwm ? Number(hwm[1]) * 1024 : 0;
}

process.send?.({ port, pid: haproxy.pid });
process.on('message', (m) => {
  if (m === 'stats') process.send?.({ maxRss: peakRss(), rss: peakRss(), cpu: cpu() });
});
const stop = () => {
  haproxy.kill();
  process.exit(0);
};
process.on('disconnect', stop);
process.on('exit', () => haproxy.kill());
process.on('SIGTERM', stop);
