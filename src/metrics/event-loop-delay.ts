import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';
import { sleepingInterval } from '../sleeping-interval.js';

/** The gauges prom-client's default metrics fill from their own sampler, which flowgate replaces with this one. */
export const EVENT_LOOP_DELAY_GAUGES = {
  nodejs_eventloop_lag_min_seconds: 'The minimum recorded event loop delay.',
  nodejs_eventloop_lag_max_seconds: 'The maximum recorded event loop delay.',
  nodejs_eventloop_lag_mean_seconds: 'The mean of the recorded event loop delays.',
  nodejs_eventloop_lag_stddev_seconds: 'The standard deviation of the recorded event loop delays.',
  nodejs_eventloop_lag_p50_seconds: 'The 50th percentile of the recorded event loop delays.',
  nodejs_eventloop_lag_p90_seconds: 'The 90th percentile of the recorded event loop delays.',
  nodejs_eventloop_lag_p99_seconds: 'The 99th percentile of the recorded event loop delays.',
} as const;

export interface EventLoopDelay {
  /** A request came in: sampling starts if it slept. */
  requestStarted(): void;
  requestEnded(): void;
}

/**
 * The event loop's delay, sampled every `resolutionMs` (Node's own default, 10 ms) while flowgate has
 * requests, and not at all once a whole `idleAfterMs` passed with none: a sampler that never sleeps
 * wakes an idle process `1000 / resolutionMs` times a second, which was most of flowgate's idle CPU
 * (docs/performance.md, "Idle CPU"). Each scrape reports the delays since the one before, as
 * prom-client's sampler did; a span with no requests, so no samples, reports 0.
 */
export function eventLoopDelay(registers: Registry[], resolutionMs = 10, idleAfterMs = 1000): EventLoopDelay {
  const histogram = monitorEventLoopDelay({ resolution: resolutionMs });
  let sampling = false;
  let requestsSeen = false;
  let inFlight = 0;
  const idleWatch = sleepingInterval(() => {
    if (requestsSeen || inFlight > 0) {
      requestsSeen = false;
      return true;
    }
    histogram.disable();
    sampling = false;
    return false;
  }, idleAfterMs);

  // The first gauge's collect (run at each scrape, before the others are read) fills them all, then
  // starts the next span afresh.
  const collect = (): void => {
    const sampled = histogram.count > 0;
    const seconds = (ns: number) => (sampled ? ns / 1e9 : 0);
    gauges.nodejs_eventloop_lag_min_seconds.set(seconds(histogram.min));
    gauges.nodejs_eventloop_lag_max_seconds.set(seconds(histogram.max));
    gauges.nodejs_eventloop_lag_mean_seconds.set(seconds(histogram.mean));
    gauges.nodejs_eventloop_lag_stddev_seconds.set(seconds(histogram.stddev));
    gauges.nodejs_eventloop_lag_p50_seconds.set(seconds(histogram.percentile(50)));
    gauges.nodejs_eventloop_lag_p90_seconds.set(seconds(histogram.percentile(90)));
    gauges.nodejs_eventloop_lag_p99_seconds.set(seconds(histogram.percentile(99)));
    histogram.reset();
  };
  const gauges = Object.fromEntries(
    Object.entries(EVENT_LOOP_DELAY_GAUGES).map(([name, help], i) => [name, new Gauge({ name, help, registers, ...(i === 0 ? { collect } : {}) })]),
  ) as Record<keyof typeof EVENT_LOOP_DELAY_GAUGES, Gauge>;

  return {
    requestStarted() {
      inFlight++;
      requestsSeen = true;
      if (sampling) return;
      sampling = true;
      histogram.enable();
      idleWatch.wake();
    },
    requestEnded() {
      inFlight--;
    },
  };
}
