import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { FlowgateError } from '../../src/errors.js';
import { filteredSearch, type FilteredSearchSpec } from '../../src/proxy/after/filtered-search.js';
import { createPageTokenSealer } from '../../src/proxy/after/page-token-sealer.js';
import { jsonCopy } from '../../src/proxy/json-copy.js';
import { SEARCH_KINDS } from '../../src/proxy/after/search-specs.js';
import type { UpstreamAnswer, UpstreamJson } from '../../src/upstream/json-client.js';

const SPEC: FilteredSearchSpec = { itemsKey: 'experiments', defaultMaxResults: 1000, maxResults: 50_000, maxPageSize: 1000 };
/** The spec the shared cases run with: pages of one size, or growing pages over MLflow's offset tokens. */
let spec: FilteredSearchSpec = SPEC;

interface Row {
  readonly experiment_id: string;
  readonly visible: boolean;
}

/** MLflow stand-in paging `rows` as MLflow does: its token is the base64 JSON of an offset. */
function mlflowPaging(rows: readonly Row[]): UpstreamJson & { calls: Array<Record<string, unknown>> } {
  const calls: Array<Record<string, unknown>> = [];
  return {
    calls,
    call: async (_method, _path, input): Promise<UpstreamAnswer> => {
      calls.push(input);
      const offset = typeof input.page_token === 'string' ? (JSON.parse(Buffer.from(input.page_token, 'base64').toString()) as { offset: number }).offset : 0;
      const size = Number(input.max_results);
      const page = rows.slice(offset, offset + size).map((r) => ({ experiment_id: r.experiment_id, name: `e${r.experiment_id}` }));
      const next = offset + size < rows.length ? Buffer.from(JSON.stringify({ offset: offset + size })).toString('base64') : undefined;
      return { status: 200, json: { experiments: page, ...(next ? { next_page_token: next } : {}) } };
    },
  };
}

const visibleIds = (rows: readonly Row[]) => new Set(rows.filter((r) => r.visible).map((r) => r.experiment_id));
const readableIn = (rows: readonly Row[]) => {
  const ok = visibleIds(rows);
  return (items: readonly unknown[]) => items.map((i) => ok.has((i as { experiment_id: string }).experiment_id));
};

const sealer = createPageTokenSealer({ current: randomBytes(32), previous: [] });

interface Page {
  experiments?: Array<{ experiment_id: string }>;
  next_page_token?: string;
}

async function search(rows: readonly Row[], input: Record<string, unknown>, username = 'alice', upstream = mlflowPaging(rows)): Promise<Page> {
  const out = await filteredSearch(spec, upstream, sealer, { method: 'POST', path: '/x', input, username, readable: readableIn(rows) });
  expect(out.status).toBe(200);
  return out.json as Page;
}

/** Every page of the search, in order. */
async function allPages(rows: readonly Row[], input: Record<string, unknown>): Promise<Page[]> {
  const pages: Page[] = [];
  let token: string | undefined;
  do {
    const page = await search(rows, { ...input, ...(token ? { page_token: token } : {}) });
    pages.push(page);
    token = page.next_page_token;
  } while (token && pages.length < 1000);
  return pages;
}

/** What a caller can compare between two answers: everything but the token's bytes. */
const observable = (pages: Page[]) =>
  pages.map((p) => ({ ids: (p.experiments ?? []).map((e) => e.experiment_id), token: p.next_page_token?.length ?? 'none' }));

/** `visible` rows with `hidden` ones mixed in at positions drawn from `seed`. */
function arrangement(visible: number, hidden: number, seed: number): Row[] {
  const rows: Row[] = Array.from({ length: visible }, (_, i) => ({ experiment_id: `v${i}`, visible: true }));
  let x = seed;
  for (let h = 0; h < hidden; h++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    rows.splice(x % (rows.length + 1), 0, { experiment_id: `h${seed}-${h}`, visible: false });
  }
  return rows;
}

describe.each([
  ['pages of one size', SPEC],
  ['offset tokens, growing pages', { ...SPEC, offsetTokens: true }],
] as const)('filteredSearch, %s', (_, using) => {
  beforeAll(() => {
    spec = using;
  });

  it('fills each page with readable items, in order, none repeated or skipped across pages', async () => {
    const rows = arrangement(23, 170, 7);
    const pages = await allPages(rows, { max_results: 5 });
    expect(pages.map((p) => p.experiments?.length)).toEqual([5, 5, 5, 5, 3]);
    expect(pages.flatMap((p) => p.experiments!.map((e) => e.experiment_id))).toEqual(rows.filter((r) => r.visible).map((r) => r.experiment_id));
    expect(pages.at(-1)!.next_page_token).toBeUndefined();
  });

  it('gives no token when no readable item follows, however many hidden ones do', async () => {
    const rows: Row[] = [
      ...arrangement(4, 0, 1),
      ...Array.from({ length: 250 }, (_, i) => ({ experiment_id: `h${i}`, visible: false })),
    ];
    const page = await search(rows, { max_results: 4 });
    expect(page.experiments!.map((e) => e.experiment_id)).toEqual(['v0', 'v1', 'v2', 'v3']);
    expect(page).not.toHaveProperty('next_page_token');
  });

  it('answers the same, with tokens of the same length, whatever the hidden items (count, place, paging)', async () => {
    for (const maxResults of [1, 3, 10, 100]) {
      const reference = observable(await allPages(arrangement(12, 0, 1), { max_results: maxResults, filter: "name LIKE 'a%'" }));
      for (const [hidden, seed] of [[1, 2], [9, 3], [99, 4], [101, 5], [450, 6]] as const) {
        const rows = arrangement(12, hidden, seed);
        expect(observable(await allPages(rows, { max_results: maxResults, filter: "name LIKE 'a%'" }))).toEqual(reference);
      }
    }
  });

  it('fails, rather than answering a short page, when it passes over too many MLflow pages', async () => {
    const rows: Row[] = [
      ...arrangement(2, 0, 1),
      ...Array.from({ length: 100_001 }, (_, i) => ({ experiment_id: `h${i}`, visible: false })),
      { experiment_id: 'late', visible: true },
    ];
    const upstream = mlflowPaging(rows);
    await expect(search(rows, { max_results: 5 }, 'alice', upstream)).rejects.toMatchObject({ code: 'REQUEST_LIMIT_EXCEEDED' });
    expect(upstream.calls).toHaveLength(1000);
  });

  it('answers an empty search with an empty object and no token', async () => {
    expect(await search(arrangement(0, 120, 3), { max_results: 10 })).toEqual({});
  });

  it('writes its own answer: MLflow’s bytes and extra fields are never passed on', async () => {
    const upstream: UpstreamJson = {
      call: async () => ({ status: 200, json: { experiments: [{ experiment_id: '1' }], extra: 1 }, raw: Buffer.from('{ "experiments": [ {"experiment_id": "1"} ], "extra": 1 }') }),
    };
    const out = await filteredSearch(SPEC, upstream, sealer, { method: 'POST', path: '/x', input: {}, username: 'a', readable: (i) => i.map(() => true) });
    expect(out.raw).toBeUndefined();
    expect(out.json).toEqual({ experiments: [{ experiment_id: '1' }] });
  });

  it('passes MLflow’s error answers on', async () => {
    const upstream: UpstreamJson = { call: async () => ({ status: 400, json: { error_code: 'INVALID_PARAMETER_VALUE', message: 'bad filter' } }) };
    const out = await filteredSearch(SPEC, upstream, sealer, { method: 'POST', path: '/x', input: {}, username: 'a', readable: (i) => i.map(() => true) });
    expect(out).toEqual({ status: 400, json: { error_code: 'INVALID_PARAMETER_VALUE', message: 'bad filter' } });
  });
});

describe('filteredSearch over offset tokens', () => {
  beforeAll(() => {
    spec = { ...SPEC, offsetTokens: true };
  });

  it('asks MLflow for one item more than the client’s page first, then for pages four times larger, up to 100', async () => {
    const allReadable = mlflowPaging(arrangement(50, 0, 1));
    await search(arrangement(50, 0, 1), { max_results: 10 }, 'alice', allReadable);
    expect(allReadable.calls.map((c) => c.max_results)).toEqual([11]);
    const rows = arrangement(3, 400, 9);
    const refilled = mlflowPaging(rows);
    await search(rows, { max_results: 10 }, 'alice', refilled);
    expect(refilled.calls.map((c) => c.max_results)).toEqual([11, 44, 100, 100, 100, 100]);
  });

  it('keeps one page size where MLflow’s token is not an offset alone', async () => {
    spec = SPEC;
    const upstream = mlflowPaging(arrangement(50, 0, 1));
    await search(arrangement(50, 0, 1), { max_results: 10 }, 'alice', upstream);
    expect(upstream.calls.map((c) => c.max_results)).toEqual([100]);
  });
});

describe('filteredSearch page tokens', () => {
  beforeAll(() => {
    spec = SPEC;
  });

  const rows = arrangement(30, 40, 9);
  const first = () => search(rows, { max_results: 5, filter: "name LIKE 'e%'", order_by: ['name'] });

  const refusal = async (input: Record<string, unknown>, username = 'alice') => {
    try {
      await search(rows, input, username);
    } catch (e) {
      return e instanceof FlowgateError ? { code: e.code, status: e.status } : e;
    }
    return 'accepted';
  };
  const INVALID = { code: 'INVALID_PARAMETER_VALUE', status: 400 };

  it('resume for the caller and the search they were issued for, whatever the page size asked next', async () => {
    const token = (await first()).next_page_token!;
    const next = await search(rows, { max_results: 7, filter: "name LIKE 'e%'", order_by: ['name'], page_token: token });
    expect(next.experiments!.map((e) => e.experiment_id)).toEqual(['v5', 'v6', 'v7', 'v8', 'v9', 'v10', 'v11']);
    // The same parameters in another order are the same search.
    expect(await refusal({ order_by: ['name'], page_token: token, filter: "name LIKE 'e%'" })).toBe('accepted');
  });

  it('are refused for another user', async () => {
    const token = (await first()).next_page_token!;
    expect(await refusal({ max_results: 5, filter: "name LIKE 'e%'", order_by: ['name'], page_token: token }, 'bob')).toEqual(INVALID);
  });

  it('are refused for another filter, order or route', async () => {
    const token = (await first()).next_page_token!;
    expect(await refusal({ max_results: 5, filter: "name LIKE 'f%'", order_by: ['name'], page_token: token })).toEqual(INVALID);
    expect(await refusal({ max_results: 5, filter: "name LIKE 'e%'", page_token: token })).toEqual(INVALID);
    expect(await refusal({ max_results: 5, filter: "name LIKE 'e%'", order_by: ['name'], view_type: 'ALL', page_token: token })).toEqual(INVALID);
    const onOtherRoute = filteredSearch(SPEC, mlflowPaging(rows), sealer, {
      method: 'POST',
      path: '/y',
      input: { max_results: 5, filter: "name LIKE 'e%'", order_by: ['name'], page_token: token },
      username: 'alice',
      readable: readableIn(rows),
    });
    await expect(onOtherRoute).rejects.toMatchObject(INVALID);
  });

  it('are refused when tampered with, forged in the old readable form, or MLflow’s own', async () => {
    const token = (await first()).next_page_token!;
    const tampered = Buffer.from(token.slice(4), 'base64url');
    tampered[20]! ^= 0x80;
    const input = (page_token: unknown) => ({ max_results: 5, filter: "name LIKE 'e%'", order_by: ['name'], page_token });
    expect(await refusal(input('fg2.' + tampered.toString('base64url')))).toEqual(INVALID);
    expect(await refusal(input('fg1.' + Buffer.from(JSON.stringify({ t: null, s: 3, n: 100 })).toString('base64url')))).toEqual(INVALID);
    expect(await refusal(input(Buffer.from(JSON.stringify({ offset: 100 })).toString('base64')))).toEqual(INVALID);
    expect(await refusal(input([token, token]))).toEqual(INVALID);
  });

  it('are refused under another flowgate key, and opened under a previous one after rotation', async () => {
    const oldKey = randomBytes(32);
    const before = createPageTokenSealer({ current: oldKey, previous: [] });
    const input = { max_results: 5 };
    const call = (s: typeof before, page_token?: string) =>
      filteredSearch(SPEC, mlflowPaging(rows), s, { method: 'POST', path: '/x', input: { ...input, ...(page_token ? { page_token } : {}) }, username: 'alice', readable: readableIn(rows) });
    const token = ((await call(before)).json as Page).next_page_token!;
    const rotated = createPageTokenSealer({ current: randomBytes(32), previous: [oldKey] });
    expect(((await call(rotated, token)).json as Page).experiments!.map((e) => e.experiment_id)).toEqual(['v5', 'v6', 'v7', 'v8', 'v9']);
    await expect(call(createPageTokenSealer({ current: randomBytes(32), previous: [] }), token)).rejects.toMatchObject(INVALID);
  });

  it('have one length for a search, whatever MLflow’s token or the skipped count', async () => {
    const lengths = new Set<number>();
    for (const [hidden, seed] of [[0, 1], [5, 2], [300, 3], [2000, 4]] as const)
      for (const page of await allPages(arrangement(40, hidden, seed), { max_results: 3 }))
        if (page.next_page_token) lengths.add(page.next_page_token.length);
    expect(lengths.size).toBe(1);
  });

  it('for a search whose MLflow token repeats the query, grow with the query only', async () => {
    const spec = { ...SPEC, upstreamTokenRepeatsQuery: true };
    const tokenFor = async (filter: string, hidden: number) => {
      const rs = arrangement(10, hidden, 3);
      const out = await filteredSearch(spec, mlflowPaging(rs), sealer, { method: 'POST', path: '/x', input: { max_results: 2, filter }, username: 'a', readable: readableIn(rs) });
      return (out.json as Page).next_page_token!.length;
    };
    const short = await tokenFor('a', 0);
    expect(await tokenFor('a', 700)).toBe(short);
    expect(await tokenFor('a'.repeat(500), 0)).toBeGreaterThan(short);
    expect(await tokenFor('a'.repeat(500), 700)).toBe(await tokenFor('a'.repeat(500), 0));
  });
});

describe('a client’s `__proto__` field', () => {
  it('is a field like any other: sent on to MLflow, never read as the search’s own parameters', async () => {
    spec = SPEC;
    const rows = Array.from({ length: 5 }, (_, i) => ({ experiment_id: String(i + 1), visible: true }));
    const upstream = mlflowPaging(rows);
    const input = jsonCopy(JSON.parse('{"__proto__": {"max_results": 1, "page_token": "x"}, "filter": "name = \'a\'"}') as Record<string, unknown>);
    const page = await search(rows, input, 'alice', upstream);
    expect(page.experiments).toHaveLength(5);
    expect(page.next_page_token).toBeUndefined();
    expect(Object.keys(upstream.calls[0]!)).toEqual(['__proto__', 'filter', 'max_results', 'page_token']);
    expect(JSON.parse(JSON.stringify(upstream.calls[0]))).toMatchObject({ ['__proto__']: { max_results: 1, page_token: 'x' }, max_results: 1000 });
  });
});

/*
 * flowgate asks MLflow for its own page sizes, so MLflow's cap on `max_results` never sees the client's
 * value: each filtered search applies it itself, before MLflow is asked (a huge page would have flowgate
 * fetch up to its page limit of MLflow pages into one answer).
 */
describe("a filtered search's max_results is capped as MLflow caps it", () => {
  const CAPS: Record<string, number> = {
    filter_search_experiments: 50_000,
    filter_search_registered_models: 1000,
    filter_search_model_versions: 200_000,
    filter_search_mcp_servers: 1000,
    filter_search_skills: 1000,
  };
  it.each(Object.entries(CAPS))('%s: at most %d', async (hook, cap) => {
    const kind = SEARCH_KINDS[hook as keyof typeof SEARCH_KINDS]!;
    expect(kind.maxResults).toBe(cap);
    const upstream = mlflowPaging([]);
    const run = (max_results: unknown) => filteredSearch(kind, upstream, sealer, { method: 'POST', path: '/x', input: { max_results }, username: 'alice', readable: (items) => items.map(() => true) });
    await expect(run(cap + 1)).rejects.toMatchObject({ code: 'INVALID_PARAMETER_VALUE', status: 400, message: expect.stringContaining(`at most ${cap}`) });
    await expect(run(1_000_000_000)).rejects.toMatchObject({ status: 400 });
    expect(upstream.calls).toEqual([]);
    expect((await run(cap)).status).toBe(200);
  });

  it('every filtered search has a cap', () => {
    for (const kind of Object.values(SEARCH_KINDS)) expect(kind!.maxResults).toBeGreaterThan(0);
  });
});

