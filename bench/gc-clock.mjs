// Garbage-collection time of the process it runs in, for the bench's 'stats' answers: total pause
// milliseconds and count so far, the longest pause since the previous read, young-generation
// collections (scavenges) and their pauses, and with `detail` the bytes the process has allocated on
// its heap so far and what the scavenges kept. GC time and allocation per request move far less with
// other load on the machine than throughput does; allocation and survivors not at all. A scavenge's
// pause grows with what it keeps (it copies the survivors), and a scavenge is what a request at p99
// most often waits behind.
import { PerformanceObserver, constants } from 'node:perf_hooks';
import v8 from 'node:v8';

/**
 * `detail` adds what only v8.GCProfiler tells: bytes allocated and what each scavenge kept. It is off
 * by default because the profiler grows the native heap of the process it runs in and never gives it
 * back: in a scratch run of 6 s saturated rounds, each stop() left the malloc heap ~1.3 MB larger
 * (2 MB → 14 MB in ten rounds; without the profiler it stayed at 6.5 MB), and stopping it more often
 * grew it faster. A bench run read it ~100 times per server, so the peak RSS it reported was partly
 * the profiler's. Scavenge counts and pauses come from the 'gc' performance entries, which cost nothing
 * of the kind.
 */
export function gcClock({ detail = false } = {}) {
  let ms = 0;
  let count = 0;
  let maxMs = 0;
  let scavenges = 0;
  let scavengeUs = 0;
  let fullCollections = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      ms += e.duration;
      count++;
      if (e.duration > maxMs) maxMs = e.duration;
      if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) {
        scavenges++;
        scavengeUs += e.duration * 1000;
      } else if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR || e.detail?.kind === constants.NODE_PERFORMANCE_GC_INCREMENTAL) fullCollections++;
    }
  }).observe({ entryTypes: ['gc'] });
  const readDetail = detail ? gcDetail() : () => ({});

  return () => {
    const read = { ms, count, maxMs, scavenges, scavengeUs, fullCollections, ...readDetail() };
    maxMs = 0;
    return read;
  };
}

/** Allocated bytes and scavenge survivors so far, from v8.GCProfiler (see above for its cost). */
function gcDetail() {
  // Allocated = what the heap grew by between collections: for each GC, its used size before it
  // minus the used size after the previous one (or at the previous read), plus the growth since.
  const profiler = new v8.GCProfiler();
  profiler.start();
  let allocatedBytes = 0;
  let usedSince = v8.getHeapStatistics().used_heap_size;
  let survivedBytes = 0;
  const newSpaceUsed = (spaces) => spaces.find((sp) => sp.spaceName === 'new_space')?.spaceUsedSize ?? 0;
  return () => {
    const { statistics } = profiler.stop();
    profiler.start();
    for (const gc of statistics) {
      allocatedBytes += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - usedSince);
      usedSince = gc.afterGC.heapStatistics.usedHeapSize;
      if (gc.gcType === 'Scavenge') survivedBytes += newSpaceUsed(gc.afterGC.heapSpaceStatistics);
    }
    const used = v8.getHeapStatistics().used_heap_size;
    allocatedBytes += Math.max(0, used - usedSince);
    usedSince = used;
    return { allocatedBytes, survivedBytes };
  };
}
