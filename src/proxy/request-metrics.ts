import type { Authenticator, CredentialLoader } from '../http/credentials.js';
import { countedAuthenticator, countedLoader, type AuthMethodLabel, type Metrics } from '../metrics/registry.js';
import { createAuthenticator } from './authenticate.js';
import type { RequestEnd } from './request-scope.js';

/**
 * The per-request instruments, fed from the request scope: the in-flight gauge (bumped as a request
 * arrives and as its response closes), and once it closed, its decision
 * (`flowgate_authz_decisions_total`, `flowgate_authz_decision_duration_seconds`) and MLflow's answer
 * (`flowgate_upstream_request_duration_seconds`).
 */
export interface RequestMetrics {
  readonly inFlight: { inc(): void; dec(): void };
  readonly finished: RequestEnd;
}

export function createRequestMetrics(metrics: Pick<Metrics, 'inFlight' | 'recordDecision' | 'upstream'>): RequestMetrics {
  return {
    inFlight: metrics.inFlight,
    finished(scope) {
      const route = scope.route ?? 'unmatched';
      if (scope.decision)
        metrics.recordDecision(
          { decision: scope.decision, reason: scope.reason ?? 'none', resourceType: scope.resourceType ?? 'none', route },
          scope.decisionSeconds,
        );
      if (scope.upstreamSeconds !== undefined) metrics.upstream(route, scope.upstreamStatus ?? 0, scope.upstreamSeconds);
    },
  };
}

/** One kind of credential and its loader, in the order they are tried. */
export type NamedLoader = readonly [method: Exclude<AuthMethodLabel, 'none'>, load: CredentialLoader];

/**
 * The authenticator over the credential loaders in order, every attempt counted
 * (`flowgate_authn_attempts_total`): by kind when a credential was offered, as anonymous when none was.
 */
export function countedAuthentication(loaders: readonly NamedLoader[], metrics: Metrics): Authenticator {
  return countedAuthenticator(
    createAuthenticator(loaders.map(([method, load]) => countedLoader(method, load, metrics))),
    metrics,
  );
}
