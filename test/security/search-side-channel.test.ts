import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/**
 * The side channel of filtered searches, against the real MLflow: a user pages through a search
 * whose `LIKE` filter on a tag matches hidden items or not, and compares. Two users who see the
 * same items must get the same answers (items, page sizes, token presence and token lengths)
 * whatever the hidden items' tags hold; their tokens are opaque and theirs alone.
 */
let mlflow: MlflowServer;
let fg: TestFlowgate;
const tokens: Record<string, string> = {};
const suffix = Date.now().toString(36);
const inDays = (d: number) => new Date(Date.now() + d * 86_400_000).toISOString();
const V2 = '/api/2.0/mlflow';

/** Visible items are every fifth by name; four hidden ones sit before each and after the last. */
const COUNT = 34;
const isVisible = (i: number) => i % 5 === 4 && i < 30;
const nameOf = (kind: string, i: number) => `sc-${kind}-${suffix}-${String(i).padStart(2, '0')}`;
const VISIBLE_COUNT = Array.from({ length: COUNT }, (_, i) => i).filter(isVisible).length;

interface Answer {
  readonly status: number;
  readonly json: Record<string, unknown>;
}

async function call(user: string, method: 'GET' | 'POST', path: string, input: Record<string, unknown> = {}): Promise<Answer> {
  const auth = user === 'admin' ? adminAuth() : basic(user, tokens[user]!);
  let url = `${fg.url}${path}`;
  const init: RequestInit = { method, headers: { authorization: auth } };
  if (method === 'GET') {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(input)) for (const one of Array.isArray(v) ? v : [v]) q.append(k, String(one));
    url += `?${q.toString()}`;
  } else {
    init.body = JSON.stringify(input);
    init.headers = { ...init.headers, 'content-type': 'application/json' };
  }
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

async function admin(method: 'GET' | 'POST' | 'PATCH', path: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await fetch(`${fg.url}${path}`, {
    method,
    headers: { authorization: adminAuth(), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(json)}`);
  return json;
}

interface SearchKind {
  readonly label: string;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly itemsKey: string;
  readonly input: (tagPrefix: string) => Record<string, unknown>;
  readonly idOf: (item: Record<string, unknown>) => string;
}

const KINDS: readonly SearchKind[] = [
  {
    label: 'experiments',
    method: 'POST',
    path: `${V2}/experiments/search`,
    itemsKey: 'experiments',
    input: (p) => ({ filter: `name LIKE 'sc-exp-${suffix}-%' AND tags.secret LIKE '${p}%'`, order_by: ['name ASC'] }),
    idOf: (item) => String(item.name),
  },
  {
    label: 'registered models',
    method: 'GET',
    path: `${V2}/registered-models/search`,
    itemsKey: 'registered_models',
    input: (p) => ({ filter: `name LIKE 'sc-rm-${suffix}-%' AND tags.secret LIKE '${p}%'`, order_by: 'name ASC' }),
    idOf: (item) => String(item.name),
  },
  {
    label: 'model versions',
    method: 'GET',
    path: `${V2}/model-versions/search`,
    itemsKey: 'model_versions',
    input: (p) => ({ filter: `name LIKE 'sc-rm-${suffix}-%' AND tags.secret LIKE '${p}%'`, order_by: 'name ASC' }),
    idOf: (item) => `${String(item.name)}/${String(item.version)}`,
  },
];

interface Page {
  readonly ids: string[];
  readonly token: string | undefined;
}

/** Every page of the search as `user`, following the tokens. */
async function pages(user: string, kind: SearchKind, maxResults: number, tagPrefix = 'a'): Promise<Page[]> {
  const out: Page[] = [];
  let token: string | undefined;
  do {
    const res = await call(user, kind.method, kind.path, { ...kind.input(tagPrefix), max_results: maxResults, ...(token ? { page_token: token } : {}) });
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(Object.keys(res.json).every((k) => k === kind.itemsKey || k === 'next_page_token')).toBe(true);
    const items = (res.json[kind.itemsKey] ?? []) as Array<Record<string, unknown>>;
    token = res.json.next_page_token as string | undefined;
    out.push({ ids: items.map(kind.idOf), token });
  } while (token && out.length < 50);
  return out;
}

/** What a caller can compare: the items and the token's presence and length, not its bytes. */
const observable = (ps: Page[]) => ps.map((p) => ({ ids: p.ids, token: p.token === undefined ? 'none' : p.token.length }));

/** Sets the `secret` tag of every hidden item (the visible ones keep theirs). */
async function setHiddenSecrets(value: (i: number) => string): Promise<void> {
  const work: Array<Promise<unknown>> = [];
  for (let i = 0; i < COUNT; i++) {
    if (isVisible(i)) continue;
    const v = value(i);
    work.push(admin('POST', `${V2}/experiments/set-experiment-tag`, { experiment_id: experimentIds[i], key: 'secret', value: v }));
    work.push(admin('POST', `${V2}/registered-models/set-tag`, { name: nameOf('rm', i), key: 'secret', value: v }));
    work.push(admin('POST', `${V2}/model-versions/set-tag`, { name: nameOf('rm', i), version: '1', key: 'secret', value: v }));
    if (work.length >= 12) await Promise.all(work.splice(0));
  }
  await Promise.all(work);
}

const experimentIds: string[] = [];

beforeAll(async () => {
  mlflow = await startMlflowServer();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
  for (const u of ['alice', 'bob']) {
    await admin('POST', `${V2}/users/create`, { username: u });
    tokens[u] = (await admin('PATCH', `${V2}/permissions/users/access-token`, { username: u, expiration: inDays(1) })).token as string;
  }
  const exp = await admin('POST', `${V2}/experiments/create`, { name: `sc-runs-${suffix}` });
  const run = (await admin('POST', `${V2}/runs/create`, { experiment_id: exp.experiment_id })) as { run: { info: { run_id: string; artifact_uri: string } } };
  for (let i = 0; i < COUNT; i++) {
    const secret = isVisible(i) ? 'a-visible' : 'zzz';
    const tags = [{ key: 'secret', value: secret }];
    const e = await admin('POST', `${V2}/experiments/create`, { name: nameOf('exp', i), tags });
    experimentIds[i] = e.experiment_id as string;
    await admin('POST', `${V2}/registered-models/create`, { name: nameOf('rm', i), tags });
    await admin('POST', `${V2}/model-versions/create`, {
      name: nameOf('rm', i),
      source: `${run.run.info.artifact_uri}/model`,
      run_id: run.run.info.run_id,
      tags,
    });
    if (isVisible(i))
      for (const u of ['alice', 'bob']) {
        await admin('POST', `${V2}/permissions/users/${u}/experiments/${experimentIds[i]}`, { permission: 'READ' });
        await admin('POST', `${V2}/permissions/users/${u}/registered-models/${nameOf('rm', i)}`, { permission: 'READ' });
      }
  }
}, 600_000);

afterAll(async () => {
  await fg?.close();
  await mlflow?.stop();
  if (fg) removeDir(fg.dir);
});

describe('filtered searches do not tell hidden items apart', () => {
  it.each(KINDS)('$label: same answers and token lengths whether the hidden tags match the filter or not', async (kind) => {
    const seen: Record<string, ReturnType<typeof observable>> = {};
    for (const state of ['no hidden match', 'every hidden item matches', 'some hidden items match']) {
      if (state === 'no hidden match') await setHiddenSecrets(() => 'zzz');
      else if (state === 'every hidden item matches') await setHiddenSecrets((i) => `a-hidden-${'x'.repeat(i)}`);
      else await setHiddenSecrets((i) => (i % 3 === 0 ? 'abc' : 'b'));

      // The hidden items really are in what MLflow answers (the administrator sees them).
      const everything = (await pages('admin', kind, 1000)).flatMap((p) => p.ids);
      const hiddenMatching = everything.length - VISIBLE_COUNT;
      if (state === 'no hidden match') expect(hiddenMatching).toBe(0);
      else expect(hiddenMatching).toBeGreaterThan(3);

      for (const maxResults of [1, 2, 4, 6])
        for (const user of ['alice', 'bob']) {
          const observed = observable(await pages(user, kind, maxResults));
          const key = `${maxResults}`;
          seen[key] ??= observed;
          expect(observed, `${state}, ${user}, max_results ${maxResults}`).toEqual(seen[key]);
        }
    }
    // And the answers are what the visible items make: full pages, a token exactly when more follow.
    const visible = Array.from({ length: COUNT }, (_, i) => i).filter(isVisible).map((i) => nameOf(kind.label === 'experiments' ? 'exp' : 'rm', i));
    const ids = (id: string) => (kind.label === 'model versions' ? `${id}/1` : id);
    expect(seen['2']!.map((p) => p.ids)).toEqual([visible.slice(0, 2), visible.slice(2, 4), visible.slice(4, 6)].map((ps) => ps.map(ids)));
    expect(seen['2']!.map((p) => p.token === 'none')).toEqual([false, false, true]);
    expect(seen['6']!).toEqual([{ ids: visible.map(ids), token: 'none' }]);
  }, 240_000);

  it.each(KINDS)('$label: a token is opaque, and refused for another user or another filter', async (kind) => {
    const [first] = await pages('alice', kind, 2);
    const token = first!.token!;
    expect(token).toMatch(/^fg2\.[A-Za-z0-9_-]+$/);
    const decoded = Buffer.from(token.slice(4), 'base64url').toString('latin1');
    expect(decoded).not.toMatch(/offset|"s"|"t"/);

    const resumed = await call('alice', kind.method, kind.path, { ...kind.input('a'), max_results: 2, page_token: token });
    expect(resumed.status).toBe(200);
    const asBob = await call('bob', kind.method, kind.path, { ...kind.input('a'), max_results: 2, page_token: token });
    expect(asBob).toMatchObject({ status: 400, json: { error_code: 'INVALID_PARAMETER_VALUE' } });
    const otherFilter = await call('alice', kind.method, kind.path, { ...kind.input('ab'), max_results: 2, page_token: token });
    expect(otherFilter).toMatchObject({ status: 400, json: { error_code: 'INVALID_PARAMETER_VALUE' } });
    const tampered = Buffer.from(token.slice(4), 'base64url');
    tampered[30]! ^= 0x04;
    const flipped = await call('alice', kind.method, kind.path, { ...kind.input('a'), max_results: 2, page_token: `fg2.${tampered.toString('base64url')}` });
    expect(flipped).toMatchObject({ status: 400, json: { error_code: 'INVALID_PARAMETER_VALUE' } });
  });
});

describe("GraphQL's model-version search", () => {
  const graphql = (user: string, query: string) => call(user, 'POST', '/graphql', { query });
  const search = (extra = '') =>
    `{ mlflowSearchModelVersions(input: {filter: "name LIKE 'sc-rm-${suffix}-%' AND tags.secret LIKE 'a%'", orderBy: ["name ASC"]${extra}}) { modelVersions { name version } nextPageToken } }`;

  it('refuses paging to non-administrators, and answers them the same whatever the hidden versions hold', async () => {
    expect(await graphql('alice', search(', maxResults: "1"'))).toMatchObject({ status: 400, json: { error_code: 'INVALID_PARAMETER_VALUE' } });
    expect(await graphql('alice', search(', pageToken: "eyJvZmZzZXQiOiAxfQ=="'))).toMatchObject({ status: 400, json: { error_code: 'INVALID_PARAMETER_VALUE' } });

    const answers: unknown[] = [];
    for (const value of [() => 'zzz', (i: number) => `a-${i}`]) {
      await setHiddenSecrets(value);
      const res = await graphql('alice', search());
      expect(res.status).toBe(200);
      answers.push(res.json);
    }
    expect(answers[1]).toEqual(answers[0]);
    const data = (answers[0] as { data: { mlflowSearchModelVersions: { modelVersions: unknown[]; nextPageToken: unknown } } }).data;
    expect(data.mlflowSearchModelVersions.modelVersions).toHaveLength(VISIBLE_COUNT);
    expect(data.mlflowSearchModelVersions.nextPageToken).toBeNull();

    // MLflow's own token, as an administrator sees it, is there to be removed.
    const asAdmin = await graphql('admin', search(', maxResults: "1"'));
    expect((asAdmin.json as { data: { mlflowSearchModelVersions: { nextPageToken: unknown } } }).data.mlflowSearchModelVersions.nextPageToken).toEqual(expect.any(String));
  });
});
