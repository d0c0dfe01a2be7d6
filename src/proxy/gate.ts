import type { IncomingMessage } from 'node:http';
import type { Principal } from '../principals/types.js';
import type { ResponseHandler } from './forward.js';

/** What the gate sees of a request bound for MLflow, after normalization and authentication. */
export interface GateRequest {
  readonly req: IncomingMessage;
  /** HEAD already folded into GET. */
  readonly method: string;
  /** Decoded path relative to the base path. */
  readonly path: string;
  /** Percent-encoded path relative to the base path: matched and forwarded. */
  readonly encodedPath: string;
  readonly search: string;
  readonly principal: Principal | undefined;
}

/** The gate's verdict when it allows: how to forward. A denial is a thrown FlowgateError. */
export interface GatePass {
  readonly routeTemplate: string;
  readonly reason: string;
  readonly body?: Buffer;
  /** The path to forward, when the gate rewrote it (never a different resource). */
  readonly encodedPath?: string;
  readonly search?: string;
  readonly onResponse?: ResponseHandler;
}

export interface MlflowGate {
  authorize(request: GateRequest): Promise<GatePass>;
}
