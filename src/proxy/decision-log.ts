import { createHash, createHmac, randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import pino, { type DestinationStream } from 'pino';
import { ConfigError, type DecisionLogConfig } from '../config.js';
import type { RequestEnd, RequestScope } from './request-scope.js';

/** One decision as written: fields left undefined are left out. */
export interface DecisionEvent {
  readonly requestId: string;
  readonly user: string | undefined;
  readonly via: string | undefined;
  readonly admin: boolean | undefined;
  readonly route: string | undefined;
  readonly resources: readonly LoggedResource[] | undefined;
  /** How many resources the decision was about, when more than the event lists. */
  readonly resourcesTotal: number | undefined;
  readonly decision: string;
  readonly reason: string | undefined;
  readonly policyGeneration: number;
  readonly sampled: number | undefined;
}

/** The resources an event lists; a request about more says how many in `resourcesTotal`. */
export const MAX_LOGGED_RESOURCES = 20;

/** Where events go: a JSON line (stdout, or a file a SIEM agent tails), or an OTLP log record. */
export type DecisionSink = (event: DecisionEvent, scope: RequestScope) => void;

/** JSON lines through pino, to stdout or a file opened for appending. */
export function jsonLineSink(destination: DestinationStream): DecisionSink {
  const out = pino({ base: undefined, timestamp: pino.stdTimeFunctions.isoTime, formatters: { level: () => ({ type: 'decision' }) } }, destination);
  return (event) => out.info(event);
}

export interface DecisionLogDeps {
  readonly write: DecisionSink;
  /** How many times this flowgate's policy changed since it started: which policy decided. */
  readonly policyGeneration: () => number;
  /** For allow sampling; tests pass their own. */
  readonly random?: () => number;
}

/**
 * A resource as the decision was about it: its kind and id, or a pseudonym for the id. An id longer
 * than `MAX_LOGGED_ID` characters is cut there and followed by `…sha256:` and the first 16 hex digits
 * of the SHA-256 of the whole id (two long ids with the same start stay apart).
 */
export interface LoggedResource {
  readonly kind: string;
  readonly id: string;
}

/** The characters of a resource id an event keeps: an id is what the caller sent, of any length. */
export const MAX_LOGGED_ID = 256;

/** The id, or its first `MAX_LOGGED_ID` characters (no half of a surrogate pair), `…sha256:` and a short hash of the whole. */
function loggedId(id: string): string {
  if (id.length <= MAX_LOGGED_ID) return id;
  const code = id.charCodeAt(MAX_LOGGED_ID - 1);
  const end = code >= 0xd800 && code <= 0xdbff ? MAX_LOGGED_ID - 1 : MAX_LOGGED_ID;
  return `${id.slice(0, end)}…sha256:${createHash('sha256').update(id).digest('hex').slice(0, 16)}`;
}

/**
 * One event per authorization decision (`"type":"decision"`), apart from the request log: who, the route
 * template, the resources decided on, the verdict, its deciding reason and the policy generation. Denies
 * are always written, allows at the configured share. Masked fields carry a keyed pseudonym (the same
 * value gives the same pseudonym under one key), never the value. Resource ids are what the caller sent
 * (a name MLflow does not have included): at most `MAX_LOGGED_RESOURCES` of them, each cut to
 * `MAX_LOGGED_ID` characters, so one request cannot push a body's worth of chosen text into the security log.
 */
export function createDecisionLog(config: DecisionLogConfig, deps: DecisionLogDeps): RequestEnd {
  const write = deps.write;
  const key = config.maskKey ?? randomBytes(32);
  const pseudonym = (value: string) => `~${createHmac('sha256', key).update(value).digest('base64url').slice(0, 22)}`;
  const maskUser = config.mask.includes('user');
  const maskResources = config.mask.includes('resources');
  const random = deps.random ?? Math.random;

  const resourcesOf = (scope: RequestScope): LoggedResource[] | undefined =>
    scope.resources?.slice(0, MAX_LOGGED_RESOURCES).map((ref) => ({ kind: ref.kind, id: maskResources ? pseudonym(ref.id) : loggedId(ref.id) }));

  return (scope) => {
    const decision = scope.decision;
    if (decision === undefined) return;
    if (decision === 'allow' && config.allowSample < 1 && random() >= config.allowSample) return;
    const principal = scope.principal;
    write(
      {
        requestId: scope.requestId,
        user: principal === undefined ? undefined : maskUser ? pseudonym(principal.username) : principal.username,
        via: principal?.via,
        admin: principal?.isAdmin,
        route: scope.route,
        resources: resourcesOf(scope),
        resourcesTotal: (scope.resources?.length ?? 0) > MAX_LOGGED_RESOURCES ? scope.resources!.length : undefined,
        decision,
        reason: scope.reason,
        policyGeneration: deps.policyGeneration(),
        sampled: decision === 'allow' && config.allowSample < 1 ? config.allowSample : undefined,
      },
      scope,
    );
  };
}

/** The JSON-line destination the configuration names, or undefined when the decision log is off or goes to OTLP. */
export function decisionLogDestination(config: DecisionLogConfig): ReturnType<typeof pino.destination> | undefined {
  if (config.destination === 'off' || config.destination === 'otlp') return undefined;
  if (config.destination === 'stdout') return pino.destination({ dest: 1, sync: false });
  // Opened once now, so a directory or an unwritable path stops the start naming the setting, not an unhandled stream error later.
  const file = config.file!;
  try {
    mkdirSync(dirname(file), { recursive: true });
    closeSync(openSync(file, 'a'));
  } catch (e) {
    throw new ConfigError([`FLOWGATE_DECISION_LOG_FILE: cannot append to ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`]);
  }
  return pino.destination({ dest: file, sync: false, mkdir: true, append: true });
}
