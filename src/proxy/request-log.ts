import type { Logger } from '../logging.js';
import type { RequestEnd } from './request-scope.js';
import { recordedStatus } from './response-status.js';

/**
 * Milliseconds to the microsecond for the request line: a full-precision double is written out
 * through V8's slow shortest-representation path, a rounded one is not.
 */
const microsecondsAsMs = (seconds: number) => Math.round(seconds * 1e6) / 1e3;

/**
 * The one line per request (`"msg":"request"`), written when its response closed. Its fields come
 * from values flowgate controls (validated request id, route template, user name, decision, status,
 * durations), never from headers or bodies, so its logger skips redaction, a large share of what a
 * request allocated. Free-form log calls keep going through the redacting logger.
 */
export function createRequestLog(logger: Logger): RequestEnd {
  const line = logger.child({}, { redact: { paths: [] } });
  return (scope, req, res) => {
    line.info(
      {
        requestId: scope.requestId,
        method: req.method,
        route: scope.route,
        user: scope.principal?.username,
        decision: scope.decision,
        reason: scope.reason,
        resourceType: scope.resourceType,
        status: recordedStatus(res),
        // pino leaves out fields that are undefined: no object spreads on the request path.
        aborted: res.writableFinished ? undefined : true,
        durationMs: microsecondsAsMs(Number(process.hrtime.bigint() - scope.started) / 1e9),
        decisionMs: scope.decisionSeconds === undefined ? undefined : microsecondsAsMs(scope.decisionSeconds),
        upstreamMs: scope.upstreamSeconds === undefined ? undefined : microsecondsAsMs(scope.upstreamSeconds),
        upstreamStatus: scope.upstreamSeconds === undefined ? undefined : scope.upstreamStatus,
      },
      'request',
    );
  };
}
