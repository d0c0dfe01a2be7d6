import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context } from '@opentelemetry/api';
import type { RequestScope } from '../proxy/request-scope.js';

/**
 * What the request path sees of tracing. Only types live here: the pipeline imports them, while the
 * OpenTelemetry SDK is loaded (`start-tracing.ts`) only when tracing is configured, and a flowgate
 * without it holds no tracer at all (every hook is `scope.trace?.…` or a ternary on it).
 */

/** The W3C Trace Context headers a call to MLflow carries. */
export interface TraceHeaders {
  readonly traceparent: string;
  readonly tracestate?: string;
}

/** The named stages of a request below its server span (docs/architecture.md, "Stages"). */
export type StageName = 'authenticate' | 'decide' | 'resolve' | 'evaluate' | 'prepare-after-hook' | 'after-hook';

/** One request's trace: its server span and the stage spans under it. */
export interface RequestTrace {
  /** The server span's context: what a decision event (OTLP logs) is linked to. */
  readonly context: Context;
  /**
   * Runs `run` as a stage: what it starts (stages, look-ups to MLflow) is a child of the stage's span,
   * which ends when `run` returns, throws, or the promise it returns settles.
   */
  stage<T>(name: StageName, run: () => T): T;
  /** Opens the forward span (it ends with the response) and answers the headers MLflow is sent. */
  forwarding(): TraceHeaders | undefined;
  /** Wraps an after-hook that reads MLflow's answer: its span runs from MLflow's headers to the response's end. */
  afterHook<A extends unknown[]>(handler: (...args: A) => void): (...args: A) => void;
  /** Ends every span of the request, the server span last, with the scope's labels as attributes. */
  finish(scope: RequestScope, req: IncomingMessage, res: ServerResponse): void;
}

/** A look-up or search call flowgate makes to MLflow, traced as a client span of the request it serves. */
export interface TracedCall {
  readonly headers: TraceHeaders | undefined;
  /** MLflow's status, 0 when no answer came. */
  end(status: number): void;
}

export interface Tracing {
  /** The trace of a request that just arrived, continuing the client's `traceparent` when it sent a valid one. */
  startRequest(req: IncomingMessage): RequestTrace;
  /** A span for a call to MLflow made while a request's stage runs; undefined outside any request. */
  call(method: string, path: string): TracedCall | undefined;
  /** Exports what is still buffered and stops. */
  shutdown(): Promise<void>;
}
