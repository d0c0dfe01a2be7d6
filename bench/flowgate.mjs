// flowgate from dist/, in its own process, configured from the environment like the CLI; logs at
// info (one JSON line per request) to the stdout the parent points at /dev/null.
import { loadConfig } from '../dist/config.js';
import { startFlowgate } from '../dist/main.js';
import { gcClock } from './gc-clock.mjs';

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
