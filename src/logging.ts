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
 * Without a destination, logs go to stdout in batches (see log-batching.ts): one write syscall per
 * request line cost more than the rest of flowgate's own work per request. The batch is written
 * at least once a second and at exit, so lines are not lost on an orderly stop.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  destination ??= batchedDestination(pino.destination({ dest: 1, sync: false }));
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

/**
 * The logger for the one line per request. Its fields are built one by one from values flowgate
 * controls (validated request id, route template, user name, decision, status, durations), never
 * from headers or bodies, so it skips redaction: redacting every line was a fifth of everything
 * flowgate allocated per request. Free-form log calls keep going through the redacting logger.
 */
export function requestLineLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: [] } });
}
