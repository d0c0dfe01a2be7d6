// The baseline: a bare http-proxy-3 pass-through with the same keep-alive agent settings as flowgate.
import { Agent, createServer } from 'node:http';
import { createProxyServer } from 'http-proxy-3';
import { gcClock } from './gc-clock.mjs';

const readGc = gcClock({ detail: process.env.BENCH_GC_DETAIL === '1' });

const target = process.argv[2];
const agent = new Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64 });
const proxy = createProxyServer({ target, agent, xfwd: true });
proxy.on('error', (_err, _req, res) => {
  if (res && 'writeHead' in res && !res.headersSent) res.writeHead(502).end();
  else res?.destroy();
});
const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, (req, res) => proxy.web(req, res));
server.listen(0, '127.0.0.1', () => process.send?.({ port: server.address().port }));
process.on('message', (m) => {
  if (m === 'stats') process.send?.({ maxRss: process.resourceUsage().maxRSS * 1024, rss: process.memoryUsage().rss, cpu: process.cpuUsage(), gc: readGc() });
});
process.on('disconnect', () => process.exit(0));
