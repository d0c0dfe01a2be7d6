// Garbage-collection time of the process it runs in, for the bench's 'stats' answers: total pause
// milliseconds and count so far, the longest pause since the previous read, and the bytes the
// process has allocated on its heap so far. GC time and allocation per request move far less with
// other load on the machine than throughput does; allocation not at all.
import { PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';

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

  // Allocated = what the heap grew by between collections: for each GC, its used size before it
  // minus the used size after the previous one (or at the previous read), plus the growth since.
  const profiler = new v8.GCProfiler();
  profiler.start();
  let allocated = 0;
  let usedSince = v8.getHeapStatistics().used_heap_size;
  function readAllocated() {
    const { statistics } = profiler.stop();
    profiler.start();
    for (const gc of statistics) {
      allocated += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - usedSince);
      usedSince = gc.afterGC.heapStatistics.usedHeapSize;
    }
    const used = v8.getHeapStatistics().used_heap_size;
    allocated += Math.max(0, used - usedSince);
    usedSince = used;
    return allocated;
  }

  return () => {
    const read = { ms, count, maxMs, allocatedBytes: readAllocated() };
    maxMs = 0;
    return read;
  };
}
