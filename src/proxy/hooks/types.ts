import type { IncomingMessage } from 'node:http';
import type { Evaluator, Verdict } from '../../authz/evaluate.js';
import type { GrantWriter } from '../../authz/grant-writer.js';
import type { MappingForgetter } from '../../authz/mapping-forgetter.js';
import type { CachedMlflowLookups } from '../../authz/mlflow-lookups.js';
import type { ResolveRequest } from '../../authz/resolve.js';
import type { AfterHook, ResourceRef, RouteEntry } from '../../authz/types.js';
import type { JobOwners } from '../../jobs/job-owners.js';
import type { Logger } from '../../logging.js';
import type { Principal } from '../../principals/types.js';
import type { UpstreamJson } from '../../upstream/json-client.js';
import type { PageTokenSealer } from '../after/page-token-sealer.js';
import type { GatePass } from '../gate.js';
import type { WorkspaceStanding } from '../../workspaces/standing.js';

/** What a hook needs to know about the request it works for, once it is allowed. */
export interface HookCall {
  readonly hook: AfterHook;
  readonly entry: RouteEntry;
  readonly principal: Principal;
  readonly request: ResolveRequest;
  readonly refs: readonly ResourceRef[];
  readonly verdict: Verdict;
  /** The client's request: a hook that rewrites MLflow's answer asks for it uncompressed. */
  readonly req: IncomingMessage;
}

/** The services hooks share, built once. */
export interface HookContext {
  readonly evaluator: Evaluator;
  readonly grantWriter: GrantWriter;
  readonly lookups: CachedMlflowLookups;
  readonly mappings: MappingForgetter;
  readonly upstream: UpstreamJson;
  readonly pageTokens: PageTokenSealer;
  /** Who started each MLflow job. */
  readonly jobStarters: JobOwners;
  readonly logger: Logger;
  /** Counts a failed hook (a metric tests and alerts hold at zero). */
  readonly onHookFailure?: (hook: string) => void;
  /** Callers' standing in MLflow's workspaces. */
  readonly workspaces?: WorkspaceStanding;
}

/** A hook turns an allowed request into how it is forwarded: a new body, an answer handler, or an answer of flowgate's own. */
export type Hook = (call: HookCall, ctx: HookContext) => Partial<GatePass> | Promise<Partial<GatePass>>;

/** Who a hook works for, and whether it reads the request's JSON body: data the route plans are compiled from. */
export interface HookSpec {
  readonly run: Hook;
  /** `non-admins`: filters and checks that do nothing for an administrator. */
  readonly for: 'everyone' | 'non-admins';
  readonly readsBody: boolean;
  /** The hook needs the route's resources even for an administrator. */
  readonly resolves?: true;
}

/** An answer flowgate must rewrite is held in memory up to this size; a larger one is refused. */
export const REWRITTEN_ANSWER_MAX_BYTES = 64 * 1024 * 1024;

export const obj = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {});

export const hookFailed = (ctx: HookContext, hook: string) => (err: unknown) => {
  ctx.onHookFailure?.(hook);
  ctx.logger.error({ hook, err: { message: (err as Error).message } }, 'after-response hook failed');
};

/** Synchronous unless an experiment's name must be looked up for the caller's pattern grants. */
export const canRead = (ctx: HookContext, principal: Principal, refs: readonly ResourceRef[]): boolean | Promise<boolean> => {
  if (refs.length === 0) return false;
  const decision = ctx.evaluator.decideNamed(principal, 'read', refs);
  return decision instanceof Promise ? decision.then((d) => d.allow) : decision.allow;
};
