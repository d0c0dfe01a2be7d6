import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { TLSSocket } from 'node:tls';
import type { Dispatcher } from 'undici';
import { FlowgateError, sendError } from '../errors.js';
import { IDENTITY_HEADER, withoutFlowgateCookies } from '../http/client-credentials.js';
import { requestFraming, type BodyFraming } from '../http/framing.js';
import { upstreamFailure, type MlflowConnection } from '../upstream/mlflow-connection.js';
import type { Listening, SilenceWatch } from '../upstream/silence-watch.js';
import type { TraceHeaders } from '../tracing/types.js';


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
  /** With tracing on: the forward span's context, which replaces whatever Trace Context the client sent. */
  readonly trace?: TraceHeaders;
}

/**
 * Request headers MLflow never gets: the client's credentials, and those that describe the client's
 * hop rather than the request (RFC 9110 7.6.1), since the pool to MLflow frames and keeps its own
 * connections. `Expect` was answered by Node's server already (100 Continue). W3C `baggage` is the
 * client's word, which an instrumented MLflow would copy into its spans as if it were its own.
 * `X-MLflow-Guardrail-Bypass` marks MLflow's calls to itself (made to its own address, not through
 * flowgate) that skip every guardrail on an endpoint; MLflow 3.17 looks it up in a case that never
 * matches, but no client of flowgate's may send it should that change.
 */
const NOT_FORWARDED = /^(authorization|proxy-authorization|connection|keep-alive|proxy-connection|transfer-encoding|te|trailer|upgrade|expect|baggage|x-mlflow-guardrail-bypass)$/;

/**
 * The headers MLflow gets: the client's, minus credentials, identity headers, hop-by-hop headers and
 * flowgate's cookies. Built as a fresh object rather than by `delete` on req.headers, which would
 * drop the object into V8's slow dictionary mode for every later header access.
 *
 * The client's `Host` stays behind too: MLflow's DNS-rebinding guard refuses any host outside its
 * `--allowed-hosts` (by default loopback and private addresses), so MLflow is sent the host of the
 * upstream URL and learns the public one from `X-Forwarded-Host`. A same-origin `Origin` (naming the
 * very host the client called) is dropped for the same reason: MLflow refuses a state-changing call
 * from any origin outside `--cors-allowed-origins` without comparing it with the public host, so
 * its own UI, served under the public host, could not save anything. A cross-origin `Origin` still
 * reaches MLflow, whose CORS settings decide it.
 */
export function forwardedHeaders(incoming: IncomingMessage['headers']): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const named = namedByConnection(incoming.connection);
  for (const name in incoming) {
    const value = incoming[name];
    if (value === undefined || NOT_FORWARDED.test(name) || name === 'host') continue;
    if (named !== undefined && named.has(name) && !MEANING_HEADER.test(name)) continue;
    if ((name.charCodeAt(0) | 0x20) === 0x78 /* x */ && IDENTITY_HEADER.test(name)) continue;
    if (name === 'origin' && namesHost(value as string, incoming.host)) continue;
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
 * Headers that carry what flowgate decided on (the body's type and coding, the workspace, the experiment
 * and run an OTLP export names: the catalog's `from: 'header'` ids): a client naming them in `Connection`
 * must not have MLflow act on a request other than the one decided.
 */
const MEANING_HEADER = /^(content-type|content-encoding|content-length|x-mlflow-workspace|x-mlflow-experiment-id|x-mlflow-run-id)$/;

/** The other headers the client's `Connection` names as its hop's alone (RFC 9110 7.6.1); none for the usual `keep-alive`/`close`. */
function namedByConnection(connection: string | undefined): Set<string> | undefined {
  if (connection === undefined || connection === 'keep-alive' || connection === 'close' || connection === 'Keep-Alive') return undefined;
  return new Set(connection.split(',').map((h) => h.trim().toLowerCase()));
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

/** Whether an `Origin` (scheme://host[:port]) names `host`: behind a TLS-terminating proxy the schemes differ, the host does not. */
function namesHost(origin: string, host: string | undefined): boolean {
  if (host === undefined || host === '') return false;
  const start = origin.indexOf('://');
  return start > 0 && origin.length - start - 3 === host.length && origin.endsWith(host.toLowerCase());
}

/** MLflow's answer as an after-hook sees it: header names in lower case, hop-by-hop headers gone. */
export interface UpstreamResponse {
  readonly statusCode: number;
  readonly headers: Record<string, string | string[]>;
  readonly body: Readable;
}

export type ResponseHandler = (upstream: UpstreamResponse, res: ServerResponse) => void;

/**
 * What an answer without caching rules of MLflow's own is given: answers depend on who asked (filtered
 * lists, what a grant lets one read), and MLflow's JSON says nothing, so a shared cache that keys on the
 * URL alone (a CDN or ingress cache ignoring cookies) would serve one caller's answer to the next.
 */
const PER_CALLER = 'private';

/** Response headers that describe MLflow's hop to flowgate, not the answer: Node frames the client's own. */
const HOP_BY_HOP_RESPONSE = /^(connection|keep-alive|proxy-connection|transfer-encoding|upgrade|te|trailer)$/i;

/**
 * MLflow's raw header list as Node's `writeHead` takes it (names and values in one list), hop-by-hop
 * headers left out and `Content-Length` moved last: Node decodes a `Content-Disposition` it writes
 * after a known length as UTF-8 and re-encodes it as latin1 (nodejs/node#46528), which would change
 * an UTF-8 file name's bytes, or refuse the header outright.
 */
function relayedHeaderList(raw: Buffer[]): string[] {
  const out: string[] = [];
  let length: string | undefined;
  let caching = false;
  for (let i = 0; i < raw.length; i += 2) {
    // latin1 both ways: each byte MLflow sent goes to the client unchanged, UTF-8 file names included.
    const name = raw[i]!.toString('latin1');
    if (HOP_BY_HOP_RESPONSE.test(name)) continue;
    const value = raw[i + 1]!.toString('latin1');
    if (name.length === 14 && name.toLowerCase() === 'content-length') length = value;
    else {
      if (name.length === 13 && name.toLowerCase() === 'cache-control') caching = true;
      out.push(name, value);
    }
  }
  if (!caching) out.push('Cache-Control', PER_CALLER);
  if (length !== undefined) out.push('Content-Length', length);
  return out;
}

function relayedHeaderRecord(raw: Buffer[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toString('latin1').toLowerCase();
    if (HOP_BY_HOP_RESPONSE.test(name)) continue;
    const value = raw[i + 1]!.toString('latin1');
    const given = out[name];
    out[name] = given === undefined ? value : Array.isArray(given) ? [...given, value] : [given, value];
  }
  if (out['cache-control'] === undefined) out['cache-control'] = PER_CALLER;
  return out;
}

const secondsSince = (started: bigint) => Number(process.hrtime.bigint() - started) / 1e9;

/**
 * One forwarded call, as undici's dispatcher drives it: MLflow's answer is written straight to the
 * client's response, or handed to an after-hook as a stream. It holds the forward's callbacks only
 * until MLflow answers or fails (each is reported once): Node keeps a keep-alive connection's last
 * request alive until the next one arrives, and callbacks kept past the answer would hold the
 * response and the request's scope for that long (more survivors per young-generation collection).
 */
class ForwardedCall implements Dispatcher.DispatchHandler, Listening {
  private abort: ((err?: Error) => void) | undefined;
  private resume: (() => void) | undefined;
  /** Set when an after-hook reads the answer. */
  private hookBody: Readable | undefined;
  private watchingClose = false;
  lastHeard = 0;
  watchPrev: Listening | undefined = undefined;
  watchNext: Listening | undefined = undefined;
  heldBack = false;

  constructor(
    private readonly res: ServerResponse,
    private f: ForwardRequest | undefined,
    private readonly started: bigint,
    /** Undefined when the client's body streams on: undici times that call itself. */
    private readonly silence: SilenceWatch | undefined,
  ) {}

  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
    this.silence?.watch(this);
  }

  giveUp(err: Error): void {
    this.abort?.(err);
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean {
    this.lastHeard = Date.now();
    const f = this.f;
    this.f = undefined;
    f?.onUpstream?.(statusCode, secondsSince(this.started));
    const res = this.res;
    this.resume = resume;
    if (f?.onResponse) {
      // Read whether or not the client is still there: MLflow has made the change, and the hook's work
      // (a creator's grant, grants following a rename or going with a delete) must follow it. A client
      // that hangs up must not leave a MANAGE on a freed name to rule whatever takes that name next.
      // An after-hook that gives up on the answer (destroys the stream) ends the read from MLflow.
      const body = new Readable({
        read: () => this.readOn(),
        destroy: (err, callback) => {
          this.abort?.();
          callback(err);
        },
      });
      this.hookBody = body;
      f.onResponse({ statusCode, headers: relayedHeaderRecord(rawHeaders), body }, res);
      return true;
    }
    // The client went away while MLflow worked: nobody reads the answer.
    if (res.destroyed) return this.stop();
    if (statusText) res.writeHead(statusCode, statusText, relayedHeaderList(rawHeaders));
    else res.writeHead(statusCode, relayedHeaderList(rawHeaders));
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.lastHeard = Date.now();
    if (this.hookBody) return this.hookBody.push(chunk) || this.holdBack();
    const res = this.res;
    if (res.destroyed) return this.stop();
    if (res.write(chunk)) return true;
    // Back-pressure: MLflow's socket is read again when the client has taken what was written; a
    // client that goes away instead never drains, so its close ends the read (after the answer
    // completed, undici ignores the abort).
    this.holdBack();
    res.once('drain', () => this.readOn());
    if (!this.watchingClose) {
      this.watchingClose = true;
      res.once('close', () => this.abort?.());
    }
    return false;
  }

  onComplete(): void {
    this.silence?.done(this);
    if (this.hookBody) this.hookBody.push(null);
    else this.res.end();
  }

  onError(err: Error): void {
    this.silence?.done(this);
    const f = this.f;
    this.f = undefined;
    f?.onUpstream?.(0, secondsSince(this.started));
    if (this.hookBody) this.hookBody.destroy(err);
    else if (this.res.headersSent || this.res.destroyed) this.res.destroy();
    else sendError(this.res, upstreamFailure(err));
  }

  private holdBack(): false {
    this.heldBack = true;
    return false;
  }

  private readOn(): void {
    this.heldBack = false;
    this.lastHeard = Date.now();
    this.resume?.();
  }

  private stop(): false {
    this.abort?.();
    return false;
  }
}

/** Forwarding to MLflow over the shared keep-alive pool. */
export function createForwarder(mlflow: MlflowConnection) {
  return {
    forward(req: IncomingMessage, res: ServerResponse, f: ForwardRequest): void {
      let framing: BodyFraming;
      try {
        framing = requestFraming(req.headers);
      } catch (err) {
        return sendError(res, err as FlowgateError);
      }
      const headers = forwardedHeaders(req.headers);
      headers.host = mlflow.host;
      if (f.username !== undefined) headers['x-forwarded-user'] = f.username;
      headers['x-request-id'] = f.requestId;
      if (f.trace !== undefined) {
        headers.traceparent = f.trace.traceparent;
        if (f.trace.tracestate !== undefined) headers.tracestate = f.trace.tracestate;
        else delete headers.tracestate;
      }
      addForwardedHeaders(headers, req);
      let body: Buffer | IncomingMessage | null = null;
      if (f.body) {
        headers['content-length'] = String(f.body.length);
        body = f.body;
      } else if (hasBody(framing)) body = req;
      const streamed = body === req;
      // undici's own limits only for an upload (its clock restarts with each piece sent); 0 leaves the rest to the watch.
      const uploadLimit = streamed ? mlflow.silence.timeoutMs : 0;
      mlflow.pool.dispatch(
        {
          // A hook reads MLflow's answer to filter it: a HEAD would give it none, so MLflow is asked the GET,
          // and Node leaves the filtered body out of the HEAD's answer (its length is the filtered one's).
          method: req.method === 'HEAD' && f.onResponse ? 'GET' : (req.method ?? 'GET'),
          // The whole path, written by flowgate: MLflow gets exactly the target flowgate matched and decided on.
          path: mlflow.pathPrefix + f.encodedPath + (f.search ? `?${f.search}` : ''),
          headers,
          body,
          headersTimeout: uploadLimit,
          bodyTimeout: uploadLimit,
        },
        new ForwardedCall(res, f, process.hrtime.bigint(), streamed ? undefined : mlflow.silence),
      );
    },
  };
}

/**
 * Whether the client announced a body (a length above zero, or chunks): only then is the request
 * streamed on, and undici writes its framing again (the client's length, or chunks of its own).
 */
function hasBody(framing: BodyFraming): boolean {
  return framing.kind === 'chunked' || (framing.kind === 'length' && framing.length > 0);
}

export type Forwarder = ReturnType<typeof createForwarder>;
