import pino, { type DestinationStream } from 'pino';
import { isoTimestamp, type Logger } from '../logging.js';
import type { RequestEnd } from './request-scope.js';
import { recordedStatus } from './response-status.js';

/**
 * Milliseconds to the microsecond for the request line: a full-precision double is written out
 * through V8's slow shortest-representation path, a rounded one is not.
 */
const microsecondsAsMs = (seconds: number) => Math.round(seconds * 1e6) / 1e3;

/**
 * The one line per request (`"msg":"request"`), written when its response closed, in the logger's
 * format and to its destination. Its fields come from values flowgate controls (validated request
 * id, route template, user name, decision, status, durations), never from headers or bodies, so it
 * skips redaction. It is serialized by one `JSON.stringify` rather than pino's field-by-field writer:
 * that writer turns each duration into text through V8's number-to-string cache, whose entries outlive
 * two young collections, so every request left its durations' texts in the old generation
 * (docs/performance.md, "Old-generation garbage per request"). Free-form log calls keep going through
 * the redacting logger.
 */
export function createRequestLog(logger: Logger): RequestEnd {
  const destination = (logger as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym]!;
  const bindings = JSON.stringify(logger.bindings()).slice(1, -1);
  const afterTime = bindings === '' ? ',' : `,${bindings},`;
  return (scope, req, res) => {
    if (!logger.isLevelEnabled('info')) return;
    const fields = JSON.stringify({
      requestId: scope.requestId,
      method: req.method,
      route: scope.route,
      user: scope.principal?.username,
      decision: scope.decision,
      reason: scope.reason,
      resourceType: scope.resourceType,
      status: recordedStatus(res),
      // JSON.stringify leaves out fields that are undefined.
      aborted: res.writableFinished ? undefined : true,
      durationMs: microsecondsAsMs(Number(process.hrtime.bigint() - scope.started) / 1e9),
      decisionMs: scope.decisionSeconds === undefined ? undefined : microsecondsAsMs(scope.decisionSeconds),
      upstreamMs: scope.upstreamSeconds === undefined ? undefined : microsecondsAsMs(scope.upstreamSeconds),
      upstreamStatus: scope.upstreamSeconds === undefined ? undefined : scope.upstreamStatus,
    });
    destination.write(`{"level":"info"${isoTimestamp()}${afterTime}${fields.slice(1, -1)},"msg":"request"}\n`);
  };
}
