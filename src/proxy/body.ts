import type { IncomingMessage } from 'node:http';
import { FlowgateError, badRequest } from '../errors.js';

/** Reads a whole request body, refusing more than `maxBytes` (413) before it is all in memory. */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw tooLarge(maxBytes);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
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
