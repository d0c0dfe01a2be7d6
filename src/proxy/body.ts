import type { IncomingMessage } from 'node:http';
import { FlowgateError, badRequest } from '../errors.js';

/** Reads a whole request body, refusing more than `maxBytes` (413) before it is all in memory. */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.reject(tooLarge(maxBytes));
  // Plain events rather than `for await`: this runs on every JSON request, and the async iterator
  // costs more than the copy.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.off('data', onData);
        req.off('end', onEnd);
        reject(tooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', reject);
  });
}

const tooLarge = (maxBytes: number) =>
  new FlowgateError('REQUEST_LIMIT_EXCEEDED', `Request body is larger than the limit of ${maxBytes} bytes`);

/** An empty body is `undefined`; anything else must be valid JSON. */
export function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch {
    throw badRequest('Malformed JSON in the request body');
  }
}
