import type { CallContext } from '../upstream/json-client.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal } from '../principals/types.js';
import type { ResourceKind } from '../resources/kinds.js';
import type { Reason } from '../resources/reasons.js';
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
  /**
   * Filled in by the gate as soon as it knows them, so a denial (a throw) is still labelled in
   * metrics and logs: the route template (catalog pattern, never the raw path), the resource type
   * the decision is about, and the decision reason (`group-deny`, `default-permission`, …).
   */
  readonly notes?: GateNotes;
}

export interface GateNotes {
  route?: string;
  resourceType?: ResourceKind | 'none';
  reason?: Reason;
  /** Shadow mode: the decision denied, and the request goes on anyway. */
  wouldDeny?: boolean;
}

/** The gate's verdict when it allows: how to forward. A denial is a thrown FlowgateError. */
export interface GatePass {
  readonly routeTemplate: string;
  readonly reason: Reason;
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
