import { describe, expect, it } from 'vitest';
import { jsonCopy } from '../../src/proxy/json-copy.js';

describe('jsonCopy', () => {
  it('keeps a client’s `__proto__` key an ordinary field, as a spread does, and lets nothing be inherited', () => {
    const sent = JSON.parse('{"__proto__": {"max_results": 1, "status": "PENDING"}, "filter": "x"}') as Record<string, unknown>;
    const copy = jsonCopy(sent, { page_token: 't' });
    expect(Object.getPrototypeOf(copy)).toBeNull();
    expect(copy.max_results).toBeUndefined();
    expect(copy.status).toBeUndefined();
    expect(Object.keys(copy)).toEqual(['__proto__', 'filter', 'page_token']);
    expect(JSON.parse(JSON.stringify(copy))).toEqual(JSON.parse(JSON.stringify({ ...sent, page_token: 't' })));
  });

  it('puts the changes over the client’s fields, leaving the original as it was', () => {
    const sent = { max_results: 5, filter: 'x' };
    expect(jsonCopy(sent, { max_results: 11 })).toEqual(Object.assign(Object.create(null), { max_results: 11, filter: 'x' }));
    expect(sent).toEqual({ max_results: 5, filter: 'x' });
  });
});
