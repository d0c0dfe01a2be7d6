import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';

/**
 * `Expect: 100-continue` asks the server whether to send the body. Node answers yes by itself
 * unless the server has a 'checkContinue' listener, which would invite a refused client to upload
 * its whole body before hearing 401 or 403. With this listener flowgate decides first: a request
 * is answered `100 Continue` only once it is allowed, and a refused one gets its final status alone
 * (Node then closes the connection, so the unsent body is never read).
 *
 * A request whose decision needs its body (a JSON call naming its run in the body) gets no 100 at
 * all: the client sends the body when its wait runs out (curl after 1 s), as RFC 9110 §10.1.1 lets it.
 */
const awaitingContinue = new WeakSet<ServerResponse>();

export function decideBeforeContinue(server: Server, listener: RequestListener): void {
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    awaitingContinue.add(res);
    listener(req, res);
  });
}

/**
 * Call when the request is allowed, before its body is read or forwarded. Writes `100 Continue`
 * once, if the client asked for it and it can still be of use; otherwise does nothing.
 */
export function continueAuthorized(req: IncomingMessage, res: ServerResponse): void {
  if (!awaitingContinue.delete(res)) return;
  if (res.headersSent || req.complete || req.readableFlowing !== null) return;
  res.writeContinue();
}
