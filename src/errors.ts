import type { ServerResponse } from 'node:http';
import type { Reason } from './resources/reasons.js';

/** MLflow's error codes, with the HTTP status each one maps to. */
export const ERROR_STATUS = {
  INVALID_PARAMETER_VALUE: 400,
  MALFORMED_REQUEST: 400,
  BAD_REQUEST: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  RESOURCE_DOES_NOT_EXIST: 404,
  ENDPOINT_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  RESOURCE_ALREADY_EXISTS: 409,
  REQUEST_LIMIT_EXCEEDED: 413,
  /** The request's body did not arrive in time. */
  REQUEST_TIMEOUT: 408,
  /** MLflow's code (and nginx's 499) for a client that went away before its answer: never sent, only recorded. */
  CANCELLED: 499,
  INTERNAL_ERROR: 500,
  BAD_GATEWAY: 502,
  TEMPORARILY_UNAVAILABLE: 503,
  GATEWAY_TIMEOUT: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** An error whose message is safe to show a client: it never carries a token, cookie or secret. */
export class FlowgateError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Record<string, string>;
  /** The decision reason of a refusal; for metrics and logs, never shown as-is. */
  readonly reason: Reason | undefined;

  constructor(code: ErrorCode, message: string, headers: Record<string, string> = {}, reason?: Reason) {
    super(message);
    this.name = 'FlowgateError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.headers = headers;
    this.reason = reason;
  }
}

export const BASIC_CHALLENGE = { 'WWW-Authenticate': 'Basic realm="mlflow"' } as const;

export const badRequest = (message: string) => new FlowgateError('INVALID_PARAMETER_VALUE', message);
export const notFound = (message: string) => new FlowgateError('RESOURCE_DOES_NOT_EXIST', message);
export const conflict = (message: string) => new FlowgateError('RESOURCE_ALREADY_EXISTS', message);
export const forbidden = (message = 'Permission denied', reason?: Reason) =>
  new FlowgateError('PERMISSION_DENIED', message, {}, reason);
export const unauthenticated = (message = 'Authentication required') =>
  new FlowgateError('UNAUTHENTICATED', message, { ...BASIC_CHALLENGE });

/** The one place MLflow's error JSON is written. */
export function sendError(res: ServerResponse, error: unknown): void {
  const err =
    error instanceof FlowgateError ? error : new FlowgateError('INTERNAL_ERROR', 'Internal error in flowgate');
  sendJson(res, err.status, { error_code: err.code, message: err.message }, err.headers);
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  sendJsonText(res, status, JSON.stringify(body), headers);
}

/** JSON already serialized (an answer of MLflow's passed on unchanged). */
export function sendJsonText(
  res: ServerResponse,
  status: number,
  payload: string | Buffer,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json',
    'Content-Length': typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length,
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  });
  res.end(payload);
}
