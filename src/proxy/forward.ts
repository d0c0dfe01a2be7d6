import { Agent, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import { createProxyServer } from 'http-proxy-3';
import { FlowgateError, sendError } from '../errors.js';

/** Identity headers only flowgate may set; a client's copy, in any case or `_` spelling, is dropped. */
const IDENTITY_HEADER = /^x[-_](forwarded[-_](user|email|groups|preferred[-_]username|access[-_]token)|auth[-_]request[-_].*|remote[-_]user|user|email|flowgate[-_].*)$/i;

/** flowgate's own cookies (session, login binding) are credentials: MLflow never sees them. */
const FLOWGATE_COOKIE = /^(__Host-)?flowgate_[^=]*=/i;

export interface ForwardOptions {
  readonly upstreamUrl: string;
  readonly staticPrefix: string;
  readonly timeoutMs: number;
}

export interface ForwardRequest {
  /** Normalized, percent-encoded path (without the upstream static prefix) and raw query. */
  readonly encodedPath: string;
  readonly search: string;
  readonly username: string | undefined;
  readonly requestId: string;
  /** A body already read (JSON routes); otherwise the request streams through untouched. */
  readonly body?: Buffer;
  /** When set, the handler writes the response itself (after-hooks that rewrite or inspect the answer). */
  readonly onResponse?: ResponseHandler;
  /** Told MLflow's status (0 when no response came) and the seconds until its response headers arrived. */
  readonly onUpstream?: (status: number, seconds: number) => void;
}

/**
 * The headers MLflow gets: the client's, minus identity headers, credentials and flowgate's cookies
 * (and the client's `Transfer-Encoding` when flowgate re-sends a body it read).
 * Built as a fresh object rather than by `delete` on req.headers, which would drop the object into
 * V8's slow dictionary mode for every later header access on the request's way through the proxy.
 */
export function forwardedHeaders(incoming: IncomingMessage['headers'], bodyReplaced = false): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in incoming) {
    const value = incoming[name];
    if (value === undefined || name === 'authorization' || name === 'proxy-authorization') continue;
    // A re-sent body has its own length; the client's framing does not apply to it.
    if (bodyReplaced && name === 'transfer-encoding') continue;
    if ((name.charCodeAt(0) | 0x20) === 0x78 /* x */ && IDENTITY_HEADER.test(name)) continue;
    if (name === 'cookie') {
      const kept = withoutFlowgateCookies(value as string);
      if (kept) out.cookie = kept;
      continue;
    }
    out[name] = value;
  }
  return out;
}

const HOST_PORT = /:(\d+)/;

/**
 * The `X-Forwarded-*` headers http-proxy-3's `xfwd` would add, with its semantics (for, port and
 * proto appended to a client's list, host kept if given), written into the fresh header object:
 * its own pass reads the socket through deprecated getters and adds the fields to an object one at
 * a time, at several times the cost.
 */
export function addForwardedHeaders(headers: Record<string, string | string[]>, req: IncomingMessage): void {
  const socket = req.socket;
  const encrypted = (socket instanceof TLSSocket && socket.encrypted) || Boolean((socket as { pair?: unknown }).pair);
  const host = req.headers.host;
  const port = (host === undefined ? undefined : HOST_PORT.exec(host)?.[1]) ?? (encrypted ? '443' : '80');
  appendForwarded(headers, 'x-forwarded-for', String(socket.remoteAddress));
  appendForwarded(headers, 'x-forwarded-port', port);
  appendForwarded(headers, 'x-forwarded-proto', encrypted ? 'https' : 'http');
  headers['x-forwarded-host'] = (headers['x-forwarded-host'] as string | undefined) || host || '';
}

function appendForwarded(headers: Record<string, string | string[]>, name: string, value: string): void {
  const given = headers[name];
  headers[name] = given ? `${String(given)},${value}` : value;
}

const MENTIONS_FLOWGATE_COOKIE = /flowgate_/i;

function withoutFlowgateCookies(cookie: string): string {
  if (!MENTIONS_FLOWGATE_COOKIE.test(cookie)) return cookie;
  return cookie
    .split(';')
    .filter((c) => !FLOWGATE_COOKIE.test(c.trim()))
    .join(';')
    .trim();
}

/**
 * Makes a request whose body flowgate already read send that body instead: http-proxy-3 pipes the
 * request into the upstream one. Done on the request rather than through http-proxy-3's per-call
 * `buffer` option, whose options merge on every call cost more than the rest of its pass.
 */
function resendBody(req: IncomingMessage, body: Buffer): void {
  (req as unknown as { pipe: (destination: NodeJS.WritableStream) => NodeJS.WritableStream }).pipe = (destination) => {
    destination.end(body);
    return destination;
  };
}

/**
 * A forward's start and, until MLflow answers, its callbacks. It rides on the request, and the
 * callbacks are dropped at the answer: Node keeps a keep-alive connection's last request alive until
 * the next one arrives, and callbacks kept past the answer (the record was a WeakMap entry) held the
 * response and the request's scope for that long: many times the survivors per young-generation
 * collection, and longer pauses.
 */
const FORWARDING = Symbol('flowgate forwarding');
interface Forwarding {
  readonly started: bigint;
  /** Undefined once MLflow answered or failed: each is reported once. */
  f: ForwardRequest | undefined;
}
type TrackedRequest = IncomingMessage & { [FORWARDING]?: Forwarding | undefined };
const secondsSince = (started: bigint) => Number(process.hrtime.bigint() - started) / 1e9;

export type ResponseHandler = (upstream: IncomingMessage, res: ServerResponse) => void;

/** Forwarding to MLflow through http-proxy-3 over a keep-alive agent. */
export function createForwarder(opts: ForwardOptions) {
  // A parsed URL: http-proxy-3 would otherwise parse a string target again on every request.
  const target = new URL(opts.upstreamUrl);
  const pool = { keepAlive: true, maxSockets: 256, maxFreeSockets: 64 };
  const agent = target.protocol === 'https:' ? new HttpsAgent(pool) : new Agent(pool);
  // MLflow's path under the upstream URL (empty at its root): flowgate writes the whole path it
  // forwards, so http-proxy-3 neither prepends the target's path (`prependPath: false`) nor parses
  // the request's URL again to take its path (`toProxy: true`): the path it sends is exactly the one
  // flowgate matched and decided on, and the two URL parses it would make per request (the largest
  // part of its own CPU per request) are skipped.
  const upstreamPath = target.pathname.replace(/\/+$/, '');
  const passThrough = { target, agent, proxyTimeout: opts.timeoutMs, xfwd: false, prependPath: false, toProxy: true };
  // X-Forwarded-* are added by addForwardedHeaders, not by http-proxy-3's xfwd.
  const proxy = createProxyServer(passThrough);
  // Responses an after-hook writes itself go through a second server built for it, so no request
  // passes per-call options (http-proxy-3 merges them into a fresh options object on every call).
  const selfHandled = createProxyServer({ ...passThrough, selfHandleResponse: true });
  const observers: Array<(upstream: IncomingMessage, req: IncomingMessage) => void> = [];
  /** The forward's callbacks, handed out once: to MLflow's answer or to the error, whichever comes first. */
  function takeCallbacks(t: Forwarding | undefined): ForwardRequest | undefined {
    const f = t?.f;
    if (t) t.f = undefined;
    return f;
  }

  const onProxyRes = (upstream: IncomingMessage, req: IncomingMessage, res: ServerResponse) => {
    const t = (req as TrackedRequest)[FORWARDING];
    const f = takeCallbacks(t);
    if (t) f?.onUpstream?.(upstream.statusCode ?? 0, secondsSince(t.started));
    for (const observe of observers) observe(upstream, req);
    f?.onResponse?.(upstream, res);
  };
  const onError = (err: Error, req: IncomingMessage, res: ServerResponse | Socket | undefined) => {
    const t = (req as TrackedRequest)[FORWARDING];
    const elapsedMs = t === undefined ? 0 : secondsSince(t.started) * 1000;
    takeCallbacks(t)?.onUpstream?.(0, elapsedMs / 1000);
    const code = (err as NodeJS.ErrnoException).code;
    const error =
      elapsedMs >= opts.timeoutMs
        ? new FlowgateError('GATEWAY_TIMEOUT', 'MLflow did not answer in time')
        : code === 'ECONNREFUSED' || code === 'EHOSTUNREACH' || code === 'ENOTFOUND' || code === 'EAI_AGAIN'
          ? new FlowgateError('TEMPORARILY_UNAVAILABLE', 'MLflow is not reachable')
          : new FlowgateError('BAD_GATEWAY', 'MLflow closed the connection unexpectedly');
    if (res && 'writeHead' in res) sendError(res, error);
    else res?.destroy();
  };
  for (const p of [proxy, selfHandled]) {
    p.on('proxyRes', onProxyRes);
    p.on('error', onError);
  }

  return {
    forward(req: IncomingMessage, res: ServerResponse, f: ForwardRequest): void {
      const headers = forwardedHeaders(req.headers, f.body !== undefined);
      if (f.username !== undefined) headers['x-forwarded-user'] = f.username;
      headers['x-request-id'] = f.requestId;
      addForwardedHeaders(headers, req);
      // `Connection` is hop-by-hop: a client's `close` must not end the pooled upstream socket.
      headers.connection = 'keep-alive';
      if (f.body) headers['content-length'] = String(f.body.length);
      req.headers = headers;
      req.url = upstreamPath + opts.staticPrefix + f.encodedPath + (f.search ? `?${f.search}` : '');
      (req as TrackedRequest)[FORWARDING] = { started: process.hrtime.bigint(), f };
      if (f.body) resendBody(req, f.body);
      (f.onResponse ? selfHandled : proxy).web(req, res);
    },
    /** Sees every upstream response (status, timing) without touching it. */
    observe(fn: (upstream: IncomingMessage, req: IncomingMessage) => void): void {
      observers.push(fn);
    },
    close(): void {
      proxy.close();
      selfHandled.close();
      agent.destroy();
    },
  };
}

export type Forwarder = ReturnType<typeof createForwarder>;
