import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Registry } from 'prom-client';
import { FlowgateError, sendError } from '../errors.js';
import type { Logger } from '../logging.js';
import { continueAuthorized } from '../http/expect-continue.js';
import { requestFraming, type BodyFraming } from '../http/framing.js';
import { API_KEY_HEADER, checkApiKey, type KeyCheck } from './api-key.js';
import type { InferenceConfig } from './config.js';
import { createForwarder } from './forwarder.js';
import type { KeyStore } from './keys.js';
import { createInferenceMetrics, type InferenceResult } from './metrics.js';
import { readModelServerPath, type ModelServerPath } from './protocol.js';
import { looseView, normalizeRequestPath } from './request-path.js';
import { compileRoutes, requestHost, type RouteMatch } from './routes.js';

export interface InferenceGatewayOptions {
  config: InferenceConfig;
  keys: KeyStore;
  registry: Registry;
  logger: Logger;
}

export interface InferenceGateway {
  /** True when the request belongs to an inference route and has been answered or forwarded. */
  handle(req: IncomingMessage, res: ServerResponse): boolean;
  /** Stops forwarding and drops pooled upstream connections; the key store is the caller's to close. */
  close(): Promise<void>;
}

/** Client-facing messages; a wrong key and a key for another route read the same. */
const REJECTION_MESSAGE: Record<Exclude<KeyCheck, { ok: true }>['reason'], string> = {
  missing_key: 'An x-api-key header is required',
  empty_key: 'The x-api-key header is empty',
  repeated_key: 'Send the x-api-key header exactly once',
  wrong_key: 'Invalid API key',
  key_out_of_scope: 'Invalid API key',
};

export function createInferenceGateway(opts: InferenceGatewayOptions): InferenceGateway {
  const routes = compileRoutes(opts.config);
  const metrics = createInferenceMetrics(opts.registry);
  const log = opts.logger.child({ component: 'inference' });
  const forwarder = createForwarder({
    timeoutMs: opts.config.upstreamTimeoutSeconds * 1000,
    maxSockets: opts.config.maxSocketsPerUpstream,
  });

  /** Counts and times the request once its response is over, with whatever result it ended on. */
  const observe = (routeName: string, res: ServerResponse) => {
    const started = performance.now();
    const outcome = { result: 'allowed' as InferenceResult };
    res.once('close', () => metrics.record(routeName, outcome.result, (performance.now() - started) / 1000));
    return outcome;
  };

  const reject = (req: IncomingMessage, res: ServerResponse, error: FlowgateError) => {
    // An unread body would otherwise be drained before the connection is reused.
    const hasBody = req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';
    if (hasBody) error.headers.Connection = 'close';
    sendError(res, error);
  };

  /** Only a request already allowed gets to this point: now the client may send its body. */
  const forward = (req: IncomingMessage, res: ServerResponse, match: RouteMatch, query: string, framing: BodyFraming, outcome: { result: InferenceResult }) => {
    delete req.headers[API_KEY_HEADER];
    continueAuthorized(req, res);
    forwarder.forward(
      req,
      res,
      { upstream: match.route.config.upstream, pathAndQuery: match.upstreamPath + query, preserveHost: match.route.config.preserveHost, framing },
      (error, cause) => {
        outcome.result = 'upstream_error';
        log.warn({ route: match.route.name, code: (cause as NodeJS.ErrnoException).code, status: error.status }, 'model server request failed');
        sendError(res, error);
      },
    );
  };

  return {
    handle(req, res) {
      const host = requestHost(req.headers.host);
      const url = req.url ?? '/';
      const normalized = normalizeRequestPath(url);
      if (!normalized.ok) {
        const claimed = routes.claims(host, looseView(url));
        if (!claimed) return false;
        observe(claimed.name, res).result = 'bad_request';
        reject(req, res, new FlowgateError('INVALID_PARAMETER_VALUE', `Rejected request path: ${normalized.reason}`));
        return true;
      }

      const { path, query } = normalized.value;
      const match = routes.match(host, path);
      if (!match) return false;
      const route = match.route;
      const outcome = observe(route.name, res);

      // Read before any key check, like the path: a body the model server would delimit differently is refused.
      let framing: BodyFraming;
      try {
        framing = requestFraming(req.headers);
      } catch (err) {
        outcome.result = 'bad_request';
        reject(req, res, err as FlowgateError);
        return true;
      }

      const target = readModelServerPath(req.method, match.upstreamPath, route.config.stripPrefix ? undefined : route.prefix);
      if (target.kind === 'metrics') {
        outcome.result = 'not_found';
        reject(req, res, new FlowgateError('ENDPOINT_NOT_FOUND', 'Not found'));
        return true;
      }

      if (route.config.publicHealth && target.kind !== 'unknown' && target.health) {
        outcome.result = 'health';
        forward(req, res, match, query, framing, outcome);
        return true;
      }

      const model = scopedModel(target, route.config.model);
      const check = checkApiKey(req.rawHeaders, opts.keys.current(), { route: route.name, model });
      if (!check.ok) {
        outcome.result = check.reason === 'missing_key' || check.reason === 'empty_key' ? 'missing_key' : 'wrong_key';
        // The reason and, for a key valid elsewhere, its id; never the presented value.
        log.info({ route: route.name, method: req.method, path, reason: check.reason, keyId: check.keyId, target: target.kind }, 'inference request rejected');
        reject(req, res, new FlowgateError('UNAUTHENTICATED', REJECTION_MESSAGE[check.reason]));
        return true;
      }

      log.debug({ route: route.name, method: req.method, path, keyId: check.keyId }, 'inference request allowed');
      forward(req, res, match, query, framing, outcome);
      return true;
    },
    close: () => forwarder.close(),
  };
}

/**
 * The model a key's `models` scope is checked against. A path flowgate does not recognise has none,
 * so a model-limited key is refused there rather than charged to the route's default model.
 */
function scopedModel(target: ModelServerPath, routeModel: string | undefined): string | undefined {
  if (target.kind === 'model') return target.model;
  if (target.kind === 'server') return routeModel;
  return undefined;
}
