import { describe, expect, it } from 'vitest';
import { FlowgateError } from '../../src/errors.js';
import { framingHeader, requestFraming } from '../../src/http/framing.js';

describe('request framing', () => {
  it.each([
    ['no framing header', {}, { kind: 'none' }],
    ['Content-Length: 0', { 'content-length': '0' }, { kind: 'length', length: 0 }],
    ['Content-Length: 42', { 'content-length': '42' }, { kind: 'length', length: 42 }],
    ['chunked', { 'transfer-encoding': 'chunked' }, { kind: 'chunked' }],
    ['Chunked, with spaces', { 'transfer-encoding': ' Chunked ' }, { kind: 'chunked' }],
  ])('reads %s', (_label, headers, framing) => {
    expect(requestFraming(headers)).toEqual(framing);
  });

  it.each([
    ['a coding before chunked', { 'transfer-encoding': 'gzip, chunked' }, /Only Transfer-Encoding: chunked/],
    ['a coding alone', { 'transfer-encoding': 'gzip' }, /Only Transfer-Encoding: chunked/],
    ['both framings', { 'transfer-encoding': 'chunked', 'content-length': '3' }, /either Transfer-Encoding or Content-Length/],
    ['a length that is not a number', { 'content-length': '3, 3' }, /Content-Length must be a number/],
  ])('refuses %s with 400 and a closing connection', (_label, headers, message) => {
    let error: unknown;
    try {
      requestFraming(headers);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FlowgateError);
    expect(error).toMatchObject({ status: 400, code: 'BAD_REQUEST', headers: { Connection: 'close' } });
    expect((error as Error).message).toMatch(message);
  });

  it('writes the framing again for the next hop, whatever the method', () => {
    expect(framingHeader({ kind: 'none' })).toEqual({});
    expect(framingHeader({ kind: 'length', length: 7 })).toEqual({ 'content-length': '7' });
    expect(framingHeader({ kind: 'chunked' })).toEqual({ 'transfer-encoding': 'chunked' });
  });
});
