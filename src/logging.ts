import pino, { type Logger } from 'pino';
import { batchedDestination } from './log-batching.js';

export type { Logger };

/**
 * Paths pino replaces before a line is written, so a credential that reaches a log call by
 * mistake still never lands in the output.
 */
const REDACT = [
  'token',
  'password',
  'secret',
  '*.token',
  '*.password',
  '*.secret',
  'headers.authorization',
  'headers.cookie',
  'headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
];

let isoSecond = -1;
let isoPrefix = '';

/**
 * pino's `isoTime` builds a Date and formats it for every line; the second's prefix changes once a
 * second, so it is formatted once and only the milliseconds are appended. Same output.
 */
export function isoTimestamp(now = Date.now()): string {
  const second = Math.floor(now / 1000);
  if (second !== isoSecond) {
    isoSecond = second;
    isoPrefix = new Date(second * 1000).toISOString().slice(0, 20);
  }
  const ms = now - second * 1000;
  return `,"time":"${isoPrefix}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z"`;
}

/**
 * Without a destination, logs go to stdout in batches (log-batching.ts), so a request line costs no
 * write of its own. A batch is written at least once a second and at exit, so an orderly stop loses
 * no line. Batches are written synchronously, as pino's own destination does by default: an
 * asynchronous write hands each batch to a libuv thread, which on a one-core sidecar takes its turn
 * from the requests (docs/performance.md). The request line is written to this logger's destination in
 * its format, without pino's serializer (src/proxy/request-log.ts).
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  destination ??= batchedDestination(pino.destination({ dest: 1, sync: true }));
  return pino(
    {
      level,
      base: { service: 'flowgate' },
      redact: { paths: REDACT, censor: '[redacted]' },
      timestamp: () => isoTimestamp(),
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}

