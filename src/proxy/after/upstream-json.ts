import { FlowgateError } from '../../errors.js';

export interface UpstreamJson {
  /** Calls MLflow directly (no auth: it is flowgate's own loopback backend). */
  call(method: 'GET' | 'POST', path: string, input: Record<string, unknown>): Promise<{ status: number; json: unknown }>;
}

export function createUpstreamJson(upstreamUrl: string, staticPrefix: string, timeoutMs: number): UpstreamJson {
  return {
    async call(method, path, input) {
      let url = `${upstreamUrl}${staticPrefix}${path}`;
      let body: string | undefined;
      if (method === 'GET') {
        const qs = new URLSearchParams();
        for (const [k, v] of Object.entries(input)) {
          if (v === undefined || v === null) continue;
          for (const item of Array.isArray(v) ? v : [v]) qs.append(k, String(item));
        }
        const s = qs.toString();
        if (s) url += `?${s}`;
      } else body = JSON.stringify(input);
      let res: Response;
      try {
        res = await fetch(url, {
          method,
          headers: body ? { 'content-type': 'application/json' } : {},
          body,
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (e) {
        const timedOut = (e as Error).name === 'TimeoutError';
        throw new FlowgateError(timedOut ? 'GATEWAY_TIMEOUT' : 'TEMPORARILY_UNAVAILABLE', timedOut ? 'MLflow did not answer in time' : 'MLflow is not reachable');
      }
      const text = await res.text();
      let json: unknown;
      try {
        json = text ? (JSON.parse(text) as unknown) : {};
      } catch {
        throw new FlowgateError('BAD_GATEWAY', 'MLflow answered with something that is not JSON');
      }
      return { status: res.status, json };
    },
  };
}
