import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ResourceRef } from '../authz/types.js';
import type { ErrorCode } from '../errors.js';
import type { Principal } from '../principals/types.js';
import type { ResourceKind } from '../resources/kinds.js';
import type { Reason } from '../resources/reasons.js';
import type { RequestTrace } from '../tracing/types.js';

/** would_deny: shadow mode forwarded a request the decision refused. */
export type Decision = 'allow' | 'deny' | 'would_deny';

/**
 * What a decision was about: a resource kind, nothing (`none`: an unmatched or resource-less route),
 * or the admin API (`admin`). The gate writes `ResourceKind | 'none'`; the pipeline writes `admin`.
 */
export type DecisionSubject = ResourceKind | 'none' | 'admin';

/**
 * The labels of a request's decision, written by whichever stage knows them as soon as it does, so
 * a refusal (a throw) is still labelled in the request line and metrics: the gate for a request
 * bound for MLflow, the pipeline for the admin API and flowgate's own routes.
 */
export interface DecisionScope {
  /** The route template (catalog pattern, admin route path, `unmatched`), never the raw path. */
  route?: string;
  /** Set once the request passed (`allow`, or `would_deny` in shadow mode); `deny` when it was refused. */
  decision?: Decision;
  /** The decision's reason; for a request that failed without one, its error code. */
  reason?: Reason | ErrorCode;
  resourceType?: DecisionSubject;
  /** The resources the decision was about, as resolved (for the decision log). */
  resources?: readonly ResourceRef[];
  /** The request's trace, present only when tracing is configured: stages open their spans on it. */
  readonly trace?: RequestTrace;
}

/** One request's scope: created when it arrives, written by every stage, read once when its response closed. */
export interface RequestScope extends DecisionScope {
  readonly requestId: string;
  readonly started: bigint;
  principal?: Principal;
  /** Time spent deciding (gate call or admin access check), when a decision was made. */
  decisionSeconds?: number;
  /** MLflow's status (0 = no answer) and the time until its response headers arrived. */
  upstreamStatus?: number;
  upstreamSeconds?: number;
}

/** Called once per request when its response is done or the connection closed (`res.writableFinished` tells). */
export type RequestEnd = (scope: RequestScope, req: IncomingMessage, res: ServerResponse) => void;
