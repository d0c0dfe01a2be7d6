import type { IncomingMessage, ServerResponse } from 'node:http';

/** A refused request's unread body up to this size is drained, so the connection stays reusable. */
const DRAIN_LIMIT_BYTES = 64 * 1024;
/** After answering a refused large upload, read and drop at most this much, for at most this long. */
const LINGER_BYTES = 8 * 1024 * 1024;
const LINGER_MS = 1000;

/**
 * A refused request (401, 403, 413, …) whose body is still on the wire. A small one is read and
 * dropped, keeping the connection. A large or chunked one is not read to the end: the answer carries
 * `Connection: close`, and the socket closes after a short lingering read — closing a socket with
 * unread data makes the kernel send a reset, which can destroy the answer before the client reads
 * it (the reason nginx has `lingering_close`). A denied 1 GiB upload costs a round trip and at most
 * a few MiB, not 1 GiB.
 */
export function dropUnreadBody(req: IncomingMessage, res: ServerResponse): void {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared <= DRAIN_LIMIT_BYTES) {
    req.resume();
    return;
  }
  if (!res.headersSent) res.setHeader('Connection', 'close');
  const socket = req.socket;
  let drained = 0;
  req.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > LINGER_BYTES) socket.destroy();
  });
  // Node's server calls destroySoon() once a `Connection: close` answer is out; make it half-close
  // and linger instead of destroying at once.
  socket.destroySoon = function lingeringClose(this: typeof socket) {
    this.end();
    setTimeout(() => this.destroy(), LINGER_MS).unref();
  };
}
