import type { IncomingHttpHeaders } from 'node:http';
import { FlowgateError } from '../errors.js';

/**
 * How a client's request body is delimited, as Node's parser read it. Whoever forwards the request
 * writes this framing again for its own hop, so the upstream reads exactly the body flowgate
 * received and nothing after it as a further request that was never checked.
 */
export type BodyFraming = { readonly kind: 'none' } | { readonly kind: 'length'; readonly length: number } | { readonly kind: 'chunked' };

const NONE: BodyFraming = { kind: 'none' };
const CHUNKED: BodyFraming = { kind: 'chunked' };

/**
 * Node's parser already refuses `Transfer-Encoding` together with `Content-Length`, repeated or
 * malformed lengths, and codings that do not end in `chunked`. What it lets through and flowgate
 * cannot pass on is a coding before `chunked` (`gzip, chunked`): the body Node hands over is still
 * gzip-coded, and re-framed as plain chunks the upstream would read it as something else. RFC 9112
 * §6.1 lets a server refuse a coding it does not handle.
 */
export function requestFraming(headers: IncomingHttpHeaders): BodyFraming {
  const coding = headers['transfer-encoding'];
  const length = headers['content-length'];
  if (coding !== undefined) {
    if (length !== undefined) throw framingError('Send either Transfer-Encoding or Content-Length, not both');
    if (coding.trim().toLowerCase() !== 'chunked')
      throw framingError('Only Transfer-Encoding: chunked is supported; send the body with Content-Length or plain chunks');
    return CHUNKED;
  }
  if (length === undefined) return NONE;
  const n = Number(length);
  if (!/^\d+$/.test(length) || !Number.isSafeInteger(n)) throw framingError('Content-Length must be a number of bytes');
  return { kind: 'length', length: n };
}

/** A body left unread: the connection closes after the answer instead of reading it as a request. */
const framingError = (message: string) => new FlowgateError('BAD_REQUEST', message, { Connection: 'close' }, 'request-framing');

/**
 * The framing header a forwarded request carries, written by flowgate rather than copied: a body
 * whose length is known keeps it, chunks stay chunks (for every method, DELETE and OPTIONS too),
 * and a request without a body announces none.
 */
export function framingHeader(framing: BodyFraming): Record<string, string> {
  if (framing.kind === 'length') return { 'content-length': String(framing.length) };
  if (framing.kind === 'chunked') return { 'transfer-encoding': 'chunked' };
  return {};
}
