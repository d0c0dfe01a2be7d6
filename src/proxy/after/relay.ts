import { pipeline } from 'node:stream';
import type { ResponseHandler, UpstreamResponse } from '../forward.js';

/** Answers larger than this are relayed as they come, without the hook (MLflow's create answers are tiny). */
const MAX_INSPECTED_BYTES = 4 * 1024 * 1024;

/** MLflow's headers without its length: the answer is re-sent whole, or streamed on in Node's own framing. */
export function headersWithoutLength(upstream: UpstreamResponse): Record<string, string | string[]> {
  const { 'content-length': _length, ...headers } = upstream.headers;
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
): ResponseHandler {
  return (upstream, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const collect = (c: Buffer) => {
      size += c.length;
      chunks.push(c);
      if (size <= maxInspectedBytes) return;
      // Too big to look at: hand over what is held and pipe the rest as it arrives.
      upstream.body.off('data', collect);
      upstream.body.off('end', finish);
      res.writeHead(upstream.statusCode ?? 502, headersWithoutLength(upstream));
      for (const held of chunks.splice(0)) res.write(held);
      // pipeline, not pipe: a client that goes away also ends the read from MLflow.
      pipeline(upstream.body, res, () => undefined);
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
        res.writeHead(upstream.statusCode ?? 502, { ...headersWithoutLength(upstream), 'content-length': String(body.length) });
        res.end(body);
      })();
    };
    upstream.body.on('data', collect);
    upstream.body.on('end', finish);
    upstream.body.on('error', () => res.destroy());
  };
}
