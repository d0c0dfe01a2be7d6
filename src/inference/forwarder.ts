import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import { createProxyServer } from 'http-proxy-3';
import { FlowgateError } from '../errors.js';

export interface ForwardTarget {
  readonly upstream: URL;
  /** Path and query as the model server should see them. */
  readonly pathAndQuery: string;
  readonly preserveHost: boolean;
}

export interface Forwarder {
  /** Streams the request to the model server and its answer back; `onError` gets the error already mapped. */
  forward(req: IncomingMessage, res: ServerResponse, target: ForwardTarget, onError: (err: FlowgateError, cause: Error) => void): void;
  close(): Promise<void>;
}

export interface ForwarderOptions {
  /** Idle time allowed on the upstream connection before giving up with 504. */
  readonly timeoutMs: number;
  readonly maxSockets: number;
}

/**
 * One proxy and one keep-alive agent pair for every inference route. Bodies are piped both ways,
 * never collected, so tensors and event streams pass at the pace the two ends set.
 */
export function createForwarder(opts: ForwarderOptions): Forwarder {
  const agentOptions = { keepAlive: true, maxSockets: opts.maxSockets, maxFreeSockets: 32 };
  const agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };
  const proxy = createProxyServer({ proxyTimeout: opts.timeoutMs, xfwd: false, ws: false });
  const timedOut = new WeakSet<IncomingMessage>();

  // http-proxy-3 destroys the upstream request on timeout, which surfaces as a plain reset; marking
  // the request first lets the error be told apart as a 504.
  proxy.on('proxyReq', (proxyReq, req) => {
    proxyReq.once('timeout', () => timedOut.add(req));
  });

  return {
    forward(req, res, target, onError) {
      req.url = target.pathAndQuery;
      const agent = target.upstream.protocol === 'https:' ? agents.https : agents.http;
      proxy.web(req, res, { target: target.upstream, agent, changeOrigin: !target.preserveHost }, (err) => {
        const error = err as NodeJS.ErrnoException;
        const mapped = timedOut.has(req) || error.code === 'ETIMEDOUT'
          ? new FlowgateError('GATEWAY_TIMEOUT', 'The model server did not answer in time')
          : new FlowgateError('BAD_GATEWAY', 'The model server could not be reached');
        onError(mapped, error);
      });
    },
    async close() {
      proxy.close();
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
