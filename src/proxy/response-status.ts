import type { ServerResponse } from 'node:http';

/** nginx's status for a request whose client closed the connection before it was answered. */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * The status a request is recorded with once its response closed: what was sent, or 499 when the
 * connection closed before any answer went out (the client went away; `res.statusCode` would still
 * read its default 200).
 */
export function recordedStatus(res: ServerResponse): number {
  return res.headersSent ? res.statusCode : CLIENT_CLOSED_REQUEST;
}
