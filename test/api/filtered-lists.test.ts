/**
 * Lists and searches scoped by the request, against a stub MLflow that reads requests as MLflow 3.17.2's
 * protobuf handlers do: a GET's query string under each field's own (snake_case) name only, a POST's
 * JSON body only, and no scope at all meaning every experiment (or endpoint, or dataset). Bob may read
 * experiment 1 and the gateway endpoint `mine`, nothing else.
 */
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

const SCORERS = [
  { experiment_id: '1', scorer_name: 'mine', scorer_id: 's1', serialized_scorer: '{"public":true}' },
  { experiment_id: '2', scorer_name: 'secret-judge', scorer_id: 's2', serialized_scorer: '{"instructions":"HIDDEN PROMPT"}' },
];
const BINDINGS = [
  { endpoint_id: 'e-mine', resource_type: 'scorer', resource_id: 's1' },
  { endpoint_id: 'e-hidden', resource_type: 'scorer', resource_id: 's2' },
];
const ISSUES = [
  { issue_id: 'i-1', experiment_id: '1', name: 'mine' },
  { issue_id: 'i-2', experiment_id: '2', name: 'HIDDEN: PII leaked in prod answers' },
];

let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let bob = '';
/** What the stub answers scorers/list when set, whatever it was asked (an MLflow reading another scope). */
let scorersAnswer: unknown;
/** What the stub answers a dataset search when set. */
let datasetsAnswer: { status: number; body: unknown } | undefined;
/** The status the stub answers scorers/list and experiments/search with (rows included) when set. */
let listStatus: number | undefined;
/** The datasets the stub pages through as MLflow does, when set. */
let datasetRows: unknown[] | undefined;

const bodyOf = (raw: string) => (raw ? (JSON.parse(raw) as Record<string, unknown>) : {});

beforeAll(async () => {
  upstream = await startStubUpstream((r) => {
    const u = new URL(r.url, 'http://x');
    const get = r.method === 'GET';
    if (listStatus !== undefined && (u.pathname.endsWith('/scorers/list') || u.pathname.endsWith('/experiments/search')))
      return { status: listStatus, body: { error_code: 'INTERNAL_ERROR', message: 'boom', scorers: [SCORERS[1]], experiments: [{ experiment_id: '2', name: 'HIDDEN-experiment' }] } };
    if (u.pathname.endsWith('/scorers/list')) {
      if (scorersAnswer !== undefined) return { status: 200, body: scorersAnswer };
      const one = u.searchParams.get('experiment_id');
      return { status: 200, body: { scorers: one ? SCORERS.filter((s) => s.experiment_id === one) : SCORERS } };
    }
    if (u.pathname.endsWith('/gateway/endpoints/get')) {
      const id = u.searchParams.get('endpoint_id');
      return { status: 200, body: { endpoint: { endpoint_id: id, name: id === 'e-mine' ? 'mine' : 'hidden' } } };
    }
    if (u.pathname.endsWith('/gateway/endpoints/bindings/list')) {
      const one = u.searchParams.get('endpoint_id');
      return { status: 200, body: { bindings: one ? BINDINGS.filter((b) => b.endpoint_id === one) : BINDINGS } };
    }
    if (u.pathname.endsWith('/issues/search')) {
      const one = bodyOf(r.body).experiment_id;
      return { status: 200, body: { issues: one ? ISSUES.filter((i) => i.experiment_id === one) : ISSUES } };
    }
    if (u.pathname.endsWith('/datasets/search')) {
      if (datasetsAnswer !== undefined) return datasetsAnswer;
      if (datasetRows !== undefined) {
        // MLflow's offset paging: `{"offset": n}` in base64, max_results a page.
        const input = get ? Object.fromEntries(u.searchParams) : bodyOf(r.body);
        const offset = input.page_token ? (JSON.parse(Buffer.from(String(input.page_token), 'base64').toString()) as { offset: number }).offset : 0;
        const size = Number(input.max_results ?? 1000);
        const rows = datasetRows.slice(offset, offset + size);
        const more = offset + size < datasetRows.length;
        return { status: 200, body: { ...(rows.length ? { datasets: rows } : {}), ...(more ? { next_page_token: Buffer.from(JSON.stringify({ offset: offset + size })).toString('base64') } : {}) } };
      }
      const ids = get ? u.searchParams.getAll('experiment_ids') : ((bodyOf(r.body).experiment_ids as string[] | undefined) ?? []);
      return ids.length > 0 ? { status: 200, body: {} } : { status: 200, body: { datasets: [{ dataset_id: 'd-hidden', name: 'acme-merger-evals' }] } };
    }
    if (u.pathname.endsWith('/scorers/online-configs')) return { status: 200, body: { configs: [{ experiment_id: '2', scorer_id: 's2', sample_rate: 1 }] } };
    if (u.pathname.endsWith('/review-queues/list')) return { status: 200, body: { review_queues: [{ queue_id: 'q', experiment_id: '1', users: ['carol'] }] } };
    if (u.pathname.endsWith('/experiment-ids')) return { status: 200, body: { experiment_ids: u.pathname.includes('d-mine') ? ['1'] : ['2'] } };
    return { status: 200, body: {} };
  });
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  const created = await request(fg.url)
    .post('/api/2.0/mlflow/users/create')
    .set('Authorization', adminAuth())
    .send({ username: 'bob', display_name: 'bob', is_admin: false, is_service_account: false });
  expect(created.status).toBe(201);
  bob = (await request(fg.url).patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username: 'bob' })).body.token;
  for (const path of ['experiments/1', 'gateways/endpoints/mine'])
    expect((await request(fg.url).post(`/api/2.0/mlflow/permissions/users/bob/${path}`).set('Authorization', adminAuth()).send({ permission: 'READ' })).status).toBe(201);
});
afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

const asBob = (method: 'get' | 'post', path: string) => request(fg.url)[method](path).set('Authorization', basic('bob', bob));

/** A 400 in MLflow's error shape, and MLflow never asked. */
async function refusedUnasked(r: Promise<request.Response>, names: string): Promise<void> {
  const before = upstream.seen.length;
  const answer = await r;
  expect(answer.status).toBe(400);
  expect(answer.body.error_code).toBe('INVALID_PARAMETER_VALUE');
  expect(answer.body.message).toContain(names);
  expect(upstream.seen.slice(before).map((s) => s.url)).toEqual([]);
}

describe('a scope given only where MLflow does not read it is refused', () => {
  it('scorers/list?experiment_id=1 (snake_case, read by MLflow): experiment 1 only', async () => {
    const r = await asBob('get', '/api/3.0/mlflow/scorers/list?experiment_id=1');
    expect(r.status).toBe(200);
    expect(r.body.scorers.map((s: { scorer_name: string }) => s.scorer_name)).toEqual(['mine']);
  });

  it('scorers/list?experimentId=1 (MLflow would list every experiment): 400 naming experiment_id', async () => {
    await refusedUnasked(asBob('get', '/api/3.0/mlflow/scorers/list?experimentId=1'), "'experiment_id'");
    await refusedUnasked(asBob('get', '/api/3.0/mlflow/scorers/list?experimentId=1&experiment_ids=2'), "'experiment_id'");
  });

  it('issues/search?experiment_id=1 with an empty body (MLflow would search every experiment): 400', async () => {
    await refusedUnasked(asBob('post', '/api/3.0/mlflow/issues/search?experiment_id=1').send({}), 'JSON body');
    const inBody = await asBob('post', '/api/3.0/mlflow/issues/search').send({ experiment_id: '1' });
    expect(inBody.status).toBe(200);
    expect(inBody.text).not.toContain('HIDDEN');
  });

  it('gateway/endpoints/bindings/list?endpointId=<own endpoint> (MLflow would list every binding): 400', async () => {
    await refusedUnasked(asBob('get', '/api/3.0/mlflow/gateway/endpoints/bindings/list?endpointId=e-mine'), "'endpoint_id'");
    const own = await asBob('get', '/api/3.0/mlflow/gateway/endpoints/bindings/list?endpoint_id=e-mine');
    expect(own.status).toBe(200);
    expect(own.text).not.toContain('e-hidden');
  });

  it('datasets/search scoped in the wrong place (MLflow would search every dataset): 400', async () => {
    await refusedUnasked(asBob('get', '/api/3.0/mlflow/datasets/search?experimentIds=1'), "'experiment_ids'");
    await refusedUnasked(asBob('post', '/api/3.0/mlflow/datasets/search?experiment_ids=1').send({}), 'JSON body');
  });

  it('scorers/list?experiment_id=1: rows of another experiment in the answer are withheld', async () => {
    scorersAnswer = { scorers: SCORERS };
    try {
      const r = await asBob('get', '/api/3.0/mlflow/scorers/list?experiment_id=1');
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ scorers: [SCORERS[0]] });
      scorersAnswer = { scorers: [SCORERS[1]] };
      const none = await asBob('get', '/api/3.0/mlflow/scorers/list?experiment_id=1');
      expect(none.body).toEqual({});
    } finally {
      scorersAnswer = undefined;
    }
  });
});

/** A dataset of experiment 1 only (`d-mine…`) or also of experiment 2 (`d-shared…`): the stub's experiment-ids answers so. */
const dataset = (id: string) => ({ dataset_id: id, name: id });

describe('a list emptied of hidden rows answers like one MLflow found empty', () => {
  it('datasets/search: no `datasets: []`, and no token counting hidden rows', async () => {
    datasetsAnswer = { status: 200, body: {} };
    const none = await asBob('post', '/api/3.0/mlflow/datasets/search').send({ experiment_ids: ['1'] });
    datasetsAnswer = undefined;
    datasetRows = [dataset('d-shared-1'), dataset('d-shared-2'), dataset('d-shared-3')];
    try {
      // MLflow's page holds only hidden datasets and says more follow: flowgate reads on, and MLflow has no more.
      const hidden = await asBob('post', '/api/3.0/mlflow/datasets/search').send({ experiment_ids: ['1'], max_results: 1 });
      expect(none.status).toBe(200);
      expect(hidden.status).toBe(200);
      expect(hidden.text).toBe(none.text);
      expect(hidden.body).toEqual({});
    } finally {
      datasetRows = undefined;
    }
  });

  it('datasets/search: a full page of readable datasets carries flowgate\'s sealed token, not MLflow\'s', async () => {
    datasetRows = [dataset('d-shared-1'), dataset('d-mine-1'), dataset('d-shared-2'), dataset('d-mine-2')];
    try {
      const page = await asBob('get', '/api/3.0/mlflow/datasets/search?experiment_ids=1&max_results=1');
      expect(page.status).toBe(200);
      expect(page.body.datasets).toEqual([dataset('d-mine-1')]);
      expect(page.body.next_page_token).toBeTypeOf('string');
      const next = await asBob('get', `/api/3.0/mlflow/datasets/search?experiment_ids=1&max_results=1&page_token=${encodeURIComponent(page.body.next_page_token)}`);
      expect(next.body).toEqual({ datasets: [dataset('d-mine-2')] });
    } finally {
      datasetRows = undefined;
    }
  });

  it('scorers/online-configs: configs of experiments bob cannot read leave `configs: []`, as MLflow answers none (plain JSON, not protobuf)', async () => {
    const r = await asBob('get', '/api/3.0/mlflow/scorers/online-configs?scorer_ids=s2');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ configs: [] });
  });

  it('review-queues/list: the queues bob is not assigned to are left out, not answered as `[]`', async () => {
    const r = await asBob('get', '/api/3.0/mlflow/review-queues/list?experiment_id=1');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({});
  });
});

describe('a filtered route answered in another status than 200 passes no rows on', () => {
  const routes = [
    ['scorers/list (filtered in the answer)', () => asBob('get', '/api/3.0/mlflow/scorers/list')],
    ['experiments/search (re-paged)', () => asBob('post', '/api/2.0/mlflow/experiments/search').send({})],
  ] as const;
  for (const [label, send] of routes) {
    it(`${label}: another 2xx is a 502`, async () => {
      listStatus = 203;
      try {
        const r = await send();
        expect(r.status).toBe(502);
        expect(r.body.error_code).toBe('BAD_GATEWAY');
        expect(r.text).not.toContain('HIDDEN');
        expect(r.text).not.toContain('secret-judge');
      } finally {
        listStatus = undefined;
      }
    });
    it(`${label}: an error status relays its error code and message only`, async () => {
      listStatus = 500;
      try {
        const r = await send();
        expect(r.status).toBe(500);
        expect(r.body).toEqual({ error_code: 'INTERNAL_ERROR', message: 'boom' });
      } finally {
        listStatus = undefined;
      }
    });
  }
});
