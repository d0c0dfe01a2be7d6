import type { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SpanKind, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { RequestScope } from '../proxy/request-scope.js';
import { ATTR, describeFailure, describeRequest } from './attributes.js';
import { outgoingHeaders } from './incoming-context.js';
import type { RequestTrace, StageName, TracedCall, TraceHeaders } from './types.js';

/**
 * The stage running now and the request it serves, carried through callbacks and promises. The owner
 * is checked before use: a callback that undici or a shared look-up runs in another request's
 * context must not hang its spans under that request.
 */
export interface ActiveStage {
  readonly owner: OpenRequestTrace;
  readonly context: Context;
}

/** One request's spans: the server span, the stages under it, the forward and after-hook spans that end with the response. */
export class OpenRequestTrace implements RequestTrace {
  readonly context: Context;
  private readonly server: Span;
  private readonly recording: boolean;
  /** The server span as the running stage, for stages started outside any other. */
  private readonly atTop: ActiveStage;
  private forward: Span | undefined;
  private afterHooks: Span[] | undefined;

  constructor(
    private readonly tracer: Tracer,
    private readonly active: AsyncLocalStorage<ActiveStage>,
    parent: Context,
    method: string,
  ) {
    this.server = tracer.startSpan(method, { kind: SpanKind.SERVER, attributes: { [ATTR.method]: method } }, parent);
    this.recording = this.server.isRecording();
    this.context = trace.setSpan(parent, this.server);
    this.atTop = { owner: this, context: this.context };
  }

  /** The context of the stage running now in this request, else the server span's. */
  private current(): Context {
    const running = this.active.getStore();
    return running !== undefined && running.owner === this ? running.context : this.context;
  }

  stage<T>(name: StageName, run: () => T): T {
    // A request the sampler left out gets no stage spans; its calls to MLflow still carry its trace id.
    if (!this.recording) return this.active.run(this.atTop, run);
    const parent = this.current();
    const span = this.tracer.startSpan(name, undefined, parent);
    let result: T;
    try {
      result = this.active.run({ owner: this, context: trace.setSpan(parent, span) }, run);
    } catch (err) {
      describeFailure(span, err);
      span.end();
      throw err;
    }
    if (result instanceof Promise) {
      // The caller handles the rejection; this branch only closes the span.
      result.then(
        () => span.end(),
        (err: unknown) => {
          describeFailure(span, err);
          span.end();
        },
      );
      return result;
    }
    span.end();
    return result;
  }

  forwarding(): TraceHeaders | undefined {
    const parent = this.current();
    const span = this.tracer.startSpan('forward', { kind: SpanKind.CLIENT }, parent);
    this.forward = span;
    return outgoingHeaders(trace.setSpan(parent, span));
  }

  afterHook<A extends unknown[]>(handler: (...args: A) => void): (...args: A) => void {
    return (...args: A) => {
      const span = this.tracer.startSpan('after-hook', undefined, this.context);
      (this.afterHooks ??= []).push(span);
      try {
        this.active.run({ owner: this, context: trace.setSpan(this.context, span) }, () => handler(...args));
      } catch (err) {
        describeFailure(span, err);
        throw err;
      }
    };
  }

  /** A call to MLflow under `parent` (a look-up, a search page): a client span named by the call's route template. */
  call(method: string, template: string, parent: Context): TracedCall {
    const span = this.tracer.startSpan(`${method} ${template}`, { kind: SpanKind.CLIENT, attributes: { [ATTR.method]: method, [ATTR.urlTemplate]: template } }, parent);
    return {
      headers: outgoingHeaders(trace.setSpan(parent, span)),
      end(status) {
        span.setAttribute(ATTR.status, status);
        if (status === 0 || status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      },
    };
  }

  finish(scope: RequestScope, req: IncomingMessage, res: ServerResponse): void {
    const forward = this.forward;
    if (forward !== undefined) {
      forward.setAttribute(ATTR.method, req.method ?? 'GET');
      if (scope.route !== undefined) forward.setAttribute(ATTR.route, scope.route);
      const status = scope.upstreamStatus ?? 0;
      forward.setAttribute(ATTR.status, status);
      if (status === 0 || status >= 500) forward.setStatus({ code: SpanStatusCode.ERROR });
      forward.end();
    }
    if (this.afterHooks !== undefined) for (const span of this.afterHooks) span.end();
    describeRequest(this.server, scope, req, res);
    this.server.end();
  }
}
