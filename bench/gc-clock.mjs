// Garbage-collection time of the process it runs in, for the bench's 'stats' answers: total pause
// milliseconds and count so far, the longest pause since the previous read, and the bytes the
// process has allocated on its heap so far, and what young-generation collections (scavenges) kept
// and cost. GC time and allocation per request move far less with other load on the machine than
// throughput does; allocation and survivors not at all. A scavenge's pause grows with what it keeps
// (it copies the survivors), and a scavenge is what a request at p99 most often waits behind.
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
  let scavenges = 0;
  let scavengeUs = 0;
  let survivedBytes = 0;
  const newSpaceUsed = (spaces) => spaces.find((sp) => sp.spaceName === 'new_space')?.spaceUsedSize ?? 0;
  function readAllocated() {
    const { statistics } = profiler.stop();
    profiler.start();
    for (const gc of statistics) {
      allocated += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - usedSince);
      usedSince = gc.afterGC.heapStatistics.usedHeapSize;
      if (gc.gcType === 'Scavenge') {
        scavenges++;
        scavengeUs += gc.cost;
        survivedBytes += newSpaceUsed(gc.afterGC.heapSpaceStatistics);
      }
    }
    const used = v8.getHeapStatistics().used_heap_size;
    allocated += Math.max(0, used - usedSince);
    usedSince = used;
    return allocated;
  }

  return () => {
    const read = { ms, count, maxMs, allocatedBytes: readAllocated(), scavenges, scavengeUs, survivedBytes };
    maxMs = 0;
    return read;
  };
}
