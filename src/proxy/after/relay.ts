import type { IncomingMessage, ServerResponse } from 'node:http';

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'upgrade', 'proxy-connection']);
/** Answers larger than this are relayed as they come, without the hook (MLflow's create answers are tiny). */
const MAX_INSPECTED_BYTES = 4 * 1024 * 1024;

function relayedHeaders(upstream: IncomingMessage): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(upstream.headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) headers[k] = v;
  return headers;
}

/**
 * Reads a (small JSON) upstream answer, lets `inspect` act on it when MLflow succeeded, then relays
 * it to the client unchanged. A hook failure never turns MLflow's success into an error: the side
 * effect is logged by the caller. An answer past the limit is streamed on untouched instead.
 */
export function relayAfter(
  inspect: (json: unknown) => void | Promise<void>,
  onHookError: (err: unknown) => void,
  maxInspectedBytes = MAX_INSPECTED_BYTES,
): (upstream: IncomingMessage, res: ServerResponse) => void {
  return (upstream, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const collect = (c: Buffer) => {
      size += c.length;
      chunks.push(c);
      if (size <= maxInspectedBytes) return;
      // Too big to look at: hand over what is held and pipe the rest as it arrives.
      upstream.off('data', collect);
      upstream.off('end', finish);
      res.writeHead(upstream.statusCode ?? 502, relayedHeaders(upstream));
      for (const held of chunks.splice(0)) res.write(held);
      upstream.pipe(res);
    };
    const finish = () => {
      void (async () => {
        const body = Buffer.concat(chunks, size);
        if (upstream.statusCode === 200) {
          try {
            await inspect(JSON.parse(body.toString('utf8')) as unknown);
          } catch (err) {
            onHookError(err);
          }
        }
        res.writeHead(upstream.statusCode ?? 502, { ...relayedHeaders(upstream), 'content-length': String(body.length) });
        res.end(body);
      })();
    };
    upstream.on('data', collect);
    upstream.on('end', finish);
    upstream.on('error', () => res.destroy());
  };
}
