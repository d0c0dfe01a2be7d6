import type pino from 'pino';
import { sleepingInterval } from './sleeping-interval.js';

type SonicBoom = ReturnType<typeof pino.destination>;

/** Lines are handed to the writer in batches of about this many characters. */
const BATCH_CHARS = 8192;

/**
 * Gathers log lines and hands them to sonic-boom a batch at a time. sonic-boom's own `minLength`
 * buffering measures the UTF-8 length of its whole pending buffer on every line; here a line is one
 * string append, and sonic-boom measures each batch once.
 */
export function batchedDestination(sink: SonicBoom, flushEveryMs = 1000): { write(line: string): void } {
  let pending = '';
  const hand = () => {
    if (pending === '') return;
    const batch = pending;
    pending = '';
    sink.write(batch);
  };
  // A quiet server still shows its lines within a second; a silent one has no timer at all.
  const timer = sleepingInterval(() => {
    const had = pending !== '';
    hand();
    return had;
  }, flushEveryMs);
  process.once('exit', () => {
    hand();
    try {
      sink.flushSync();
    } catch {
      // the process is going away; nothing else can be done
    }
  });
  return {
    write(line: string): void {
      pending += line;
      if (pending.length >= BATCH_CHARS) hand();
      timer.wake();
    },
  };
}
