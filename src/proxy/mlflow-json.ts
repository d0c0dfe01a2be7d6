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
  refuseHugeIntegers(text);
  if (typeof value === 'string') {
    const inner = value;
    value = parse(inner);
    refuseHugeIntegers(inner);
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw badRequest('A JSON string request body must hold a JSON object');
  }
  return value;
}

/**
 * Python (3.11 on) refuses to read an integer of more digits than this (`sys.get_int_max_str_digits()`),
 * and Flask's `get_json(silent=True)` turns that error into no body: MLflow would act on `{}`, not on the
 * object flowgate read. Only an integer literal goes through int(): a number with a fraction or an
 * exponent is read by float(), which has no such limit.
 */
export const PYTHON_INT_MAX_DIGITS = 4300;

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

/**
 * Whether the text has a run of more than `limit` digits anywhere. Such a run covers one of the positions
 * limit, 2·limit + 1, …, so only those are probed and a digit there is followed to both ends of its run:
 * each character is looked at a bounded number of times, and an ordinary body costs length/4301 probes.
 */
function hasDigitRunOver(text: string, limit: number): boolean {
  const run = limit + 1;
  for (let probe = limit; probe < text.length; probe += run) {
    if (!isDigit(text.charCodeAt(probe))) continue;
    let start = probe;
    while (start > 0 && isDigit(text.charCodeAt(start - 1))) start--;
    let end = probe + 1;
    while (end < text.length && end - start < run && isDigit(text.charCodeAt(end))) end++;
    if (end - start >= run) return true;
  }
  return false;
}

/** Whether valid JSON text holds an integer literal (outside strings, no fraction or exponent) of more than `limit` digits. */
function hasIntegerLiteralOver(text: string, limit: number): boolean {
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: to its closing quote, past escapes.
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
      i++;
    } else if (c === 0x2d || isDigit(c)) {
      const start = c === 0x2d ? i + 1 : i;
      let end = start;
      while (end < n && isDigit(text.charCodeAt(end))) end++;
      const next = text.charCodeAt(end);
      const isFloat = next === 0x2e || next === 0x65 || next === 0x45;
      if (!isFloat && end - start > limit) return true;
      // Past the fraction and exponent, if any.
      i = end;
      while (i < n && (isDigit(text.charCodeAt(i)) || '.eE+-'.includes(text[i]!))) i++;
    } else i++;
  }
  return false;
}

/** A body with an integer Python would not read is refused: MLflow would act on none. Scanned only when long enough to hold one. */
function refuseHugeIntegers(text: string): void {
  if (text.length <= PYTHON_INT_MAX_DIGITS || !hasDigitRunOver(text, PYTHON_INT_MAX_DIGITS)) return;
  if (hasIntegerLiteralOver(text, PYTHON_INT_MAX_DIGITS))
    throw badRequest(`The request body holds an integer of more than ${PYTHON_INT_MAX_DIGITS} digits, which MLflow cannot read`);
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw badRequest('Malformed JSON in the request body');
  }
}

const unreadable = () => badRequest('The request body must be JSON encoded as UTF-8 without a byte order mark');
