import http, { type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import https from 'node:https';
import { FlowgateError } from '../errors.js';
import { IDENTITY_HEADER, setsFlowgateCookie, withoutFlowgateCookies } from '../http/client-credentials.js';
import { framingHeader, type BodyFraming } from '../http/framing.js';

export interface ForwardTarget {
  readonly upstream: URL;
  /** Path and query as the model server should see them. */
  readonly pathAndQuery: string;
  readonly preserveHost: boolean;
  /** How the client delimited its body (see http/framing.ts); flowgate writes it again for its own hop. */
  readonly framing: BodyFraming;
}

export interface Forwarder {
  /** Streams the request to the model server and its answer back; `onError` gets the error already mapped. */
  forward(req: IncomingMessage, res: ServerResponse, target: ForwardTarget, onError: (err: FlowgateError, cause: Error) => void): void;
  close(): Promise<void>;
}

export interface ForwarderOptions {
  /** Idle time allowed on the upstream connection before giving up with 504. */
  readonly timeoutMs: number;
  readonly maxSockets: number;
}

/**
 * Headers that describe one hop rather than the request (RFC 9110 §7.6.1), the body's framing among
 * them: flowgate frames its own request. `Expect` was answered to the client already, and trailers
 * are not passed on, so announcing them would be false.
 */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'expect', 'content-length', 'host']);

/** The same in the model server's answer: Node frames the client's response itself. */
const HOP_BY_HOP_RESPONSE = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/**
 * One keep-alive agent pair for every inference route, on Node's own client: flowgate writes every
 * header the model server gets, the framing included, so no request can carry a second one in its
 * body. Bodies are piped both ways, never collected, so tensors and event streams pass at the pace
 * the two ends set.
 */
export function createForwarder(opts: ForwarderOptions): Forwarder {
  const agentOptions = { keepAlive: true, maxSockets: opts.maxSockets, maxFreeSockets: 32 };
  const agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };

  return {
    forward(req, res, target, onError) {
      const { upstream } = target;
      const secure = upstream.protocol === 'https:';
      const headers = forwardedHeaders(req.headers);
      headers.host = target.preserveHost && req.headers.host ? req.headers.host : upstream.host;
      Object.assign(headers, framingHeader(target.framing));
      const outgoing = (secure ? https : http).request({
        protocol: upstream.protocol,
        hostname: upstream.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: upstream.port || (secure ? 443 : 80),
        method: req.method,
        path: upstream.pathname.replace(/\/+$/, '') + target.pathAndQuery,
        headers,
        agent: secure ? agents.https : agents.http,
      });
      // A body that does not match its own Content-Length is an error, never a request boundary moved.
      // (Node's OutgoingMessage has the switch on its client side too; @types/node lists it for responses only.)
      Object.assign(outgoing, { strictContentLength: true });

      let timedOut = false;
      let clientGone = false;
      outgoing.setTimeout(opts.timeoutMs, () => {
        timedOut = true;
        outgoing.destroy();
      });
      outgoing.on('error', (err: NodeJS.ErrnoException) => {
        if (clientGone) return;
        if (res.headersSent) return void res.destroy();
        const mapped = timedOut
          ? new FlowgateError('GATEWAY_TIMEOUT', 'The model server did not answer in time')
          : new FlowgateError('BAD_GATEWAY', 'The model server could not be reached');
        onError(mapped, err);
      });
      outgoing.on('response', (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, relayedHeaders(answer.rawHeaders));
        answer.on('error', () => res.destroy());
        answer.on('aborted', () => res.destroy());
        answer.pipe(res);
      });
      // A client that goes away (before or during the answer) ends the call to the model server.
      const stop = () => {
        if (res.writableFinished) return;
        clientGone = true;
        outgoing.destroy();
      };
      res.once('close', stop);
      req.once('error', stop);
      req.pipe(outgoing);
    },
    async close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

/**
 * Credentials meant for flowgate or for MLflow behind it: a browser attaches its session cookie (and
 * any Basic credentials it cached) to a same-host model route, and a model server is not trusted with
 * them. The route's key (`x-api-key`) is removed by the gateway once checked.
 */
const CLIENT_CREDENTIALS = new Set(['authorization', 'proxy-authorization']);

/**
 * The client's headers minus hop-by-hop ones, those its `Connection` header names, its credentials,
 * identity headers only flowgate may set, and flowgate's cookies.
 */
function forwardedHeaders(incoming: IncomingHttpHeaders): OutgoingHttpHeaders {
  const named = new Set((incoming.connection ?? '').split(',').map((h) => h.trim().toLowerCase()));
  const out: OutgoingHttpHeaders = {};
  for (const name in incoming) {
    const value = incoming[name];
    if (value === undefined || HOP_BY_HOP.has(name) || named.has(name) || CLIENT_CREDENTIALS.has(name) || IDENTITY_HEADER.test(name)) continue;
    if (name === 'cookie') {
      const kept = withoutFlowgateCookies(value as string);
      if (kept) out.cookie = kept;
      continue;
    }
    out[name] = value;
  }
  return out;
}

/**
 * The model server's raw header list, hop-by-hop headers left out and `Content-Length` last (Node
 * re-encodes a `Content-Disposition` written after a known length, nodejs/node#46528).
 *
 * A model server's answer is served from flowgate's origin (a route without `hosts` shares the UI's
 * host), and what a model server runs is what a user with EDIT on an experiment logged: its answer
 * must not act in that origin. So it is never rendered as a page there (a sandbox CSP, added to any of
 * its own, and `nosniff`), and it cannot set flowgate's cookies (a session of the attacker's own,
 * tossed into the victim's browser).
 */
function relayedHeaders(raw: readonly string[]): string[] {
  const out: string[] = [];
  let length: string | undefined;
  let nosniff = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP_RESPONSE.has(lower)) continue;
    if (lower === 'content-length') length = value;
    else if (lower === 'set-cookie' && setsFlowgateCookie(value)) continue;
    else {
      if (lower === 'x-content-type-options') nosniff = true;
      out.push(name, value);
    }
  }
  out.push('Content-Security-Policy', "sandbox; default-src 'none'");
  if (!nosniff) out.push('X-Content-Type-Options', 'nosniff');
  if (length !== undefined) out.push('Content-Length', length);
  return out;
}
