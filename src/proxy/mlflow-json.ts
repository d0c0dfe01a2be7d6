import { badRequest } from '../errors.js';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * A request body read the way MLflow reads it, so flowgate decides on the object MLflow acts on.
 * MLflow parses JSON from bytes (where Python also accepts UTF-16/32 and a BOM, and falls back to
 * an empty body on bytes it cannot decode) and decodes a JSON string body a second time (older
 * clients double-encode). Anything the two would read differently is refused instead of guessed:
 * bytes that are not plain UTF-8 JSON, a BOM, a string that does not hold an object.
 * An empty body is `undefined`.
 */
export function readMlflowJson(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  // Python's json detects UTF-16/32 from NUL bytes among the first four; plain JSON has none.
  if (raw[0] === 0xef || raw.subarray(0, 4).includes(0)) throw unreadable();
  let text: string;
  try {
    text = strictUtf8.decode(raw);
  } catch {
    throw unreadable();
  }
  let value = parse(text);
  if (typeof value === 'string') {
    value = parse(value);
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw badRequest('A JSON string request body must hold a JSON object');
  }
  return value;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw badRequest('Malformed JSON in the request body');
  }
}

const unreadable = () => badRequest('The request body must be JSON encoded as UTF-8 without a byte order mark');
