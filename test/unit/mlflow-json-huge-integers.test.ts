import { describe, expect, it } from 'vitest';
import { PYTHON_INT_MAX_DIGITS, readMlflowJson } from '../../src/proxy/mlflow-json.js';

/**
 * Python 3.11+ refuses int literals of more than 4300 digits; Flask's get_json(silent=True) then hands
 * MLflow no body, and MLflow acts on `{}` (a run created in the Default experiment, whatever
 * `experiment_id` the body names). flowgate refuses such a body instead of deciding on its fields.
 */
const bytes = (s: string) => Buffer.from(s, 'utf8');
const digits = (n: number) => '1'.repeat(n);

function refusal(raw: Buffer): unknown {
  try {
    readMlflowJson(raw);
  } catch (e) {
    return e;
  }
  return undefined;
}

describe('readMlflowJson and integers Python will not read', () => {
  it('is 4300 digits, as in CPython', () => {
    expect(PYTHON_INT_MAX_DIGITS).toBe(4300);
  });

  it.each([
    ['a long integer field', `{"experiment_id":"1","pad":${digits(4301)}}`],
    ['a negative one', `{"experiment_id":"1","pad":-${digits(4301)}}`],
    ['one in a list', `{"experiment_id":"1","pad":[1,2,${digits(5000)}]}`],
    ['one nested after strings with quotes and escapes', `{"a":"x\\"y\\\\","b":{"c":[${digits(9000)}]},"experiment_id":"1"}`],
    ['the whole body', digits(4301)],
    ['one inside a double-encoded body', JSON.stringify(`{"experiment_id":"1","pad":${digits(4301)}}`)],
  ])('refuses %s with a 400 in MLflow\'s error shape', (_, text) => {
    expect(refusal(bytes(text))).toMatchObject({ code: 'INVALID_PARAMETER_VALUE', status: 400 });
  });

  it.each([
    ['an integer of exactly 4300 digits', `{"pad":${digits(4300)}}`],
    ['a negative one of 4300 digits', `{"pad":-${digits(4300)}}`],
    ['a long number with a fraction (float() reads it)', `{"pad":${digits(5000)}.5}`],
    ['a long number with an exponent', `{"pad":${digits(5000)}e1}`],
    ['a long fraction', `{"pad":1.${digits(5000)}}`],
    ['a long exponent', `{"pad":1E${digits(5000)}}`],
    ['a long run of digits in a string', `{"tag":"${digits(9000)}","n":1}`],
    ['a long run of digits in a key', `{"${digits(9000)}":1}`],
    ['many integers just under the limit', `[${Array.from({ length: 5 }, () => digits(4300)).join(',')}]`],
    ['a large body of ordinary numbers', JSON.stringify({ metrics: Array.from({ length: 20_000 }, (_, i) => ({ key: `m${i}`, value: i * 1.5, step: i, timestamp: 1700000000000 + i })) })],
  ])('reads %s', (_, text) => {
    expect(refusal(bytes(text))).toBeUndefined();
  });

  it('reads a string whose escaped quote is followed by digits', () => {
    expect(refusal(bytes(`{"a":"\\"${digits(5000)}","b":2}`))).toBeUndefined();
  });
});
