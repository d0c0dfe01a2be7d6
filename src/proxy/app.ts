import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdminAccess, AdminApi } from '../admin/admin-api.js';
import { isAdminNamespace } from '../admin/routes.js';
import { badRequest, FlowgateError, forbidden, sendJson, unauthenticated } from '../errors.js';
import type { Logger } from '../logging.js';
import type { WorkspaceEntry } from '../workspaces/request-entry.js';
import type { Authenticator } from '../http/credentials.js';
import { fromAnotherSite } from '../http/cross-site.js';
import { continueAuthorized } from '../http/expect-continue.js';
import { isStateChanging } from '../oidc/csrf.js';
import type { Forwarder } from './forward.js';
import type { GatePass, MlflowGate } from './gate.js';
import type { ReadinessCheck } from './health.js';
import { isClientGone, setBodyReadTimeout } from '../http/body.js';
import { dropUnreadBody } from './lingering-close.js';
import { normalizeTarget, ownRoutePath, stripBasePath } from './normalize-path.js';
import type { RequestEnd, RequestScope } from './request-scope.js';
import { StoreUnavailableError } from '../store/store-errors.js';
import type { Tracing } from '../tracing/types.js';
import { sendErrorAnswer } from '../ui/error-page.js';

/** A handler for one of flowgate's own pages (login, callback, …); returns false when not its path. */
import type { OwnRoute } from '../http/own-route.js';

export type { RequestScope } from './request-scope.js';

export interface AppDeps {
  readonly basePath: string;
  readonly trustedRequestIdHeader: string;
  readonly logger: Logger;
  readonly authenticate: Authenticator;
  readonly adminApi: AdminApi;
  readonly gate: MlflowGate;
  readonly forwarder: Forwarder;
  readonly readiness: ReadinessCheck;
  /** The admin API's OpenAPI document, built when first asked for (most flowgates never are). */
  readonly openapi: () => string;
  /** Tried before anything else (inference routes). */
  readonly preRoutes?: readonly ((req: IncomingMessage, res: ServerResponse) => boolean)[];
  /** flowgate's own pages under the base path, tried after normalization and before authentication. */
  readonly ownRoutes?: readonly OwnRoute[];
  /** Called once per request when its response is done or the connection closed (`res.writableFinished` tells): the request line, metrics. */
  readonly onFinish?: RequestEnd;
  readonly inFlight?: { inc(): void; dec(): void };
  /**
   * Asked when a request ends in 401 with no principal (e.g. a browser navigation without a
   * session): answering true means it responded (the OIDC login redirect) instead of the 401 JSON.
   */
  readonly onUnauthenticated?: (req: IncomingMessage, res: ServerResponse) => boolean;
  /** Set when CORS preflights go to MLflow unauthenticated: the route template of the request a preflight announces. */
  readonly preflightRoute?: (req: IncomingMessage, path: string) => string | undefined;
  /** How long a JSON body flowgate reads itself (gate, admin API) may take to arrive. */
  readonly bodyReadTimeoutMs?: number;
  /** False in shadow mode; `/readyz` says so (without becoming unready). */
  readonly enforcing?: boolean;
  /** Set only when tracing is configured: then each request gets a trace on its scope. */
  readonly tracing?: Tracing;
  /** MLflow's workspaces: each request handled in the one it names (absent: MLflow's workspaces are not followed). */
  readonly workspaces?: WorkspaceEntry;
  /** The origin browsers see flowgate at, when configured (the OIDC redirect URL's): a same-origin page's `Origin`. */
  readonly externalOrigin?: string;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** flowgate's own read-only paths: another method (TRACE, POST, …) is refused here, never forwarded to MLflow. */
const OWN_GET_PATHS = new Set(['/healthz', '/readyz', '/flowgate/openapi.json']);

/** 405 in MLflow's shape, with the methods the path does serve. */
const notAllowed = (method: string, path: string, allowed: readonly string[]) =>
  new FlowgateError('METHOD_NOT_ALLOWED', `${method} is not allowed on ${path}`, { Allow: allowed.join(', ') });

const SCOPE = Symbol('flowgate request scope');
type ScopedResponse = ServerResponse & { [SCOPE]: RequestScope };

/** Records MLflow's answers on the scope: several calls (a refilled search) add up; the status is the last one's. */
function upstreamRecorder(scope: RequestScope): (status: number, seconds: number) => void {
  return (status, s) => {
    scope.upstreamStatus = status;
    scope.upstreamSeconds = (scope.upstreamSeconds ?? 0) + s;
  };
}

const seconds = (since: bigint) => Number(process.hrtime.bigint() - since) / 1e9;

/** The stage pipeline: accept → normalize → own routes → (CORS preflight) → authenticate → admin API or gate → forward. */
export function createRequestListener(deps: AppDeps) {
  async function handle(req: IncomingMessage, res: ServerResponse, scope: RequestScope): Promise<void> {
    // Errors end here, in MLflow's JSON shape (a page for a browser loading one): one promise per request, no extra catch handler.
    let normalizedPath: string | undefined;
    try {
      const target = normalizeTarget(req.url ?? '/');
      const path = stripBasePath(target.path, deps.basePath);
      normalizedPath = path;
      const encodedPath = stripBasePath(target.encoded, deps.basePath);
      if (path === undefined || encodedPath === undefined)
        throw new FlowgateError('ENDPOINT_NOT_FOUND', `Not found; flowgate serves under ${deps.basePath}/`);
      const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');

      if (method !== 'GET' && OWN_GET_PATHS.has(path)) {
        scope.route = path;
        throw notAllowed(req.method ?? '', path, ['GET', 'HEAD']);
      }
      if (method === 'GET' && path === '/healthz') {
        scope.route = '/healthz';
        return sendJson(res, 200, { status: 'ok' });
      }
      if (method === 'GET' && path === '/readyz') {
        scope.route = '/readyz';
        const r = await deps.readiness();
        const answer: Record<string, unknown> = { status: r.ready ? 'ready' : 'unready', store: r.store, upstream: r.upstream };
        // Present only in shadow mode, so probes and dashboards that know the usual answer see the change.
        if (deps.enforcing === false) answer.enforcing = false;
        if (r.reason) answer.reason = r.reason;
        return sendJson(res, r.ready ? 200 : 503, answer);
      }
      if (method === 'GET' && path === '/flowgate/openapi.json') {
        scope.route = '/flowgate/openapi.json';
        res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache' });
        res.end(deps.openapi());
        return;
      }
      for (const own of deps.ownRoutes ?? []) {
        const answered = own(req, res, { path, search: target.search, requestId: scope.requestId });
        if (answered instanceof Promise ? await answered : answered) return;
      }

      if (method === 'OPTIONS' && deps.preflightRoute) {
        const route = deps.preflightRoute(req, path);
        if (route !== undefined) {
          scope.route = route;
          scope.decision = 'allow';
          scope.reason = 'cors-preflight';
          scope.resourceType = 'none';
          continueAuthorized(req, res);
          deps.forwarder.forward(req, res, { encodedPath, search: target.search, username: undefined, requestId: scope.requestId, onUpstream: upstreamRecorder(scope), trace: scope.trace?.forwarding() });
          return;
        }
      }

      const authenticated = scope.trace ? scope.trace.stage('authenticate', () => deps.authenticate(req)) : deps.authenticate(req);
      const auth = authenticated instanceof Promise ? await authenticated : authenticated;
      scope.principal = auth.principal;
      // A request naming a workspace MLflow would refuse is refused as MLflow refuses it, before any decision.
      if (auth.principal && deps.workspaces) await deps.workspaces.check(req);

      if (isAdminNamespace(path)) {
        const ownRoute = ownRoutePath(req.url ?? '/');
        const ownPath = ownRoute === undefined ? undefined : (stripBasePath(ownRoute, deps.basePath) ?? '/');
        const m = ownPath === undefined ? undefined : deps.adminApi.match(method, ownPath);
        scope.route = m ? m.route.path : 'admin-unmatched';
        if (!auth.principal) throw unauthenticated();
        if (ownPath === undefined) throw badRequest("flowgate's own routes take no '.' or '..' path segments: a name in a path is one segment, its '/' percent-encoded");
        // Whatever the credential: Basic credentials a browser cached ride along on another site's form post too.
        if (isStateChanging(method) && fromAnotherSite(req, deps.externalOrigin))
          throw forbidden('Cross-site request refused: flowgate does not change anything for a page of another site');
        if (!m) {
          const allowed = deps.adminApi.allowedMethods(ownPath);
          if (allowed.length > 0) throw notAllowed(req.method ?? '', path, allowed);
          throw new FlowgateError('ENDPOINT_NOT_FOUND', `No admin endpoint ${method} ${path}`);
        }
        scope.resourceType = 'admin';
        const decisionStarted = process.hrtime.bigint();
        let granted: AdminAccess;
        try {
          const principal = auth.principal;
          const authorized = scope.trace ? scope.trace.stage('decide', () => deps.adminApi.authorize(principal, m)) : deps.adminApi.authorize(principal, m);
          granted = authorized instanceof Promise ? await authorized : authorized;
        } finally {
          scope.decisionSeconds = seconds(decisionStarted);
        }
        scope.reason = granted.reason;
        scope.decision = 'allow';
        continueAuthorized(req, res);
        await deps.adminApi.handle(req, res, granted, new URLSearchParams(target.search));
        return;
      }

      // The gate writes the decision's labels on the scope itself (a refusal is a throw).
      const decisionStarted = process.hrtime.bigint();
      let pass: GatePass;
      try {
        const gateRequest = { req, method, path, encodedPath, search: target.search, principal: auth.principal, scope };
        const authorized = scope.trace ? scope.trace.stage('decide', () => deps.gate.authorize(gateRequest)) : deps.gate.authorize(gateRequest);
        pass = authorized instanceof Promise ? await authorized : authorized;
      } finally {
        scope.decisionSeconds = seconds(decisionStarted);
      }
      const onUpstream = upstreamRecorder(scope);
      continueAuthorized(req, res);
      // Awaited, so its failure lands in the catch below.
      if (pass.respond) {
        const respond = pass.respond;
        const context = { requestId: scope.requestId, username: auth.principal?.username, onUpstream };
        return await (scope.trace ? scope.trace.stage('after-hook', () => respond(res, context)) : respond(res, context));
      }
      deps.forwarder.forward(req, res, {
        encodedPath: pass.encodedPath ?? encodedPath,
        search: pass.search ?? target.search,
        username: auth.principal?.username,
        requestId: scope.requestId,
        onUpstream,
        body: pass.body,
        onResponse: scope.trace && pass.onResponse ? scope.trace.afterHook(pass.onResponse) : pass.onResponse,
        trace: scope.trace?.forwarding(),
      });
    } catch (err) {
      failed(req, res, scope, err, normalizedPath);
    }
  }

  function failed(req: IncomingMessage, res: ServerResponse, scope: RequestScope, err: unknown, path: string | undefined): void {
    if (isClientGone(err)) {
      // Nobody is left to answer; the request line records it (499, aborted).
      scope.reason ??= (err as FlowgateError).reason;
      deps.logger.debug({ requestId: scope.requestId }, 'client went away while its request body was read');
      return;
    }
    if (err instanceof FlowgateError) {
      if (err.status === 401 || err.status === 403) scope.decision = 'deny';
      scope.reason ??= err.reason ?? err.code;
      // One line per refused request, with the driver's words (no connection password) and no stack.
      if (err instanceof StoreUnavailableError)
        deps.logger.warn({ requestId: scope.requestId, route: scope.route, cause: err.detail }, 'policy store unavailable: answered 503');
    } else deps.logger.error({ err: { message: (err as Error).message, stack: (err as Error).stack }, requestId: scope.requestId }, 'unexpected error');
    if (err instanceof FlowgateError && err.status === 401 && !scope.principal && !res.headersSent && deps.onUnauthenticated?.(req, res)) return;
    if (!req.complete) dropUnreadBody(req, res);
    sendErrorAnswer(req, res, err, { basePath: deps.basePath, path });
  }

  /** One listener function for every response; the request's scope rides on the response. */
  function onClose(this: ServerResponse): void {
    deps.inFlight?.dec();
    const scope = (this as ScopedResponse)[SCOPE];
    scope.trace?.finish(scope, this.req, this);
    deps.onFinish?.(scope, this.req, this);
  }

  return function listener(req: IncomingMessage, res: ServerResponse): void {
    const offered = req.headers[deps.trustedRequestIdHeader];
    const requestId = typeof offered === 'string' && REQUEST_ID.test(offered) ? offered : randomUUID();
    const tracing = deps.tracing;
    // Without tracing the scope keeps its one shape and nothing is allocated for a trace.
    const scope: RequestScope = tracing ? { requestId, started: process.hrtime.bigint(), trace: tracing.startRequest(req) } : { requestId, started: process.hrtime.bigint() };
    res.setHeader('X-Request-Id', requestId);
    deps.inFlight?.inc();
    (res as ScopedResponse)[SCOPE] = scope;
    // 'close' comes once per response, whether it finished or the connection went away.
    res.on('close', onClose);
    if (deps.bodyReadTimeoutMs !== undefined && (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined))
      setBodyReadTimeout(req, deps.bodyReadTimeoutMs);
    for (const pre of deps.preRoutes ?? []) if (pre(req, res)) return;
    void (deps.workspaces ? deps.workspaces.run(req, () => handle(req, res, scope)) : handle(req, res, scope));
  };
}
