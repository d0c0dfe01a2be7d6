import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { createAdminApi } from './admin/admin-api.js';
import { buildOpenApi } from './admin/openapi.js';
import { ADMIN_ROUTES } from './admin/routes.js';
import type { AdminDeps } from './admin/types.js';
import { createAuditLog } from './audit/audit-log.js';
import { decide } from './authz/decide.js';
import { createGrantsRepo } from './authz/grants-repo.js';
import { createPolicyReader } from './authz/policy.js';
import type { ResourceRef } from './authz/types.js';
import type { Config } from './config.js';
import { createLogger, type Logger } from './logging.js';
import { createDirectory } from './principals/directory.js';
import { createPrincipalCache } from './principals/principal-cache.js';
import type { Principal } from './principals/types.js';
import { adminOnlyGate } from './proxy/admin-only-gate.js';
import { createRequestListener } from './proxy/app.js';
import { basicTokenLoader, createAuthenticator } from './proxy/authenticate.js';
import { createForwarder } from './proxy/forward.js';
import { createReadiness } from './proxy/health.js';
import { openDatabase, type Db } from './store/database.js';
import { createTokenRepo } from './tokens/token-repo.js';
import { createTokenService } from './tokens/token-service.js';
import { createTokenVerifier } from './tokens/verifier.js';
import { VERSION } from './version.js';

const DAY_MS = 86_400_000;

export interface Flowgate {
  readonly server: Server;
  readonly url: string;
  readonly db: Db;
  readonly registry: Registry;
  close(): Promise<void>;
}

export interface StartOptions {
  readonly logger?: Logger;
}

/** The composition root: builds every module once from the validated config and starts listening. */
export async function startFlowgate(config: Config, options: StartOptions = {}): Promise<Flowgate> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const db = openDatabase(config.dbPath);
  const registry = new Registry();

  const directory = createDirectory(db);
  const grants = createGrantsRepo(db);
  const audit = createAuditLog(db);
  const tokenRepo = createTokenRepo(db);
  const principals = createPrincipalCache(directory, config.tokenCacheSize);
  const verifier = createTokenVerifier({
    repo: tokenRepo,
    usernameOf: (id) => directory.userById(id)?.username,
    cacheSize: config.tokenCacheSize,
  });
  const tokens = createTokenService({ db, repo: tokenRepo, verifier, audit, maxDays: config.tokenMaxDays });
  const policy = createPolicyReader(grants, config.lookupCacheSize);

  const canManage = (principal: Principal, ref: ResourceRef) =>
    decide({
      isAdmin: principal.isAdmin,
      need: 'manage',
      facts: [policy.factsFor(principal.userId, ref)],
      defaultPermission: config.defaultPermission,
      createRequiresAdmin: config.createRequiresAdmin,
    }).allow;

  const adminDeps: AdminDeps = {
    db,
    directory,
    grants,
    audit,
    tokens,
    policyChanged: () => {
      policy.invalidate();
      principals.invalidate();
    },
    forgetUserCredentials: (userId) => verifier.forgetUser(userId),
    canManage,
  };

  if (config.admin) bootstrapAdmin(config.admin, config.tokenMaxDays, adminDeps, logger);

  const forwarder = createForwarder({
    upstreamUrl: config.upstreamUrl,
    staticPrefix: config.upstreamStaticPrefix,
    timeoutMs: config.upstreamTimeoutMs,
  });
  const listener = createRequestListener({
    basePath: config.basePath,
    trustedRequestIdHeader: config.trustedRequestIdHeader,
    logger,
    authenticate: createAuthenticator([basicTokenLoader(verifier, principals)]),
    adminApi: createAdminApi(adminDeps, config.maxBodyBytes),
    gate: adminOnlyGate,
    forwarder,
    readiness: createReadiness(db, config.upstreamUrl, config.upstreamStaticPrefix),
    openapi: JSON.stringify(buildOpenApi(ADMIN_ROUTES, VERSION)),
    onFinish: (scope, req, res) => {
      logger.info(
        {
          requestId: scope.requestId,
          method: req.method,
          route: scope.route,
          user: scope.principal?.username,
          decision: scope.decision,
          reason: scope.reason,
          status: res.statusCode,
          durationMs: Number(process.hrtime.bigint() - scope.started) / 1e6,
        },
        'request',
      );
    },
  });

  const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, listener);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const url = `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`;
  logger.info({ url, upstream: config.upstreamUrl, basePath: config.basePath, version: VERSION }, 'flowgate listening');

  return {
    server,
    url,
    db,
    registry,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      forwarder.close();
      db.close();
    },
  };
}

/** The configured admin exists, is an admin, and holds the configured token: at every start. */
function bootstrapAdmin(admin: NonNullable<Config['admin']>, maxDays: number, deps: AdminDeps, logger: Logger) {
  let user = deps.directory.userByName(admin.username);
  if (!user) {
    user = deps.db.transaction(() => {
      const created = deps.directory.createUser({
        username: admin.username,
        displayName: admin.username,
        isAdmin: true,
        isServiceAccount: false,
      });
      deps.audit.record({ actor: 'flowgate', action: 'user.create', target: `user:${created.username}`, newValue: { is_admin: true } });
      return created;
    })();
  } else if (!user.isAdmin || user.isServiceAccount) {
    throw new Error(`FLOWGATE_ADMIN_USERNAME: '${admin.username}' exists and is not an administrator; choose another name`);
  }
  deps.tokens.install('flowgate', user, admin.token, Date.now() + maxDays * DAY_MS);
  logger.info({ user: admin.username }, 'bootstrap admin ready');
}
