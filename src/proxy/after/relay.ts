import type { IncomingMessage, ServerResponse } from 'node:http';

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'upgrade', 'proxy-connection']);
/** Answers larger than this are relayed without the hook looking at them (MLflow's create answers are tiny). */
const MAX_INSPECTED_BYTES = 4 * 1024 * 1024;

/**
 * Reads a (small JSON) upstream answer, lets `inspect` act on it when MLflow succeeded, then relays
 * it to the client unchanged. A hook failure never turns MLflow's success into an error: the side
 * effect is logged by the caller.
 */
export function relayAfter(
  inspect: (json: unknown) => void | Promise<void>,
  onHookError: (err: unknown) => void,
): (upstream: IncomingMessage, res: ServerResponse) => void {
  return (upstream, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    upstream.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_INSPECTED_BYTES) chunks.push(c);
    });
    upstream.on('error', () => res.destroy());
    upstream.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        if (upstream.statusCode === 200 && size <= MAX_INSPECTED_BYTES) {
          try {
            await inspect(JSON.parse(body.toString('utf8')) as unknown);
          } catch (err) {
            onHookError(err);
          }
        }
        const headers: Record<string, string | string[]> = {};
        for (const [k, v] of Object.entries(upstream.headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) headers[k] = v;
        headers['content-length'] = String(body.length);
        res.writeHead(upstream.statusCode ?? 502, headers);
        res.end(body);
      })();
    });
  };
}
