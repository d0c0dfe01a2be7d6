import { describe, expect, it } from 'vitest';
import { readMlflowJson } from '../../src/proxy/mlflow-json.js';

const bytes = (s: string) => Buffer.from(s, 'utf8');

describe('readMlflowJson (a body read as MLflow reads it)', () => {
  it('reads a plain JSON object', () => {
    expect(readMlflowJson(bytes('{"name":"m"}'))).toEqual({ name: 'm' });
  });

  it('decodes a double-encoded JSON string body a second time, as MLflow does', () => {
    const twice = JSON.stringify(JSON.stringify({ name: 'secret-model' }));
    expect(readMlflowJson(bytes(twice))).toEqual({ name: 'secret-model' });
  });

  it('treats an empty body as no body', () => {
    expect(readMlflowJson(Buffer.alloc(0))).toBeUndefined();
  });

  it.each([
    ['a UTF-8 byte order mark', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes('{"name":"m"}')])],
    ['UTF-16 (Python would decode it)', Buffer.from('{"name":"m"}', 'utf16le')],
    ['bytes that are not UTF-8 (Python falls back to an empty body)', Buffer.concat([bytes('{"name":"'), Buffer.from([0xff]), bytes('"}')])],
    ['malformed JSON', bytes('{"name":')],
    ['a JSON string that holds no object', bytes(JSON.stringify('just text'))],
    ['a JSON string that holds a list', bytes(JSON.stringify('[1,2]'))],
  ])('refuses %s with a 400 in MLflow\'s error shape', (_, raw) => {
    let caught: unknown;
    try {
      readMlflowJson(raw);
    } catch (e) {
      caught = e;
    }
    expect(caught).toMatchObject({ code: 'INVALID_PARAMETER_VALUE', status: 400 });
  });
});
