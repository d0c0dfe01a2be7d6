import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { createAdminApi } from './admin/admin-api.js';
import { buildOpenApi } from './admin/openapi.js';
import { ADMIN_ROUTES } from './admin/routes.js';
import type { AdminDeps } from './admin/types.js';
import { createAuditLog } from './audit/audit-log.js';
import { decide } from './authz/decide.js';
import { createGrantsRepo } from './authz/grants-repo.js';
import { createPolicyReader } from './authz/policy.js';
import { effectiveOn } from './authz/effective.js';
import { createPatternGrantsRepo } from './authz/pattern-grants-repo.js';
import { createPatternWriter } from './authz/pattern-writer.js';
import type { ResourceRef } from './authz/types.js';
import type { Config } from './config.js';
import { FlowgateError } from './errors.js';
import { createLogger, requestLineLogger, type Logger } from './logging.js';
import { createSessionStore } from './oidc/sessions.js';
import { countedAuthenticator, countedLoader, createMetrics } from './metrics/registry.js';
import { startMetricsServer } from './metrics/server.js';
import { registerStoreGauges } from './metrics/store-gauges.js';
import { createDirectory } from './principals/directory.js';
import { createPrincipalCache } from './principals/principal-cache.js';
import { createMappingChanges } from './store/mapping-changes.js';
import { createMappingForgetter, type MappingForgetter } from './authz/mapping-forgetter.js';
import { followStore } from './follow-store.js';
import { createGrantWriter } from './authz/grant-writer.js';
import { createPrincipalWriter } from './principals/principal-writer.js';
import { ensureBootstrapAdmin } from './principals/bootstrap-admin.js';
import { createEvaluator } from './authz/evaluate.js';
import { createExplainer } from './authz/explain.js';
import type { Principal } from './principals/types.js';
import { createMlflowGate } from './proxy/mlflow-gate.js';
import { storedPageTokenKey } from './proxy/after/page-token-key.js';
import { createPageTokenSealer } from './proxy/after/page-token-sealer.js';
import { createUpstreamJson } from './upstream/json-client.js';
import { connectMlflow } from './upstream/mlflow-connection.js';
import { readMlflowVersion } from './upstream/mlflow-version.js';
import { createMlflowLookups } from './authz/mlflow-lookups.js';
import { createExistingResolver, createResourceResolver } from './authz/resolve.js';
import { createRouteMatcher } from './authz/route-matcher.js';
import { ROUTE_CATALOG } from './authz/catalog.js';
import { createRequestListener } from './proxy/app.js';
import { answerClientError } from './http/client-error.js';
import { decideBeforeContinue } from './http/expect-continue.js';
import { basicTokenLoader, createAuthenticator } from './proxy/authenticate.js';
import { createForwarder } from './proxy/forward.js';
import { preflightRoute } from './proxy/cors-preflight.js';
import { createReadiness } from './proxy/health.js';
import { recordedStatus } from './proxy/response-status.js';
import { openStore, type Store } from './store/store.js';
import { createTokenRepo } from './tokens/token-repo.js';
import { createTokenService } from './tokens/token-service.js';
import { createTokenVerifier } from './tokens/verifier.js';
import { createUi } from './ui/index.js';
import { VERSION } from './version.js';

const DAY_MS = 86_400_000;

export interface Flowgate {
  readonly server: Server;
  readonly url: string;
  readonly store: Store;
  readonly registry: Registry;
  /** The separate metrics listener's `/metrics` URL (never on the public port). */
  readonly metricsUrl: string;
  close(): Promise<void>;
}

export interface StartOptions {
  readonly logger?: Logger;
  /** The clock browser sessions use (tests move it to expire sessions). */
  readonly now?: () => number;
}

/**
 * Milliseconds to the microsecond for the request line: a full-precision double is written out
 * through V8's slow shortest-representation path, a rounded one is not.
 */
const microsecondsAsMs = (seconds: number) => Math.round(seconds * 1e6) / 1e3;

/** The composition root: builds every module once from the validated config and starts listening. */
export async function startFlowgate(config: Config, options: StartOptions = {}): Promise<Flowgate> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const requestLog = requestLineLogger(logger);
  const store = await openStore({
    dbPath: config.dbPath,
    databaseUrl: config.databaseUrl,
    watchMs: config.storeWatchMs,
    postgres: config.postgres,
    onError: (m, err) => logger.warn({ err: { message: err.message } }, m),
  });
  const sql = store.sql;
  const metrics = createMetrics({ version: VERSION, enforcing: config.enforce });
  const registry = metrics.registry;
  registerStoreGauges(registry, sql);

  const directory = createDirectory(sql);
  const grants = createGrantsRepo(sql);
  const audit = createAuditLog(sql);
  const tokenRepo = createTokenRepo(sql);
  const principals = createPrincipalCache(directory, config.tokenCacheSize, metrics.cache('principal'));
  const verifier = createTokenVerifier({
    repo: tokenRepo,
    usernameOf: async (id) => (await directory.userById(id))?.username,
    cacheSize: config.tokenCacheSize,
    onCache: metrics.cache('token'),
  });
  const patternGrants = createPatternGrantsRepo(sql);
  const policy = createPolicyReader(grants, patternGrants);
  const sessions = createSessionStore(sql, {
    idleMs: config.session.idleMinutes * 60_000,
    absoluteMs: config.session.absoluteHours * 3_600_000,
    cacheSize: config.tokenCacheSize,
    ...(options.now ? { now: options.now } : {}),
    onError: (m, err) => logger.warn({ err: { message: err.message } }, m),
  });
  const tokens = createTokenService({ sql, repo: tokenRepo, verifier, audit, maxDays: config.tokenMaxDays, sessionsEndedOf: sessions.forgetCachedOf });
  let mappings: MappingForgetter | undefined;
  // Following starts as the index is read, so no change committed in between is missed.
  await policy.reloadAll();
  const following = followStore(store, { policy, verifier, principals, sessions, mappings: () => mappings, logger });

  const canManage = (principal: Principal, ref: ResourceRef): boolean | Promise<boolean> => {
    // An experiment's name (for pattern grants) needs MLflow, reached through the evaluator built below.
    // An experiment MLflow does not have is refused as one the caller may not manage: its existence is not theirs to learn.
    if (policy.needsName(principal, ref))
      return Promise.resolve(evaluator.decideNamed(principal, 'manage', [ref])).then(
        (d) => d.allow,
        (e: unknown) => (e instanceof FlowgateError && e.code === 'RESOURCE_DOES_NOT_EXIST' ? false : Promise.reject(e)),
      );
    return decide({
      isAdmin: principal.isAdmin,
      need: 'manage',
      facts: [policy.factsFor(principal, ref)],
      defaultPermission: config.defaultPermission,
      createRequiresAdmin: config.createRequiresAdmin,
    }).allow;
  };

  const grantsChanged = (...refs: ResourceRef[]) => policy.changed(...refs);
  const grantWriter = createGrantWriter({ sql, grants, audit, grantsChanged });
  const patternWriter = createPatternWriter({ sql, patterns: patternGrants, audit, patternsChanged: () => policy.reloadPatterns() });
  const principalWriter = createPrincipalWriter({ sql, directory, audit, bootstrapAdmin: config.admin?.username });
  const adminDeps: AdminDeps = {
    sql,
    directory,
    principalWriter,
    grants,
    grantWriter,
    patternGrants,
    patternWriter,
    // The MLflow look-ups are built below; the admin API asks only once flowgate serves.
    effectiveOn: async (who, ref) =>
      effectiveOn(policy, who, ref.kind === 'experiment' && policy.needsName(who, ref) ? { ...ref, name: await lookups.experimentNameById(ref.id) } : ref, config.defaultPermission),
    audit,
    tokens,
    policyChanged: () => {
      principals.invalidate();
      return policy.reloadAll();
    },
    grantsChanged,
    forgetUserCredentials: (userId) => verifier.forgetUser(userId),
    canManage,
    endSessionsOf: (userId) => sessions.destroyAllOf(userId),
    oidcSignIn: config.oidc !== undefined,
    // The gate's parts are built below; explanations are asked for only once flowgate serves.
    explain: (principal, request, options) => explainer(principal, request, options),
    principalOf: (userId) => principals.principal(userId, 'basic'),
  };

  if (config.admin)
    await ensureBootstrapAdmin(config.admin, Date.now() + config.tokenMaxDays * DAY_MS, {
      sql,
      directory,
      principalWriter,
      tokens,
      endSessionsOf: (userId) => sessions.destroyAllOf(userId),
      logger,
    });

  const oidc =
    config.oidc?.redirectUrl !== undefined
      ? (await import('./oidc/index.js')).createOidc({
          config: { ...config.oidc, redirectUrl: config.oidc.redirectUrl },
          basePath: config.basePath,
          cookieSecure: config.session.cookieSecure,
          absoluteMs: config.session.absoluteHours * 3_600_000,
          sql,
          directory,
          principalWriter,
          principals,
          sessions,
          // Logins change memberships and users, never grants: the principal cache is what goes stale.
          policyChanged: () => principals.invalidate(),
          logger,
          protectedAdmin: config.admin?.username,
          ...(options.now ? { now: options.now } : {}),
        })
      : undefined;

  const ui = createUi({
    basePath: config.basePath,
    cookieSecure: config.session.cookieSecure,
    sessions,
    verifier,
    principals,
    logger,
    sessionMaxAgeSeconds: config.session.absoluteHours * 3600,
    oidc: oidc !== undefined,
    upstreamBase: config.upstreamUrl.replace(/\/+$/, '') + config.upstreamStaticPrefix,
    upstreamTimeoutMs: config.upstreamTimeoutMs,
  });
  const sessionCredential = oidc?.loader ?? ui.loader;

  const mlflow = connectMlflow({
    upstreamUrl: config.upstreamUrl,
    staticPrefix: config.upstreamStaticPrefix,
    timeoutMs: config.upstreamTimeoutMs,
  });
  const upstreamJson = createUpstreamJson(mlflow);
  // Read once before listening (a refused connection answers at once; a hung MLflow within 2 s).
  const mlflowVersion = await readMlflowVersion(mlflow);
  logger.info({ mlflowVersion: mlflowVersion ?? 'unknown' }, 'MLflow version');
  const lookups = createMlflowLookups({
    client: upstreamJson,
    cacheSize: config.lookupCacheSize,
    ttlMs: config.lookupCacheTtlMs,
    onCache: (name, hit) => metrics.cache(name)(hit),
    mlflowVersion,
    readVersion: () => readMlflowVersion(mlflow),
    staticPrefix: config.upstreamStaticPrefix,
  });
  mappings = createMappingForgetter(lookups, createMappingChanges(sql), (err) => {
    metrics.afterHookFailed('mapping_changes');
    logger.warn({ err: { message: err.message } }, 'mapping change not recorded for other flowgates');
  });
  const matcher = createRouteMatcher(ROUTE_CATALOG);
  const resolve = createResourceResolver(lookups);
  const evaluator = createEvaluator({
    policy,
    defaultPermission: config.defaultPermission,
    createRequiresAdmin: config.createRequiresAdmin,
    resolve,
    resolveExisting: createExistingResolver(lookups),
    lookups,
  });
  const explainer = createExplainer({
    matcher,
    resolve,
    evaluator,
    policy,
    defaultPermission: config.defaultPermission,
    groupsOf: (userId) => directory.groupsOfUser(userId),
    experimentName: (id) => lookups.experimentNameById(id),
  });
  const gate = createMlflowGate({
    matcher,
    catalog: ROUTE_CATALOG,
    resolve,
    evaluator,
    lookups,
    mappings,
    grantWriter,
    upstream: upstreamJson,
    maxBodyBytes: config.maxBodyBytes,
    logger,
    enforcing: config.enforce,
    onHookFailure: (hook) => metrics.afterHookFailed(hook),
    pageTokens: createPageTokenSealer({
      current: config.pageTokenKeys.current ?? (await storedPageTokenKey(sql)),
      previous: config.pageTokenKeys.previous,
    }),
  });

  const inference = config.inferenceConfigFile
    ? (await import('./inference/index.js')).openInference({ configFile: config.inferenceConfigFile, envKeys: config.inferenceApiKeys, registry, logger })
    : undefined;

  let openapiDocument: string | undefined;
  const forwarder = createForwarder(mlflow);
  const listener = createRequestListener({
    basePath: config.basePath,
    trustedRequestIdHeader: config.trustedRequestIdHeader,
    logger,
    authenticate: countedAuthenticator(
      createAuthenticator([
        countedLoader('basic', basicTokenLoader(verifier, principals), metrics),
        ...(sessionCredential ? [countedLoader('session', sessionCredential, metrics)] : []),
      ]),
      metrics,
    ),
    ownRoutes: oidc ? [oidc.ownRoute, ui.ownRoute] : [ui.ownRoute],
    onUnauthenticated: (req: IncomingMessage, res: ServerResponse) => (oidc?.onUnauthenticated(req, res) ?? false) || ui.onUnauthenticated(req, res),
    ...(inference ? { preRoutes: [inference.handle] } : {}),
    ...(config.skipAuthPreflight ? { preflightRoute: (req: IncomingMessage, path: string) => preflightRoute(req, path, matcher) } : {}),
    adminApi: createAdminApi(adminDeps, config.maxBodyBytes),
    gate,
    forwarder,
    readiness: createReadiness(store.ready, mlflow, logger),
    openapi: () => (openapiDocument ??= JSON.stringify(buildOpenApi(ADMIN_ROUTES, VERSION))),
    inFlight: metrics.inFlight,
    bodyReadTimeoutMs: config.bodyReadTimeoutMs,
    enforcing: config.enforce,
    onFinish: (scope, req, res) => {
      const route = scope.route ?? 'unmatched';
      if (scope.decision) {
        metrics.recordDecision({ decision: scope.decision, reason: scope.reason ?? 'none', resourceType: scope.resourceType ?? 'none', route }, scope.decisionSeconds);
      }
      if (scope.upstreamSeconds !== undefined) metrics.upstream(route, scope.upstreamStatus ?? 0, scope.upstreamSeconds);
      requestLog.info(
        {
          requestId: scope.requestId,
          method: req.method,
          route: scope.route,
          user: scope.principal?.username,
          decision: scope.decision,
          reason: scope.reason,
          resourceType: scope.resourceType,
          status: recordedStatus(res),
          // pino leaves out fields that are undefined: no object spreads on the request path.
          aborted: res.writableFinished ? undefined : true,
          durationMs: microsecondsAsMs(Number(process.hrtime.bigint() - scope.started) / 1e9),
          decisionMs: scope.decisionSeconds === undefined ? undefined : microsecondsAsMs(scope.decisionSeconds),
          upstreamMs: scope.upstreamSeconds === undefined ? undefined : microsecondsAsMs(scope.upstreamSeconds),
          upstreamStatus: scope.upstreamSeconds === undefined ? undefined : scope.upstreamStatus,
        },
        'request',
      );
    },
  });

  const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, listener);
  decideBeforeContinue(server, listener);
  server.on('clientError', answerClientError);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const url = `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`;
  const metricsServer = await startMetricsServer(registry, config.metricsHost, config.metricsPort, (err) =>
    logger.error({ err: { message: err.message } }, 'metrics collection failed'),
  ).catch((err: unknown) => {
    oidc?.close();
    server.close();
    void mlflow.close();
    void following.stop().then(() => store.close());
    throw err;
  });
  logger.info({ url: metricsServer.url }, 'metrics listening');
  logger.info({ url, upstream: config.upstreamUrl, basePath: config.basePath, version: VERSION }, 'flowgate listening');
  if (!config.enforce)
    logger.warn(
      { enforcing: false },
      'SHADOW MODE (FLOWGATE_ENFORCE=false): MLflow calls flowgate would refuse are forwarded, logged and counted as would_deny; authentication and the admin API are still enforced',
    );

  return {
    server,
    url,
    store,
    registry,
    metricsUrl: metricsServer.url,
    async close() {
      await Promise.all([
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        }),
        metricsServer.close(),
      ]);
      oidc?.close();
      await inference?.close();
      await mlflow.close();
      await following.stop();
      await store.close();
      logger.flush();
    },
  };
}
