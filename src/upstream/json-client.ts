import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { FlowgateError } from '../errors.js';

/** Whose request a call serves: MLflow sees the same request id and user as on a forwarded call. */
export interface CallContext {
  readonly requestId: string;
  readonly username: string | undefined;
  /** Told each call's status (0 when no answer came) and the seconds until its headers arrived. */
  readonly onUpstream?: (status: number, seconds: number) => void;
}

export interface UpstreamAnswer {
  readonly status: number;
  readonly json: unknown;
  /** The answer's bytes as MLflow sent them, for passing on unchanged. */
  readonly raw?: Buffer;
}

export interface UpstreamJson {
  /** Calls MLflow directly (no auth: it is flowgate's own loopback backend). */
  call(method: 'GET' | 'POST', path: string, input: Record<string, unknown>, context?: CallContext): Promise<UpstreamAnswer>;
  close(): void;
}

/** An answer larger than this is not a search page MLflow would send: refused rather than buffered. */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/**
 * The JSON calls flowgate makes to MLflow itself: filtered searches (on a client's behalf) and the
 * resource look-ups. node:http over one keep-alive agent rather than fetch: searches are on the
 * request path of every non-admin, and fetch's web streams cost several times more CPU per call.
 */
export function createUpstreamJson(upstreamUrl: string, staticPrefix: string, timeoutMs: number): UpstreamJson {
  const target = new URL(upstreamUrl);
  const secure = target.protocol === 'https:';
  const agent = secure ? new HttpsAgent({ keepAlive: true, maxSockets: 64 }) : new Agent({ keepAlive: true, maxSockets: 64 });
  const send = secure ? httpsRequest : httpRequest;
  const basePath = target.pathname.replace(/\/+$/, '') + staticPrefix;

  return {
    call(method, path, input, context) {
      let fullPath = basePath + path;
      let body: string | undefined;
      if (method === 'GET') {
        const qs = new URLSearchParams();
        for (const [k, v] of Object.entries(input)) {
          if (v === undefined || v === null) continue;
          for (const item of Array.isArray(v) ? v : [v]) qs.append(k, String(item));
        }
        const s = qs.toString();
        if (s) fullPath += `?${s}`;
      } else body = JSON.stringify(input);

      const headers: Record<string, string | number> =
        body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
      if (context) {
        headers['x-request-id'] = context.requestId;
        if (context.username !== undefined) headers['x-forwarded-user'] = context.username;
      }
      const started = process.hrtime.bigint();
      const report = (status: number) => context?.onUpstream?.(status, Number(process.hrtime.bigint() - started) / 1e9);
      return new Promise((resolve, reject) => {
        const req = send({
          protocol: target.protocol,
          hostname: target.hostname,
          port: target.port,
          method,
          path: fullPath,
          agent,
          headers,
        });
        const timer = setTimeout(() => req.destroy(new FlowgateError('GATEWAY_TIMEOUT', 'MLflow did not answer in time')), timeoutMs);
        let answered = false;
        const fail = (e: Error) => {
          clearTimeout(timer);
          if (!answered) report(0);
          answered = true;
          reject(e instanceof FlowgateError ? e : new FlowgateError('TEMPORARILY_UNAVAILABLE', 'MLflow is not reachable'));
        };
        req.on('error', fail);
        req.on('response', (res: IncomingMessage) => {
          answered = true;
          report(res.statusCode ?? 0);
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_ANSWER_BYTES) res.destroy(new FlowgateError('BAD_GATEWAY', 'MLflow answered with more than flowgate reads for a search'));
            else chunks.push(chunk);
          });
          res.on('error', fail);
          res.on('end', () => {
            clearTimeout(timer);
            const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
            const text = raw.toString('utf8');
            try {
              resolve({ status: res.statusCode ?? 502, json: text ? (JSON.parse(text) as unknown) : {}, raw });
            } catch {
              reject(new FlowgateError('BAD_GATEWAY', 'MLflow answered with something that is not JSON'));
            }
          });
        });
        req.end(body);
      });
    },
    close() {
      agent.destroy();
    },
  };
}
