import type { IncomingMessage } from 'node:http';
import { FlowgateError, badRequest } from '../errors.js';

/** Without a configured deadline (a listener that set none), a body read gives up after this long. */
export const DEFAULT_BODY_READ_TIMEOUT_MS = 30_000;

const readTimeouts = new WeakMap<IncomingMessage, number>();

/**
 * How long reading this request's body may take; the listener sets it from configuration, so the
 * readers (gate, admin API) need not carry it.
 */
export function setBodyReadTimeout(req: IncomingMessage, ms: number): void {
  readTimeouts.set(req, ms);
}

/**
 * Reads a whole request body, refusing more than `maxBytes` (413) before it is all in memory, and a
 * body slower than its deadline (408, connection closed: a client that sent less than its
 * `Content-Length` would otherwise hold the request open for as long as it likes). A client that
 * goes away meanwhile is `CANCELLED`, an outcome rather than a fault.
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.reject(tooLarge(maxBytes));
  if (req.destroyed) return Promise.reject(clientGone());
  const timeoutMs = readTimeouts.get(req) ?? DEFAULT_BODY_READ_TIMEOUT_MS;
  // Plain events rather than `for await`: this runs on every JSON request, and the async iterator
  // costs more than the copy.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onGone);
      req.off('close', onGone);
    };
    const fail = (err: FlowgateError) => {
      stop();
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return fail(tooLarge(maxBytes));
      chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onGone = () => fail(clientGone());
    const timer = setTimeout(() => fail(tooSlow(timeoutMs)), timeoutMs);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onGone);
    req.once('close', onGone);
  });
}

const tooLarge = (maxBytes: number) =>
  new FlowgateError('REQUEST_LIMIT_EXCEEDED', `Request body is larger than the limit of ${maxBytes} bytes`);

const tooSlow = (timeoutMs: number) =>
  new FlowgateError('REQUEST_TIMEOUT', `The request body did not arrive within ${timeoutMs} ms`, { Connection: 'close' }, 'body-timeout');

const clientGone = () =>
  new FlowgateError('CANCELLED', 'The client closed the connection while its request body was read', {}, 'client-closed');

/** True for the outcome of a client that went away: nothing can be answered, and nothing went wrong. */
export const isClientGone = (err: unknown): boolean => err instanceof FlowgateError && err.code === 'CANCELLED';

/** An empty body is `undefined`; anything else must be valid JSON. */
export function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch {
    throw badRequest('Malformed JSON in the request body');
  }
}
