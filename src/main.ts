import { urlWithoutCredentials } from './shown-url.js';
import { createJobOwners } from './jobs/job-owners.js';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { createAdminApi } from './admin/admin-api.js';
import { batchWorkspaceCheck } from './admin/batch.js';
import { buildOpenApi } from './admin/openapi.js';
import { ADMIN_ROUTES } from './admin/routes.js';
import type { AdminDeps } from './admin/types.js';
import { createAuditLog } from './audit/audit-log.js';
import { createGrantsRepo } from './authz/grants-repo.js';
import { createPolicyReader } from './authz/policy.js';
import { effectiveOn } from './authz/effective.js';
import { mlflowExistence, pruneOrphanGrants } from './authz/orphan-grants.js';
import { createPatternGrantsRepo } from './authz/pattern-grants-repo.js';
import { createPatternWriter } from './authz/pattern-writer.js';
import type { ResourceRef } from './authz/types.js';
import type { Config } from './config.js';
import { FlowgateError } from './errors.js';
import { createLogger, type Logger } from './logging.js';
import { createSessionStore } from './oidc/sessions.js';
import { createMetrics } from './metrics/registry.js';
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
import { warmHttpParsers } from './upstream/warm-http-parsers.js';
import { clusterNamesOf } from './bearer/cluster-names.js';
import { createUserSwitch } from './principals/user-switch.js';
import { createEvaluator } from './authz/evaluate.js';
import { createExplainer } from './authz/explain.js';
import type { Principal } from './principals/types.js';
import { createMlflowGate } from './proxy/mlflow-gate.js';
import { storedPageTokenKey } from './proxy/after/page-token-key.js';
import { createPageTokenSealer } from './proxy/after/page-token-sealer.js';
import { createUpstreamJson } from './upstream/json-client.js';
import { connectMlflow } from './upstream/mlflow-connection.js';
import { readMlflowVersion } from './upstream/mlflow-version.js';
import { readMlflowVersionAtStart } from './upstream/start-version.js';
import { createMlflowLookups } from './authz/mlflow-lookups.js';
import { createExistingResolver, createResourceResolver } from './authz/resolve.js';
import { createRouteMatcher } from './authz/route-matcher.js';
import { ROUTE_CATALOG } from './authz/catalog.js';
import { createRequestListener } from './proxy/app.js';
import { createWorkspaceEntry } from './workspaces/request-entry.js';
import { createWorkspaceMode } from './workspaces/workspace-mode.js';
import { createWorkspaceStanding } from './workspaces/standing.js';
import { createWorkspaceGroupRules } from './workspaces/group-rules.js';
import { createRuleGrantsGiven } from './workspaces/rule-grants-given.js';
import { basicTokenLoader, createAuthenticator } from './proxy/authenticate.js';
import { createForwarder } from './proxy/forward.js';
import { preflightRoute } from './proxy/cors-preflight.js';
import { createReadiness } from './proxy/health.js';
import { createDecisionLog, decisionLogDestination, jsonLineSink } from './proxy/decision-log.js';
import { createRequestLog } from './proxy/request-log.js';
import { countedAuthentication, createRequestMetrics, type NamedLoader } from './proxy/request-metrics.js';
import { hasNumericId } from './resources/kinds.js';
import { createCloser, type Closer } from './start/closer.js';
import { listenPublic } from './start/public-server.js';
import { SchemaTooNewError } from './store/database.js';
import { openStore, redactedUrl, type Store } from './store/store.js';
import { createTokenRepo } from './tokens/token-repo.js';
import { createTokenService } from './tokens/token-service.js';
import { createTokenVerifier } from './tokens/verifier.js';
import { createLegacyPasswordRepo } from './tokens/legacy-password-repo.js';
import { createLegacyPasswordVerifier } from './tokens/legacy-passwords.js';
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
 * The composition root: builds every module once from the validated config, in dependency order,
 * and starts listening. Each module that holds something open (the store and its change feed, the
 * OIDC purge timer, the MLflow pool, inference, the listeners) registers its close as soon as it is
 * open: a start that fails at any step closes everything opened before it, last opened first, and
 * `close()` unwinds the same stack.
 */
export async function startFlowgate(config: Config, options: StartOptions = {}): Promise<Flowgate> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const closer = createCloser();
  // Closed last: the lines of the stop are written.
  closer.defer(() => logger.flush());
  try {
    return await open(config, options, logger, closer);
  } catch (err) {
    await closer.close().catch((closeErr: unknown) => {
      logger.error({ err: { message: (closeErr as Error).message } }, 'flowgate did not start, and closing what it had opened failed');
      logger.flush();
    });
    throw err;
  }
}

/**
 * A store that cannot be opened, named as it was configured (the URL without its password): the driver's
 * own message ("connect ECONNREFUSED 127.0.0.1:5432") names neither the policy store nor the setting.
 */
function storeOpenFailure(e: unknown, config: Config): unknown {
  if (!(e instanceof Error) || e instanceof SchemaTooNewError) return e;
  const where = config.databaseUrl !== undefined ? `FLOWGATE_DATABASE_URL ${redactedUrl(config.databaseUrl)}` : `FLOWGATE_DB_PATH ${config.dbPath}`;
  return new Error(`cannot open the policy store (${where}): ${e.message}`, { cause: e });
}

async function open(config: Config, options: StartOptions, logger: Logger, closer: Closer): Promise<Flowgate> {
  await warmHttpParsers();
  const store = await openStore({
    dbPath: config.dbPath,
    databaseUrl: config.databaseUrl,
    watchMs: config.storeWatchMs,
    postgres: config.postgres,
    onError: (m, err) => logger.warn({ err: { message: err.message } }, m),
  }).catch((e: unknown) => {
    throw storeOpenFailure(e, config);
  });
  closer.defer(() => store.close());
  const sql = store.sql;
  const metrics = createMetrics({ version: VERSION, enforcing: config.enforce });
  const registry = metrics.registry;
  registerStoreGauges(registry, sql);

  const directory = createDirectory(sql);
  const grants = createGrantsRepo(sql);
  const audit = createAuditLog(sql);
  const tokenRepo = createTokenRepo(sql);
  const principals = createPrincipalCache(directory, config.tokenCacheSize, metrics.cache('principal'));
  const legacyPasswordRepo = createLegacyPasswordRepo(sql);
  const legacyPasswords = config.legacyPasswords
    ? createLegacyPasswordVerifier({
        repo: legacyPasswordRepo,
        cacheSize: config.tokenCacheSize,
        onUnsupported: (user) => logger.warn({ user }, 'imported password hash of a kind flowgate cannot check: that password does not work'),
      })
    : undefined;
  const verifier = createTokenVerifier({
    repo: tokenRepo,
    usernameOf: async (id) => (await directory.userById(id))?.username,
    cacheSize: config.tokenCacheSize,
    onCache: metrics.cache('token'),
    onForget: (userId) => (userId === undefined ? legacyPasswords?.forgetAll() : legacyPasswords?.forgetUser(userId)),
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
  const tokens = createTokenService({ sql, repo: tokenRepo, verifier, audit, maxDays: config.tokenMaxDays, sessionsEndedOf: sessions.forgetCachedOf, retireImportedPassword: (userId) => legacyPasswordRepo.remove(userId) });
  let mappings: MappingForgetter | undefined;
  // Following takes what it has seen before the index is read, so no change committed meanwhile is missed.
  const following = followStore(store, { policy, verifier, principals, sessions, mappings: () => mappings, logger });
  closer.defer(() => following.stop());
  await following.loaded;

  const grantsChanged = (refs: readonly ResourceRef[]) => policy.changed(refs);
  const patternsChanged = () => policy.reloadPatterns();
  const grantWriter = createGrantWriter({ sql, grants, audit, grantsChanged, patterns: patternGrants, patternsChanged });
  const patternWriter = createPatternWriter({ sql, patterns: patternGrants, audit, patternsChanged });
  const workspaceRules = createWorkspaceGroupRules({ rules: config.workspaceGroupRules, grants, writer: grantWriter, directory, given: createRuleGrantsGiven(sql), logger });
  const principalWriter = createPrincipalWriter({
    sql,
    directory,
    audit,
    bootstrapAdmin: config.admin?.username,
    onGroupCreated: (group) => workspaceRules.groupCreated(group),
    retireImportedPassword: (userId) => legacyPasswordRepo.remove(userId),
  });
  await workspaceRules.reconcile();

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
          clusterNames: clusterNamesOf(config.bearer),
          ...(options.now ? { now: options.now } : {}),
        })
      : undefined;
  if (oidc) closer.defer(() => oidc.close());
  // JWTs of the configured issuers (OIDC providers, Kubernetes clusters) as `Authorization: Bearer`.
  const bearer = config.bearer
    ? (await import('./bearer/index.js')).createBearer({
        config: config.bearer,
        sql,
        directory,
        principalWriter,
        principals,
        policyChanged: () => principals.invalidate(),
        protectedAdmin: config.admin?.username,
        signInIssuer: config.oidc?.issuerUrl,
        signInRoles: config.oidc,
        cacheSize: config.tokenCacheSize,
        logger,
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

  // Tracing only when configured: otherwise the OpenTelemetry SDK is not even loaded. Closed after the
  // listener (registered before it), so the last requests' spans are exported.
  const tracing = config.tracing
    ? (await import('./tracing/start-tracing.js')).startTracing(config.tracing, { routeOf: (method, path) => matcher.match(method, path)?.entry.pattern })
    : undefined;
  if (tracing) closer.defer(() => tracing.shutdown());
  const mlflow = connectMlflow({
    upstreamUrl: config.upstreamUrl,
    staticPrefix: config.upstreamStaticPrefix,
    timeoutMs: config.upstreamTimeoutMs,
  });
  closer.defer(() => mlflow.close());
  const upstreamJson = createUpstreamJson(mlflow, tracing);
  // Whether MLflow runs with workspaces: asked now, then followed from every readiness probe's answer.
  const workspaceMode = createWorkspaceMode(upstreamJson, logger);
  await workspaceMode.refresh();
  // Read once before listening (a refused connection answers at once; a hung MLflow within 2 s).
  const mlflowVersion = await readMlflowVersionAtStart(mlflow, config.upstreamUrl, logger);
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
  const resolve = createResourceResolver(lookups, { workspaceMode });
  const jobStarters = createJobOwners(sql);
  const workspaceStanding = createWorkspaceStanding({ policy, mode: workspaceMode, defaultWorkspaceOpen: config.defaultWorkspaceOpen });
  const evaluator = createEvaluator({
    policy,
    defaultPermission: config.defaultPermission,
    createRequiresAdmin: config.createRequiresAdmin,
    resolve,
    resolveExisting: createExistingResolver(lookups),
    lookups,
    jobStarters,
    workspaces: workspaceStanding,
    workspaceMode,
  });
  const explainer = createExplainer({
    matcher,
    resolve,
    evaluator,
    policy,
    defaultPermission: config.defaultPermission,
    groupsOf: (userId) => directory.groupsOfUser(userId),
    experimentName: (id) => lookups.experimentNameById(id),
    workspaces: workspaceStanding,
  });
  const gate = createMlflowGate({
    matcher,
    catalog: ROUTE_CATALOG,
    resolve,
    evaluator,
    lookups,
    mappings,
    grantWriter,
    jobStarters,
    upstream: upstreamJson,
    maxBodyBytes: config.maxBodyBytes,
    logger,
    enforcing: config.enforce,
    onHookFailure: (hook) => metrics.afterHookFailed(hook),
    workspaces: workspaceStanding,
    pageTokens: createPageTokenSealer({
      current: config.pageTokenKeys.current ?? (await storedPageTokenKey(sql)),
      previous: config.pageTokenKeys.previous,
    }),
  });

  // The admin API: its access rules and the Manage screens decide as the gate does.
  const canManage = (principal: Principal, ref: ResourceRef): boolean | Promise<boolean> => {
    // An experiment's name (for pattern grants) needs MLflow, reached through the evaluator.
    // An experiment MLflow does not have is refused as one the caller may not manage: its existence is not theirs to learn.
    if (policy.needsName(principal, ref))
      return Promise.resolve(evaluator.decideNamed(principal, 'manage', [ref])).then(
        (d) => d.allow,
        (e: unknown) => (e instanceof FlowgateError && e.code === 'RESOURCE_DOES_NOT_EXIST' ? false : Promise.reject(e)),
      );
    // The gate's own decision (the caller's workspace standing included): a workspace's administrator manages its grants.
    return evaluator.decideFor(principal, 'manage', [ref]).allow;
  };

  // Disabling a user (admin API, SCIM) ends their tokens and sessions at once, on every flowgate on the store.
  const setUserActive = createUserSwitch({
    principalWriter,
    revokeTokens: (actor, user) => tokens.revokeAll(actor, user),
    endSessionsOf: (userId) => sessions.destroyAllOf(userId),
    forgetUser: (userId) => verifier.forgetUser(userId),
    principalsChanged: () => principals.invalidate(),
  });
  const adminDeps: AdminDeps = {
    sql,
    directory,
    principalWriter,
    grants,
    grantWriter,
    patternGrants,
    patternWriter,
    effectiveOn: async (who, ref) =>
      effectiveOn(policy, who, hasNumericId(ref) && policy.needsName(who, ref) ? { ...ref, name: await lookups.experimentNameById(ref.id) } : ref, config.defaultPermission, workspaceStanding),
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
    userSessions: { list: (userId) => sessions.listOf(userId), end: (userId, id) => sessions.destroyOneOf(userId, id) },
    oidcSignIn: config.oidc !== undefined,
    explain: explainer,
    principalOf: (userId) => principals.principal(userId, 'basic'),
    pruneOrphans: (actor, dryRun) => pruneOrphanGrants({ grants, writer: grantWriter, exists: mlflowExistence(upstreamJson), actor, dryRun }),
    setUserActive,
    clusterNames: clusterNamesOf(config.bearer),
  };
  // SCIM provisioning (docs/machine-identity.md#scim): its own token and rate limit, answered before authentication.
  const scim = config.scim
    ? (await import('./scim/index.js')).createScim({
        config: config.scim,
        basePath: config.basePath,
        maxBodyBytes: config.maxBodyBytes,
        sql,
        directory,
        principalWriter,
        setActive: setUserActive,
        principalsChanged: () => principals.invalidate(),
        policyChanged: adminDeps.policyChanged,
        forgetUser: (userId) => verifier.forgetUser(userId),
        endSessionsOf: (userId) => sessions.destroyAllOf(userId),
        signIn: config.oidc !== undefined ? 'oidc' : 'local',
        protectedAdmin: config.admin?.username,
        clusterNames: clusterNamesOf(config.bearer),
        logger,
      })
    : undefined;

  const inference = config.inferenceConfigFile
    ? (await import('./inference/index.js')).openInference({ configFile: config.inferenceConfigFile, envKeys: config.inferenceApiKeys, registry, logger })
    : undefined;
  if (inference) closer.defer(() => inference.close());

  const workspaceEntry = createWorkspaceEntry(workspaceMode, upstreamJson);
  const requestLog = createRequestLog(logger);
  const decisionDestination = decisionLogDestination(config.decisionLog);
  if (decisionDestination)
    closer.defer(
      () =>
        new Promise<void>((done) => {
          decisionDestination.once('close', () => done());
          decisionDestination.end();
        }),
    );
  const otlpDecisions = config.decisionLog.otlp ? (await import('./tracing/otlp-decision-log.js')).startOtlpDecisionLog(config.decisionLog.otlp) : undefined;
  if (otlpDecisions) closer.defer(() => otlpDecisions.shutdown());
  const decisionWrite = decisionDestination ? jsonLineSink(decisionDestination) : otlpDecisions?.write;
  const decisionLog = decisionWrite && createDecisionLog(config.decisionLog, { write: decisionWrite, policyGeneration: () => policy.generation });
  const requestMetrics = createRequestMetrics(metrics);
  let openapiDocument: string | undefined;
  const forwarder = createForwarder(mlflow);
  // The credentials a request may carry, in the order they are tried (Basic wins over a session cookie).
  const credentialLoaders: readonly NamedLoader[] = [
    ['basic', basicTokenLoader(verifier, principals, legacyPasswords)],
    ...(bearer ? [['bearer', bearer.loader] as const] : []),
    ...(sessionCredential ? [['session', sessionCredential] as const] : []),
  ];
  const listener = createRequestListener({
    basePath: config.basePath,
    trustedRequestIdHeader: config.trustedRequestIdHeader,
    ...(config.oidc?.redirectUrl !== undefined ? { externalOrigin: new URL(config.oidc.redirectUrl).origin } : {}),
    logger,
    authenticate: countedAuthentication(credentialLoaders, metrics),
    ownRoutes: [...(scim ? [scim.ownRoute] : []), ...(oidc ? [oidc.ownRoute, ui.ownRoute] : [ui.ownRoute])],
    onUnauthenticated: (req: IncomingMessage, res: ServerResponse) => (oidc?.onUnauthenticated(req, res) ?? false) || ui.onUnauthenticated(req, res),
    ...(inference ? { preRoutes: [inference.handle] } : {}),
    ...(config.skipAuthPreflight ? { preflightRoute: (req: IncomingMessage, path: string) => preflightRoute(req, path, matcher) } : {}),
    // A batch call's `workspace` is checked as a request's X-MLFLOW-WORKSPACE is; a call's credential is proven again once its body arrived.
    adminApi: createAdminApi(
      {
        ...adminDeps,
        checkWorkspace: batchWorkspaceCheck(workspaceMode, workspaceEntry),
        credentialNow: createAuthenticator(credentialLoaders.map(([, load]) => load)),
      },
      config.maxBodyBytes,
    ),
    gate,
    forwarder,
    readiness: createReadiness(store.ready, mlflow, {
      logger,
      onServerInfo: (text) => workspaceMode.observe(text),
      indexFresh: following.fresh,
    }),
    workspaces: workspaceEntry,
    openapi: () => (openapiDocument ??= JSON.stringify(buildOpenApi(ADMIN_ROUTES, VERSION))),
    inFlight: requestMetrics.inFlight,
    bodyReadTimeoutMs: config.bodyReadTimeoutMs,
    enforcing: config.enforce,
    tracing,
    onFinish: (scope, req, res) => {
      requestMetrics.finished(scope, req, res);
      requestLog(scope, req, res);
      decisionLog?.(scope, req, res);
    },
  });

  const { server, url, close: closeServer } = await listenPublic(listener, config.port, config.host);
  closer.defer(closeServer);
  const metricsServer = await startMetricsServer(registry, config.metricsHost, config.metricsPort, (err) =>
    logger.error({ err: { message: err.message } }, 'metrics collection failed'),
  );
  closer.defer(() => metricsServer.close());
  logger.info({ url: metricsServer.url }, 'metrics listening');
  logger.info({ url, upstream: urlWithoutCredentials(config.upstreamUrl), basePath: config.basePath, version: VERSION }, 'flowgate listening');
  if (!config.enforce)
    logger.warn(
      { enforcing: false },
      'SHADOW MODE (FLOWGATE_ENFORCE=false): MLflow calls flowgate would refuse are forwarded, logged and counted as would_deny; authentication and the admin API are still enforced',
    );

  return { server, url, store, registry, metricsUrl: metricsServer.url, close: () => closer.close() };
}
