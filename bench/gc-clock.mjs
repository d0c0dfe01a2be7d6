// Garbage-collection time of the process it runs in, for the bench's 'stats' answers: total pause
// milliseconds and count so far, and the longest pause since the previous read. GC time per request
// moves far less with other load on the machine than throughput does.
import { PerformanceObserver } from 'node:perf_hooks';

export function gcClock() {
  let ms = 0;
  let count = 0;
  let maxMs = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      ms += e.duration;
      count++;
      if (e.duration > maxMs) maxMs = e.duration;
    }
  }).observe({ entryTypes: ['gc'] });
  return () => {
    const read = { ms, count, maxMs };
    maxMs = 0;
    return read;
  };
}
