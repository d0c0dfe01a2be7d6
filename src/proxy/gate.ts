import type { CallContext } from '../upstream/json-client.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal } from '../principals/types.js';
import type { ResponseHandler } from './forward.js';
import type { DecisionScope } from './request-scope.js';

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
  /**
   * The request's one scope, which the gate writes as soon as it knows them, so a refusal (a throw)
   * is still labelled in metrics and logs: the route template (catalog pattern or `unmatched`, never
   * the raw path), the resource kind the decision is about (`ResourceKind` or `none`), the decision
   * reason (`group-deny`, `default-permission`, …), and, once the request passes, the decision
   * (`allow`, or `would_deny` when shadow mode lets a refusal through).
   */
  readonly scope: DecisionScope;
}

/**
 * The gate's verdict when it allows: how to forward (the decision itself is on the scope). A denial
 * is a thrown FlowgateError.
 */
export interface GatePass {
  readonly body?: Buffer;
  /** The path to forward, when the gate rewrote it (never a different resource). */
  readonly encodedPath?: string;
  readonly search?: string;
  readonly onResponse?: ResponseHandler;
  /**
   * When set, flowgate answers the request itself (filtered searches) instead of forwarding it,
   * calling MLflow on the request's behalf as `context` says.
   */
  readonly respond?: (res: ServerResponse, context: CallContext) => Promise<void>;
}

export interface MlflowGate {
  /** Synchronous when nothing needs reading or looking up. */
  authorize(request: GateRequest): GatePass | Promise<GatePass>;
}
