import { createHash } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, ADMIN, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/**
 * Issue 39, the decision log: one JSON line per authorization decision, apart from the request log, to a
 * file a log shipper tails; denies always, allows sampled; masked fields as keyed pseudonyms; never a
 * token or a value from a header or body.
 */
interface DecisionEvent {
  time: string;
  requestId: string;
  user?: string;
  via?: string;
  admin?: boolean;
  route?: string;
  resources?: Array<{ kind: string; id: string }>;
  resourcesTotal?: number;
  decision: string;
  reason?: string;
  policyGeneration: number;
  sampled?: number;
  type: string;
}

let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let dir: string;
const started: TestFlowgate[] = [];

async function flowgateLogging(file: string, env: Record<string, string> = {}): Promise<TestFlowgate> {
  const fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_DECISION_LOG: 'file', FLOWGATE_DECISION_LOG_FILE: file, ...env });
  started.push(fg);
  return fg;
}

/** The events written so far, once at least `count` are there (the file is written asynchronously). */
async function eventsIn(file: string, count: number): Promise<DecisionEvent[]> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const text = await readFile(file, 'utf8').catch(() => '');
    // Only whole lines: the last may still be on its way.
    const events = text.slice(0, text.lastIndexOf('\n') + 1).split('\n').filter(Boolean).map((line) => JSON.parse(line) as DecisionEvent);
    if (events.length >= count || Date.now() > deadline) return events;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function person(fg: TestFlowgate, username: string): Promise<string> {
  await request(fg.url).post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username }).expect(201);
  return (await request(fg.url).patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username })).body.token as string;
}

beforeAll(async () => {
  // A gateway endpoint of whatever name is asked for (the USE check needs it to exist).
  upstream = await startStubUpstream((r) =>
    r.url.includes('/endpoints/get') ? { status: 200, body: { endpoint: { endpoint_id: 'e-1', name: decodeURIComponent(r.url.split('name=')[1] ?? '') } } } : { status: 200, body: { ok: true } },
  );
  dir = await mkdtemp(join(tmpdir(), 'flowgate-decisions-'));
});

afterAll(async () => {
  for (const fg of started) await fg.close();
  await upstream?.close();
  await removeDir(dir);
});

describe('the decision log', () => {
  it('writes who, the route template, the resources, the verdict, its reason and the policy generation', async () => {
    const file = join(dir, 'plain.log');
    const fg = await flowgateLogging(file);
    const token = await person(fg, 'mia');
    await request(fg.url).post('/api/2.0/mlflow/permissions/users/mia/experiments/7').set('Authorization', adminAuth()).send({ permission: 'READ' }).expect(201);
    const before = (await eventsIn(file, 0)).length;
    await request(fg.url).get('/api/2.0/mlflow/experiments/get?experiment_id=7').set('Authorization', basic('mia', token)).expect(200);
    await request(fg.url).post('/api/2.0/mlflow/experiments/update').set('Authorization', basic('mia', token)).send({ experiment_id: '8', new_name: 'x' }).expect(403);
    const events = (await eventsIn(file, before + 2)).slice(before);
    const [allowed, denied] = events.filter((e) => e.user === 'mia');
    expect(allowed).toMatchObject({
      type: 'decision',
      user: 'mia',
      via: 'basic',
      admin: false,
      route: '/api/2.0/mlflow/experiments/get',
      resources: [{ kind: 'experiment', id: '7' }],
      decision: 'allow',
      reason: 'direct-grant',
    });
    expect(denied).toMatchObject({ route: '/api/2.0/mlflow/experiments/update', resources: [{ kind: 'experiment', id: '8' }], decision: 'deny', reason: 'default-permission' });
    expect(new Date(allowed!.time).getTime()).toBeGreaterThan(Date.now() - 60_000);
    expect(allowed!.requestId).toMatch(/\S/);
    // The grant made before the requests is a policy change this process applied.
    expect(allowed!.policyGeneration).toBeGreaterThan(0);
    const text = await readFile(file, 'utf8');
    expect(text).not.toContain(token);
    expect(text).not.toContain(ADMIN.token);
    expect(text).not.toContain('"new_name"');
  });

  it('lists at most 20 of the resources a request names, and says how many there were', async () => {
    const file = join(dir, 'many.log');
    const fg = await flowgateLogging(file);
    const token = await person(fg, 'max');
    const before = (await eventsIn(file, 0)).length;
    const ids = Array.from({ length: 60 }, (_, i) => String(1000 + i));
    await request(fg.url).post('/ajax-api/2.0/mlflow/experiments/search-datasets').set('Authorization', basic('max', token)).send({ experiment_ids: ids }).expect(403);
    const [event] = (await eventsIn(file, before + 1)).slice(before).filter((e) => e.user === 'max');
    expect(event!.decision).toBe('deny');
    expect(event!.resources).toHaveLength(20);
    expect(event!.resourcesTotal).toBe(60);
    expect(event!.resources!.map((r) => r.id)).toEqual(ids.slice(0, 20));
  });

  it('cuts each resource id to 256 characters, with a hash of the whole, so a long chosen name cannot fill the log', async () => {
    const file = join(dir, 'long-ids.log');
    const fg = await flowgateLogging(file);
    const token = await person(fg, 'kit');
    const before = (await eventsIn(file, 0)).length;
    // A gateway call USE denies, naming its model by a 15,000-character name (it was written whole: a 15 KB event).
    const name = 'A'.repeat(15_000);
    const twin = `${'A'.repeat(14_999)}B`;
    for (const n of [name, twin])
      await request(fg.url).post('/gateway/openai/v1/chat/completions').set('Authorization', basic('kit', token)).send({ model: n, messages: [] }).expect(403);
    const events = (await eventsIn(file, before + 2)).slice(before).filter((e) => e.user === 'kit');
    expect(events).toHaveLength(2);
    const hashOf = (id: string) => createHash('sha256').update(id).digest('hex').slice(0, 16);
    const [one, other] = events;
    expect(one!.resources).toEqual([{ kind: 'gateway_endpoint', id: `${'A'.repeat(256)}…sha256:${hashOf(name)}` }]);
    // Same first 256 characters, another id: the hash tells them apart.
    expect(other!.resources).toEqual([{ kind: 'gateway_endpoint', id: `${'A'.repeat(256)}…sha256:${hashOf(twin)}` }]);
    // An event stays well under a kilobyte (at most 20 such ids: a few kilobytes).
    const lines = (await readFile(file, 'utf8')).split('\n').filter((l) => l.includes('"kit"'));
    expect(lines).toHaveLength(2);
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThan(1000);
  });

  it('writes every deny and only the sampled share of allows', async () => {
    const file = join(dir, 'sampled.log');
    const fg = await flowgateLogging(file, { FLOWGATE_DECISION_LOG_ALLOW_SAMPLE: '0' });
    const token = await person(fg, 'ned');
    for (let i = 0; i < 5; i++) {
      await request(fg.url).get('/api/2.0/mlflow/experiments/get?experiment_id=1').set('Authorization', basic('ned', token)).expect(403);
      await request(fg.url).get('/api/2.0/mlflow/experiments/get?experiment_id=1').set('Authorization', adminAuth()).expect(200);
    }
    const events = await eventsIn(file, 5);
    expect(events.filter((e) => e.decision === 'deny' && e.user === 'ned')).toHaveLength(5);
    expect(events.filter((e) => e.decision === 'allow')).toEqual([]);
  });

  it('writes masked fields as keyed pseudonyms that match across restarts under one key, and never the names', async () => {
    const file = join(dir, 'masked.log');
    const key = Buffer.alloc(32, 7).toString('base64');
    const env = { FLOWGATE_DECISION_LOG_MASK: 'user,resources', FLOWGATE_DECISION_LOG_MASK_KEY: key };
    let fg = await flowgateLogging(file, env);
    const token = await person(fg, 'ola-secret-name');
    await request(fg.url).get('/api/2.0/mlflow/experiments/get?experiment_id=424242').set('Authorization', basic('ola-secret-name', token)).expect(403);
    const first = (await eventsIn(file, 1)).find((e) => e.decision === 'deny')!;
    fg = await fg.restart();
    started.push(fg);
    await request(fg.url).get('/api/2.0/mlflow/experiments/get?experiment_id=424242').set('Authorization', basic('ola-secret-name', token)).expect(403);
    const all = await eventsIn(file, 2);
    const second = all.filter((e) => e.decision === 'deny').at(-1)!;
    expect(first.user).toMatch(/^~[A-Za-z0-9_-]{22}$/);
    expect(second.user).toBe(first.user);
    expect(second.resources).toEqual(first.resources);
    expect(first.resources!.every((r) => /^~/.test(r.id))).toBe(true);
    const text = await readFile(file, 'utf8');
    expect(text).not.toContain('ola-secret-name');
    expect(text).not.toContain('424242');
    // Another key, another pseudonym: they are keyed, not a plain hash anyone could recompute.
    const other = join(dir, 'other-key.log');
    const otherFg = await flowgateLogging(other, { ...env, FLOWGATE_DECISION_LOG_MASK_KEY: Buffer.alloc(32, 9).toString('base64') });
    const otherToken = await person(otherFg, 'ola-secret-name');
    await request(otherFg.url).get('/api/2.0/mlflow/experiments/get?experiment_id=424242').set('Authorization', basic('ola-secret-name', otherToken)).expect(403);
    const third = (await eventsIn(other, 1)).find((e) => e.decision === 'deny')!;
    expect(third.user).not.toBe(first.user);
  });

  it('refuses a configuration it cannot follow', async () => {
    await expect(startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_DECISION_LOG: 'file' })).rejects.toThrow(/FLOWGATE_DECISION_LOG_FILE/);
    await expect(startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_DECISION_LOG_MASK: 'user,password' })).rejects.toThrow(/FLOWGATE_DECISION_LOG_MASK/);
    await expect(startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_DECISION_LOG_MASK_KEY: 'short' })).rejects.toThrow(/FLOWGATE_DECISION_LOG_MASK_KEY/);
    // A directory where the file should be: the start fails naming the setting (it was an unhandled stream error).
    await expect(startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_DECISION_LOG: 'file', FLOWGATE_DECISION_LOG_FILE: dir })).rejects.toThrow(/FLOWGATE_DECISION_LOG_FILE: cannot append to .* \(EISDIR\)/);
  });
});
