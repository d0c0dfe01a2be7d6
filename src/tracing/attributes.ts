import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Span } from '@opentelemetry/api';
import { SpanStatusCode } from '@opentelemetry/api';
import { ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE } from '@opentelemetry/semantic-conventions';
import { FlowgateError } from '../errors.js';
import type { RequestScope } from '../proxy/request-scope.js';
import { recordedStatus } from '../proxy/response-status.js';

/**
 * Every attribute a span of flowgate carries. Each value is one flowgate controls: the method, the
 * route template (never the raw path or query), statuses, the decision and its reason from a closed
 * set, the resource kind, the validated request id and how the caller signed in. No header, body,
 * token, cookie, user name or resource name is ever written to a span.
 */
export const ATTR = {
  method: ATTR_HTTP_REQUEST_METHOD,
  route: ATTR_HTTP_ROUTE,
  status: ATTR_HTTP_RESPONSE_STATUS_CODE,
  /** The semantic conventions' name for a client call's path template. */
  urlTemplate: 'url.template',
  requestId: 'flowgate.request_id',
  decision: 'flowgate.decision',
  reason: 'flowgate.reason',
  resourceKind: 'flowgate.resource.kind',
  authMethod: 'flowgate.auth.method',
  upstreamStatus: 'flowgate.upstream.status_code',
  aborted: 'flowgate.aborted',
  errorCode: 'flowgate.error_code',
} as const;

/** The server span's attributes and name, from the request's scope once its response closed. */
export function describeRequest(span: Span, scope: RequestScope, req: IncomingMessage, res: ServerResponse): void {
  const method = req.method ?? 'GET';
  const status = recordedStatus(res);
  if (scope.route !== undefined) {
    span.updateName(`${method} ${scope.route}`);
    span.setAttribute(ATTR.route, scope.route);
  }
  span.setAttribute(ATTR.status, status);
  span.setAttribute(ATTR.requestId, scope.requestId);
  if (scope.decision !== undefined) span.setAttribute(ATTR.decision, scope.decision);
  if (scope.reason !== undefined) span.setAttribute(ATTR.reason, scope.reason);
  if (scope.resourceType !== undefined) span.setAttribute(ATTR.resourceKind, scope.resourceType);
  if (scope.principal !== undefined) span.setAttribute(ATTR.authMethod, scope.principal.via);
  if (scope.upstreamSeconds !== undefined) span.setAttribute(ATTR.upstreamStatus, scope.upstreamStatus ?? 0);
  if (!res.writableFinished) span.setAttribute(ATTR.aborted, true);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
}

/**
 * A stage that threw: a refusal (401, 403) is the decision, not an error; anything else marks the span
 * failed with flowgate's error code only (a message may quote a path or a name).
 */
export function describeFailure(span: Span, err: unknown): void {
  if (err instanceof FlowgateError) {
    span.setAttribute(ATTR.errorCode, err.code);
    if (err.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: err.code });
    return;
  }
  span.setStatus({ code: SpanStatusCode.ERROR, message: 'unexpected error' });
}
