export interface SleepingInterval {
  /** Starts the timer if it sleeps; on a running one it is a single comparison, cheap enough for every request. */
  wake(): void;
  stop(): void;
}

/**
 * A repeating timer for work that exists only while something goes on (calls to watch, log lines to
 * hand on): `tick` returns whether there is still something to look after, and a tick that finds
 * nothing puts the timer to sleep until `wake()`. An idle process then has no timer waking it, which
 * is what keeps its idle CPU at a bare proxy's (docs/performance.md, "Idle CPU"). The timer is unref'd.
 */
export function sleepingInterval(tick: () => boolean, everyMs: number): SleepingInterval {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const run = (): void => {
    if (tick() || timer === undefined) return;
    clearInterval(timer);
    timer = undefined;
  };
  return {
    wake() {
      if (timer !== undefined || stopped) return;
      timer = setInterval(run, everyMs);
      timer.unref();
    },
    stop() {
      stopped = true;
      clearInterval(timer);
      timer = undefined;
    },
  };
}
