import type { Dispatcher } from 'undici';
import { FlowgateError } from '../errors.js';
import { WORKSPACE_HEADER } from '../workspaces/names.js';
import { currentWorkspace } from '../workspaces/request-workspace.js';
import { upstreamFailure, type MlflowConnection } from './mlflow-connection.js';
import type { Listening, SilenceWatch } from './silence-watch.js';
import type { Tracing } from '../tracing/types.js';

/** Whose request a call serves: MLflow sees the same request id and user as on a forwarded call. */
export interface CallContext {
  readonly requestId: string;
  readonly username: string | undefined;
  /** Told each call's status (0 when no answer came) and the seconds until its headers arrived. */
  readonly onUpstream?: (status: number, seconds: number) => void;
}

export interface UpstreamAnswer {
  readonly status: number;
  readonly json: unknown;
  /** The answer's bytes as MLflow sent them, for passing on unchanged. */
  readonly raw?: Buffer;
}

export interface UpstreamJson {
  /** Calls MLflow directly (no auth: it is flowgate's own loopback backend). */
  call(method: 'GET' | 'POST', path: string, input: Record<string, unknown>, context?: CallContext): Promise<UpstreamAnswer>;
}

/**
 * MLflow answered with something that is not JSON: a client sees a 502 as before, while a caller
 * can tell a route MLflow does not have (Flask's HTML 404 or 405) from a broken answer.
 */
export class UnreadableAnswer extends FlowgateError {
  constructor(readonly upstreamStatus: number) {
    super('BAD_GATEWAY', 'MLflow answered with something that is not JSON');
  }
}

/** An answer larger than this is not a search page MLflow would send: refused rather than buffered. */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/** One JSON call: MLflow's whole answer gathered, then parsed. */
class JsonCall implements Dispatcher.DispatchHandler, Listening {
  private status = 0;
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private abort: ((err?: Error) => void) | undefined;
  lastHeard = 0;
  watchPrev: Listening | undefined = undefined;
  watchNext: Listening | undefined = undefined;

  constructor(
    private readonly silence: SilenceWatch,
    private readonly started: bigint,
    private readonly context: CallContext | undefined,
    private readonly resolve: (answer: UpstreamAnswer) => void,
    private readonly reject: (err: Error) => void,
  ) {}

  private report(status: number): void {
    this.context?.onUpstream?.(status, Number(process.hrtime.bigint() - this.started) / 1e9);
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
    this.silence.watch(this);
  }

  giveUp(err: Error): void {
    this.abort?.(err);
  }

  onHeaders(statusCode: number): boolean {
    this.lastHeard = Date.now();
    this.status = statusCode;
    this.report(statusCode);
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.lastHeard = Date.now();
    this.size += chunk.length;
    if (this.size > MAX_ANSWER_BYTES) {
      this.abort?.(new FlowgateError('BAD_GATEWAY', 'MLflow answered with more than flowgate reads for a search'));
      return false;
    }
    this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    this.silence.done(this);
    const raw = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.size);
    const text = raw.toString('utf8');
    let json: unknown;
    try {
      json = text ? (JSON.parse(text) as unknown) : {};
    } catch {
      this.reject(new UnreadableAnswer(this.status));
      return;
    }
    this.resolve({ status: this.status, json, raw });
  }

  onError(err: Error): void {
    this.silence.done(this);
    if (this.status === 0) this.report(0);
    this.reject(upstreamFailure(err));
  }
}

/**
 * The JSON calls flowgate makes to MLflow itself: filtered searches (on a client's behalf) and the
 * resource look-ups, over the pool forwarded calls use. A dispatch handler rather than fetch or
 * undici's `request`: searches are on the request path of every non-admin, and web streams or a
 * body stream per call cost several times more CPU than gathering the chunks.
 */
export function createUpstreamJson(mlflow: MlflowConnection, tracing?: Tracing): UpstreamJson {
  return {
    call(method, path, input, context) {
      let fullPath = mlflow.pathPrefix + path;
      let body: string | undefined;
      if (method === 'GET') {
        const qs = new URLSearchParams();
        for (const [k, v] of Object.entries(input)) {
          if (v === undefined || v === null) continue;
          for (const item of Array.isArray(v) ? v : [v]) qs.append(k, String(item));
        }
        const s = qs.toString();
        if (s) fullPath += `?${s}`;
      } else body = JSON.stringify(input);

      const headers: Record<string, string> = body === undefined ? { host: mlflow.host } : { host: mlflow.host, 'content-type': 'application/json' };
      // Every call flowgate makes acts in the caller's workspace, as the caller's own request does.
      const workspace = currentWorkspace();
      if (workspace !== undefined) headers[WORKSPACE_HEADER] = workspace;
      if (context) {
        headers['x-request-id'] = context.requestId;
        if (context.username !== undefined) headers['x-forwarded-user'] = context.username;
      }
      // With tracing on, a call made while a request's stage runs is a span of that request, and MLflow continues its trace.
      const traced = tracing?.call(method, path);
      if (traced?.headers !== undefined) {
        headers.traceparent = traced.headers.traceparent;
        if (traced.headers.tracestate !== undefined) headers.tracestate = traced.headers.tracestate;
      }
      const started = process.hrtime.bigint();
      const answered = new Promise<UpstreamAnswer>((resolve, reject) => {
        mlflow.pool.dispatch({ method, path: fullPath, headers, body: body ?? null }, new JsonCall(mlflow.silence, started, context, resolve, reject));
      });
      if (traced === undefined) return answered;
      answered.then(
        (answer) => traced.end(answer.status),
        () => traced.end(0),
      );
      return answered;
    },
  };
}
