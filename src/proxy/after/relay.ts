import { pipeline } from 'node:stream';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { keepingWorkspace } from '../../workspaces/request-workspace.js';
import type { ResponseHandler, UpstreamResponse } from '../forward.js';

/** Answers larger than this are relayed as they come, without the hook (MLflow's create answers are tiny). */
const MAX_INSPECTED_BYTES = 4 * 1024 * 1024;

/** MLflow's headers without its length: the answer is re-sent whole, or streamed on in Node's own framing. */
export function headersWithoutLength(upstream: UpstreamResponse): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const name in upstream.headers) if (name !== 'content-length') headers[name] = upstream.headers[name]!;
  return headers;
}

/** The answer's bytes as MLflow meant them: a compressed answer is inflated for the hook (the client gets it as sent). */
function decoded(body: Buffer, encoding: string | string[] | undefined): Buffer {
  const codings = (Array.isArray(encoding) ? encoding.join(',') : (encoding ?? '')).split(',').map((c) => c.trim().toLowerCase()).filter((c) => c && c !== 'identity');
  return codings.reduceRight((bytes, coding) => {
    if (coding === 'gzip' || coding === 'x-gzip') return gunzipSync(bytes);
    if (coding === 'deflate') return inflateSync(bytes);
    if (coding === 'br') return brotliDecompressSync(bytes);
    throw new Error(`answer in an encoding flowgate cannot read (${coding})`);
  }, body);
}

/**
 * Runs `act` as soon as MLflow has answered, whatever the status and whatever the body (empty,
 * protobuf, JSON, compressed, large), then streams the answer on unchanged. For hooks that record
 * that a change may have been made, not what the answer says: a write can land before MLflow
 * reports an error, so the status is only given for the hook to decide.
 */
export function onceAnswered(given: (status: number) => void | Promise<void>, onHookError: (err: unknown) => void): ResponseHandler {
  const act = keepingWorkspace(given);
  return (upstream, res) => {
    try {
      const done = act(upstream.statusCode);
      if (done instanceof Promise) done.catch(onHookError);
    } catch (err) {
      onHookError(err);
    }
    res.writeHead(upstream.statusCode ?? 502, upstream.headers);
    pipeline(upstream.body, res, () => undefined);
  };
}

/**
 * Runs `act` when MLflow answered with success (any 2xx: a delete answered `204` with no body counts)
 * and waits for it before the answer goes on unchanged, so the client learns of the change only once
 * flowgate has followed it. A refusal goes on at once, and `act` does not run. A failed `act` never
 * turns MLflow's success into an error: it is reported to `onHookError`.
 */
export function afterSuccess(given: () => void | Promise<void>, onHookError: (err: unknown) => void): ResponseHandler {
  const act = keepingWorkspace(given);
  return (upstream, res) => {
    const status = upstream.statusCode ?? 502;
    const relay = () => {
      res.writeHead(status, upstream.headers);
      pipeline(upstream.body, res, () => undefined);
    };
    if (status < 200 || status > 299) return relay();
    // Held while `act` runs: an error meanwhile is the pipeline's to meet (it ends the client's answer), not an uncaught one.
    upstream.body.on('error', () => undefined);
    void (async () => {
      try {
        await act();
      } catch (err) {
        onHookError(err);
      }
      relay();
    })();
  };
}

/**
 * Reads a (small JSON) upstream answer, lets `inspect` act on it when MLflow succeeded, then relays
 * it to the client unchanged. A hook failure never turns MLflow's success into an error: the side
 * effect is logged by the caller. An answer past the limit is streamed on untouched instead.
 */
export function relayAfter(
  given: (json: unknown) => void | Promise<void>,
  onHookError: (err: unknown) => void,
  maxInspectedBytes = MAX_INSPECTED_BYTES,
): ResponseHandler {
  const inspect = keepingWorkspace(given);
  return (upstream, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const collect = (c: Buffer) => {
      size += c.length;
      chunks.push(c);
      if (size <= maxInspectedBytes) return;
      // Too big to look at: hand over what is held and pipe the rest as it arrives. The hook's
      // work is not done, which is a failure like any other.
      if (upstream.statusCode === 200) onHookError(new Error(`answer larger than ${maxInspectedBytes} bytes: not inspected`));
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
            await inspect(JSON.parse(decoded(body, upstream.headers['content-encoding']).toString('utf8')) as unknown);
          } catch (err) {
            onHookError(err);
          }
        }
        const headers = headersWithoutLength(upstream);
        headers['content-length'] = String(body.length);
        res.writeHead(upstream.statusCode ?? 502, headers);
        res.end(body);
      })();
    };
    upstream.body.on('data', collect);
    upstream.body.on('end', finish);
    upstream.body.on('error', () => res.destroy());
  };
}
