import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FlowgateError } from '../../src/errors.js';
import { pageTokensFor, type SearchIdentity } from '../../src/proxy/after/page-token.js';
import { createPageTokenSealer } from '../../src/proxy/after/page-token-sealer.js';

const sealer = createPageTokenSealer({ current: randomBytes(32), previous: [] });
const SEARCH: SearchIdentity = {
  username: 'alice',
  route: 'GET /api/2.0/mlflow/registered-models/search',
  params: { filter: "tags.secret LIKE 'a%'", order_by: ['name ASC'], max_results: '2' },
};
const point = { upstreamToken: Buffer.from('{"offset": 100}').toString('base64'), skip: 7, pageSize: 100 };

function refusal(search: SearchIdentity, token: unknown): unknown {
  try {
    pageTokensFor(sealer, search).decode(token);
  } catch (e) {
    return e instanceof FlowgateError ? `${e.status} ${e.code}` : e;
  }
  return 'accepted';
}

describe('page tokens', () => {
  it('decode to what was encoded, for the same caller and search', () => {
    const token = pageTokensFor(sealer, SEARCH).encode(point);
    expect(pageTokensFor(sealer, SEARCH).decode(token)).toEqual(point);
    // The page size and the order the parameters came in are not part of the search.
    const reordered = { order_by: ['name ASC'], filter: "tags.secret LIKE 'a%'", max_results: '50', page_token: token };
    expect(pageTokensFor(sealer, { ...SEARCH, params: reordered }).decode(token)).toEqual(point);
  });

  it('are refused for another user, filter, order, parameter or route', () => {
    const token = pageTokensFor(sealer, SEARCH).encode(point);
    expect(refusal({ ...SEARCH, username: 'bob' }, token)).toBe('400 INVALID_PARAMETER_VALUE');
    expect(refusal({ ...SEARCH, params: { ...SEARCH.params, filter: "tags.secret LIKE 'b%'" } }, token)).toBe('400 INVALID_PARAMETER_VALUE');
    expect(refusal({ ...SEARCH, params: { ...SEARCH.params, order_by: ['name DESC'] } }, token)).toBe('400 INVALID_PARAMETER_VALUE');
    expect(refusal({ ...SEARCH, params: { ...SEARCH.params, view_type: 'ALL' } }, token)).toBe('400 INVALID_PARAMETER_VALUE');
    expect(refusal({ ...SEARCH, route: 'GET /api/2.0/mlflow/model-versions/search' }, token)).toBe('400 INVALID_PARAMETER_VALUE');
  });

  it('are refused with a byte flipped, or when not a string', () => {
    const token = pageTokensFor(sealer, SEARCH).encode(point);
    const bytes = Buffer.from(token.slice(4), 'base64url');
    bytes[bytes.length >> 1]! ^= 0x10;
    expect(refusal(SEARCH, `fg2.${bytes.toString('base64url')}`)).toBe('400 INVALID_PARAMETER_VALUE');
    expect(refusal(SEARCH, 42)).toBe('400 INVALID_PARAMETER_VALUE');
    expect(refusal(SEARCH, [token])).toBe('400 INVALID_PARAMETER_VALUE');
    expect(pageTokensFor(sealer, SEARCH).decode('')).toBeUndefined();
    expect(pageTokensFor(sealer, SEARCH).decode(undefined)).toBeUndefined();
  });

  it('have one length whatever the skip count or MLflow token', () => {
    const tokens = pageTokensFor(sealer, SEARCH);
    const lengths = new Set<number>();
    for (const skip of [0, 9, 10, 999])
      for (const offset of [0, 99, 100, 123_456_789])
        lengths.add(tokens.encode({ upstreamToken: Buffer.from(JSON.stringify({ offset })).toString('base64'), skip, pageSize: 1000 }).length);
    lengths.add(tokens.encode({ upstreamToken: undefined, skip: 0, pageSize: 100 }).length);
    expect(lengths.size).toBe(1);
  });
});
