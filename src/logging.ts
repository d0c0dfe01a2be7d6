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

/**
 * Without a destination, logs go to stdout through a buffered asynchronous writer: one write
 * syscall per request line cost more than the rest of flowgate's own work per request. The buffer
 * is flushed on close and at exit, so lines are not lost on an orderly stop.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  if (!destination) {
    const stdout = pino.destination({ dest: 1, sync: false, minLength: 8192 });
    const flush = () => {
      try {
        stdout.flush();
      } catch {
        // not ready or already writing: the next tick of the timer takes it
      }
    };
    // A quiet server still shows its lines within a second.
    setInterval(flush, 1000).unref();
    process.once('exit', () => {
      try {
        stdout.flushSync();
      } catch {
        // the process is going away; nothing else can be done
      }
    });
    destination = stdout;
  }
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

/**
 * The logger for the one line per request. Its fields are built one by one from values flowgate
 * controls (validated request id, route template, user name, decision, status, durations), never
 * from headers or bodies, so it skips redaction: redacting every line was a fifth of everything
 * flowgate allocated per request. Free-form log calls keep going through the redacting logger.
 */
export function requestLineLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: [] } });
}
