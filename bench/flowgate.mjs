// flowgate from dist/, in its own process, configured from the environment like the CLI; logs at
// info (one JSON line per request) to the stdout the parent points at /dev/null.
import { gcClock } from './gc-clock.mjs';

// BENCH_DIST: another build's dist/ (bench/ab.mjs runs two builds side by side).
const dist = process.env.BENCH_DIST ?? new URL('../dist', import.meta.url).pathname;
const { loadConfig } = await import(`${dist}/config.js`);
const { startFlowgate } = await import(`${dist}/main.js`);

const readGc = gcClock({ detail: process.env.BENCH_GC_DETAIL === '1' });

const config = loadConfig(process.env);
const fg = await startFlowgate(config);
process.send?.({ url: fg.url, metricsUrl: fg.metricsUrl });
process.on('message', (m) => {
  if (m === 'stats') process.send?.({ maxRss: process.resourceUsage().maxRSS * 1024, rss: process.memoryUsage().rss, cpu: process.cpuUsage(), gc: readGc() });
});
process.on('disconnect', () => {
  fg.close().finally(() => process.exit(0));
});
