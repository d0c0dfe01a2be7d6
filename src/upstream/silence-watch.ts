import { sleepingInterval } from '../sleeping-interval.js';

/** A call to MLflow that is waiting to hear from it and can be given up on. */
export interface Listening {
  /** When MLflow was last heard from on this call (or the call was sent), in `now()`'s milliseconds. */
  lastHeard: number;
  /** The watch's own links: the calls being watched form a list through their handlers. */
  watchPrev: Listening | undefined;
  watchNext: Listening | undefined;
  /** True while flowgate itself holds MLflow back (its client reads slowly): MLflow is not silent then. */
  readonly heldBack?: boolean;
  giveUp(err: Error): void;
}

/** What a call given up on is failed with; `upstreamFailure` answers it with 504. */
export class UpstreamSilentError extends Error {
  readonly code = 'FLOWGATE_UPSTREAM_SILENT';
  constructor(timeoutMs: number) {
    super(`MLflow sent nothing for ${timeoutMs} ms`);
    this.name = 'UpstreamSilentError';
  }
}

export interface SilenceWatch {
  readonly timeoutMs: number;
  /** Starts watching a call just sent. */
  watch(call: Listening): void;
  /** The call is over (answered or failed). */
  done(call: Listening): void;
  /** Calls being watched now. */
  readonly watching: number;
  close(): void;
}

/**
 * One timer for every call to MLflow: a call that hears nothing for `timeoutMs` (no headers yet, or no
 * next piece of the answer) is given up on. It stands in for undici's per-call header and body timers,
 * whose timer objects outlive their calls into the old generation; the calls watched form a list
 * through their own handlers, so watching allocates nothing per call (docs/performance.md, "Full
 * collections"). Checked a few times per timeout and at least every second, as undici's timers are,
 * while any call is watched: with none the timer sleeps until the next call.
 */
export function createSilenceWatch(timeoutMs: number, now: () => number = Date.now): SilenceWatch {
  let first: Listening | undefined;
  let size = 0;
  const unlink = (call: Listening) => {
    const { watchPrev: prev, watchNext: next } = call;
    if (prev === undefined && first !== call) return; // not watched
    if (prev) prev.watchNext = next;
    else first = next;
    if (next) next.watchPrev = prev;
    call.watchPrev = call.watchNext = undefined;
    size--;
  };
  const sweep = () => {
    const t = now();
    for (let call = first; call !== undefined; ) {
      const next = call.watchNext;
      if (call.heldBack) call.lastHeard = t;
      else if (t - call.lastHeard >= timeoutMs) {
        unlink(call);
        call.giveUp(new UpstreamSilentError(timeoutMs));
      }
      call = next;
    }
  };
  const timer = sleepingInterval(
    () => {
      sweep();
      return size > 0;
    },
    Math.max(10, Math.min(1000, Math.floor(timeoutMs / 4))),
  );
  return {
    timeoutMs,
    watch(call) {
      timer.wake();
      unlink(call);
      call.lastHeard = now();
      call.watchNext = first;
      if (first) first.watchPrev = call;
      first = call;
      size++;
    },
    done: unlink,
    get watching() {
      return size;
    },
    close() {
      timer.stop();
      while (first) unlink(first);
    },
  };
}
