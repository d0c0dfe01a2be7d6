import { describe, expect, it } from 'vitest';
import { filteredSearch } from '../../src/proxy/after/filtered-search.js';
import type { UpstreamAnswer, UpstreamJson } from '../../src/upstream/json-client.js';

const SPEC = { itemsKey: 'experiments', defaultMaxResults: 1000, maxPageSize: 1000 };

/** MLflow stand-in answering every search with the same page, as bytes and as parsed JSON. */
function upstreamAnswering(answer: Record<string, unknown>): UpstreamJson & { calls: number } {
  const raw = Buffer.from(JSON.stringify(answer, null, 1));
  const stub = {
    calls: 0,
    call: async (): Promise<UpstreamAnswer> => {
      stub.calls++;
      return { status: 200, json: JSON.parse(raw.toString('utf8')) as unknown, raw };
    },
    close: () => undefined,
  };
  return stub;
}

const experiments = (...ids: string[]) => ids.map((id) => ({ experiment_id: id, name: `e${id}`, tags: [] }));
const all = (items: readonly unknown[]) => items.map(() => true);
const idIn = (allowed: string[]) => (items: readonly unknown[]) => items.map((i) => allowed.includes((i as { experiment_id: string }).experiment_id));

describe('filteredSearch', () => {
  it("passes MLflow's bytes on when the whole first page may be shown and there is nothing to page", async () => {
    const upstream = upstreamAnswering({ experiments: experiments('1', '2', '3') });
    const out = await filteredSearch(SPEC, upstream, 'POST', '/x', { max_results: 10 }, all);
    expect(out.raw?.toString('utf8')).toBe(JSON.stringify({ experiments: experiments('1', '2', '3') }, null, 1));
    expect(out.json).toEqual({ experiments: experiments('1', '2', '3') });
  });

  it('writes a new answer when an item is hidden', async () => {
    const upstream = upstreamAnswering({ experiments: experiments('1', '2', '3') });
    const out = await filteredSearch(SPEC, upstream, 'POST', '/x', { max_results: 10 }, idIn(['1', '3']));
    expect(out.raw).toBeUndefined();
    expect(out.json).toEqual({ experiments: experiments('1', '3') });
  });

  it('writes a new answer when MLflow has more pages (the token is flowgate’s own)', async () => {
    const upstream = upstreamAnswering({ experiments: experiments('1', '2'), next_page_token: 'mlflow-token' });
    const out = await filteredSearch(SPEC, upstream, 'POST', '/x', { max_results: 2 }, all);
    expect(out.raw).toBeUndefined();
    const json = out.json as { experiments: unknown[]; next_page_token?: string };
    expect(json.experiments).toEqual(experiments('1', '2'));
    expect(json.next_page_token).toBeDefined();
    expect(json.next_page_token).not.toBe('mlflow-token');
  });

  it('writes a new answer when the page is cut to the size the client asked for', async () => {
    const upstream = upstreamAnswering({ experiments: experiments('1', '2', '3') });
    const out = await filteredSearch(SPEC, upstream, 'POST', '/x', { max_results: 2 }, all);
    expect(out.raw).toBeUndefined();
    expect((out.json as { experiments: unknown[] }).experiments).toEqual(experiments('1', '2'));
  });

  it('writes a new answer when MLflow sent fields besides the list', async () => {
    const upstream = upstreamAnswering({ experiments: experiments('1'), extra: 1 });
    const out = await filteredSearch(SPEC, upstream, 'POST', '/x', { max_results: 10 }, all);
    expect(out.raw).toBeUndefined();
    expect(out.json).toEqual({ experiments: experiments('1') });
  });
});
