import pino, { type Logger } from 'pino';

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

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'flowgate' },
      redact: { paths: REDACT, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}
