import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createMlflowLookups, type LookupCacheName, type MlflowLookupsOptions } from '../../src/authz/mlflow-lookups.js';
import { FlowgateError } from '../../src/errors.js';
import { upstreamJsonFor } from '../helpers/mlflow-connection.js';

/** A tiny stand-in for MLflow's REST API, counting the requests it gets. */
let server: Server;
let baseUrl: string;
const hits: string[] = [];
let gate: Promise<void> | undefined;
let promptTagValue = 'true';
let experimentName = 'team a';

function send(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function handle(req: IncomingMessage, res: ServerResponse) {
  const url = new URL(req.url ?? '/', 'http://x');
  hits.push(`${url.pathname}${url.search}`);
  if (gate) await gate;
  const path = url.pathname.replace(/^\/prefix/, '');
  const q = url.searchParams;
  if (path === '/api/2.0/mlflow/runs/get') {
    if (q.get('run_id') === 'r1') return send(res, 200, { run: { info: { run_id: 'r1', experiment_id: '11' } } });
    if (q.get('run_id') === 'boom') return send(res, 500, { error_code: 'INTERNAL_ERROR', message: 'db down' });
    if (q.get('run_id') === 'garbled') return send(res, 200, { run: {} });
    if (q.get('run_id') === 'bad id') return send(res, 400, { error_code: 'INVALID_PARAMETER_VALUE', message: 'bad' });
    return send(res, 404, { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'no run' });
  }
  if (path === '/api/2.0/mlflow/logged-models/m%2F1') return send(res, 200, { model: { info: { model_id: 'm/1', experiment_id: '12' } } });
  if (path === '/api/3.0/mlflow/traces/tr-1') {
    return send(res, 200, { trace: { trace_info: { trace_id: 'tr-1', trace_location: { type: 'MLFLOW_EXPERIMENT', mlflow_experiment: { experiment_id: '13' } } } } });
  }
  if (path === '/api/2.0/mlflow/experiments/get-by-name') {
    if (q.get('experiment_name') === 'team a') return send(res, 200, { experiment: { experiment_id: '14', name: 'team a' } });
    return send(res, 404, { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'no experiment' });
  }
  if (path === '/api/2.0/mlflow/experiments/get') {
    if (q.get('experiment_id') === '14') return send(res, 200, { experiment: { experiment_id: '14', name: experimentName } });
    return send(res, 404, { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'no experiment' });
  }
  if (path === '/api/2.0/mlflow/registered-models/get') {
    const name = q.get('name');
    if (name === 'p') return send(res, 200, { registered_model: { name, tags: [{ key: 'mlflow.prompt.is_prompt', value: promptTagValue }] } });
    if (name === 'm') return send(res, 200, { registered_model: { name } });
    return send(res, 404, { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'no model' });
  }
  return send(res, 404, { error_code: 'ENDPOINT_NOT_FOUND', message: 'unknown' });
}

beforeAll(async () => {
  server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  hits.length = 0;
  gate = undefined;
  promptTagValue = 'true';
  experimentName = 'team a';
});

interface Setup extends Partial<Omit<MlflowLookupsOptions, 'client'>> {
  upstreamUrl?: string;
  staticPrefix?: string;
  timeoutMs?: number;
}

function lookups({ upstreamUrl = baseUrl, staticPrefix = '', timeoutMs = 10_000, ...overrides }: Setup = {}) {
  const cacheEvents: Array<[LookupCacheName, boolean]> = [];
  const api = createMlflowLookups({
    client: upstreamJsonFor(upstreamUrl.replace(/\/+$/, ''), staticPrefix, timeoutMs),
    cacheSize: 100,
    ttlMs: 60_000,
    onCache: (name, hit) => cacheEvents.push([name, hit]),
    ...overrides,
  });
  return { api, cacheEvents };
}

async function errorOf(promise: Promise<unknown>): Promise<FlowgateError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(FlowgateError);
    return error as FlowgateError;
  }
  throw new Error('expected a rejection');
}

describe('MLflow look-ups', () => {
  it('maps each resource to its experiment through the REST API', async () => {
    const { api } = lookups();
    expect(await api.experimentOfRun('r1')).toBe('11');
    expect(await api.experimentOfLoggedModel('m/1')).toBe('12');
    expect(await api.experimentOfTrace('tr-1')).toBe('13');
    expect(await api.experimentIdByName('team a')).toBe('14');
    expect(await api.isPrompt('p')).toBe(true);
    expect(await api.isPrompt('m')).toBe(false);
    expect(hits).toContain('/api/2.0/mlflow/experiments/get-by-name?experiment_name=team+a');
  });

  it("knows a cached run's experiment without a promise, and counts each request's hit or miss once", async () => {
    const { api, cacheEvents } = lookups();
    expect(api.knownExperimentOfRun!('r1')).toBeUndefined();
    expect(cacheEvents).toEqual([]);
    expect(await api.experimentOfRun('r1')).toBe('11');
    expect(cacheEvents).toEqual([['run_experiment', false]]);
    expect(api.knownExperimentOfRun!('r1')).toBe('11');
    expect(cacheEvents).toEqual([['run_experiment', false], ['run_experiment', true]]);
    expect(hits).toHaveLength(1);
  });

  it('puts the static prefix in front of every path', async () => {
    const { api } = lookups({ upstreamUrl: `${baseUrl}/`, staticPrefix: '/prefix' });
    expect(await api.experimentOfRun('r1')).toBe('11');
    expect(hits).toEqual(['/prefix/api/2.0/mlflow/runs/get?run_id=r1']);
  });

  it('caches and reports hits and misses', async () => {
    const { api, cacheEvents } = lookups();
    await api.experimentOfRun('r1');
    await api.experimentOfRun('r1');
    await api.isPrompt('p');
    await api.isPrompt('p');
    expect(hits).toHaveLength(2);
    expect(cacheEvents).toEqual([
      ['run_experiment', false],
      ['run_experiment', true],
      ['model_is_prompt', false],
      ['model_is_prompt', true],
    ]);
  });

  it('bounds each cache', async () => {
    const { api } = lookups({ cacheSize: 1 });
    await api.isPrompt('p');
    await api.isPrompt('m');
    await api.isPrompt('p');
    expect(hits).toHaveLength(3);
  });

  it('shares one upstream request between concurrent misses', async () => {
    const { api } = lookups();
    let open!: () => void;
    gate = new Promise((resolve) => (open = resolve));
    const answers = Promise.all([api.experimentOfRun('r1'), api.experimentOfRun('r1'), api.experimentOfRun('r1')]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    open();
    expect(await answers).toEqual(['11', '11', '11']);
    expect(hits).toEqual(['/api/2.0/mlflow/runs/get?run_id=r1']);
  });

  it('maps a 404 to RESOURCE_DOES_NOT_EXIST and a 5xx to TEMPORARILY_UNAVAILABLE', async () => {
    const { api } = lookups();
    const missing = await errorOf(api.experimentOfRun('nope'));
    expect([missing.code, missing.status]).toEqual(['RESOURCE_DOES_NOT_EXIST', 404]);
    const broken = await errorOf(api.experimentOfRun('boom'));
    expect([broken.code, broken.status]).toEqual(['TEMPORARILY_UNAVAILABLE', 503]);
    const garbled = await errorOf(api.experimentOfRun('garbled'));
    expect(garbled.code).toBe('TEMPORARILY_UNAVAILABLE');
    const malformed = await errorOf(api.experimentOfRun('bad id'));
    expect(malformed.status).toBe(400);
  });

  it('does not cache failures', async () => {
    const { api } = lookups();
    await errorOf(api.experimentOfRun('boom'));
    await errorOf(api.experimentOfRun('boom'));
    expect(hits).toHaveLength(2);
  });

  it('maps a network failure to TEMPORARILY_UNAVAILABLE', async () => {
    const { api } = lookups({ upstreamUrl: 'http://127.0.0.1:1' });
    const error = await errorOf(api.experimentOfRun('r1'));
    expect(error.code).toBe('TEMPORARILY_UNAVAILABLE');
  });

  it('maps a hung upstream to TEMPORARILY_UNAVAILABLE after the timeout', async () => {
    const { api } = lookups({ timeoutMs: 50 });
    gate = new Promise(() => undefined);
    const error = await errorOf(api.experimentOfRun('r1'));
    expect(error.code).toBe('TEMPORARILY_UNAVAILABLE');
  });

  it('expires the prompt flag and experiment names after the TTL, but not run mappings', async () => {
    const { api } = lookups({ ttlMs: 40 });
    await api.isPrompt('p');
    await api.experimentIdByName('team a');
    await api.experimentOfRun('r1');
    await new Promise((resolve) => setTimeout(resolve, 80));
    promptTagValue = 'false';
    expect(await api.isPrompt('p')).toBe(false);
    await api.experimentIdByName('team a');
    await api.experimentOfRun('r1');
    expect(hits.filter((h) => h.includes('registered-models'))).toHaveLength(2);
    expect(hits.filter((h) => h.includes('get-by-name'))).toHaveLength(2);
    expect(hits.filter((h) => h.includes('runs/get'))).toHaveLength(1);
  });

  it('ttlMs 0 turns caching of mutable mappings off', async () => {
    const { api } = lookups({ ttlMs: 0 });
    await api.isPrompt('p');
    await api.isPrompt('p');
    expect(hits).toHaveLength(2);
  });

  it('invalidates one model or experiment name on demand', async () => {
    const { api } = lookups();
    expect(await api.isPrompt('p')).toBe(true);
    promptTagValue = 'false';
    expect(await api.isPrompt('p')).toBe(true);
    api.invalidateModel('p');
    expect(await api.isPrompt('p')).toBe(false);
    await api.experimentIdByName('team a');
    api.invalidateExperimentName('team a');
    await api.experimentIdByName('team a');
    expect(hits.filter((h) => h.includes('get-by-name'))).toHaveLength(2);
  });

  it("caches an experiment's name by id until names are forgotten (a rename) or expire", async () => {
    const { api } = lookups();
    expect(api.knownExperimentName('14')).toBeUndefined();
    expect(await api.experimentNameById('14')).toBe('team a');
    experimentName = 'renamed';
    expect(api.knownExperimentName('14')).toBe('team a');
    expect(await api.experimentNameById('14')).toBe('team a');
    api.invalidateExperimentNames();
    expect(api.knownExperimentName('14')).toBeUndefined();
    expect(await api.experimentNameById('14')).toBe('renamed');
    expect(hits.filter((h) => h.includes('experiments/get?'))).toHaveLength(2);
    expect((await errorOf(api.experimentNameById('99'))).code).toBe('RESOURCE_DOES_NOT_EXIST');

    const short = lookups({ ttlMs: 40 }).api;
    await short.experimentNameById('14');
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(short.knownExperimentName('14')).toBeUndefined();
  });

  it('remembers an experiment id MLflow does not have, like a name: bounded apart from names, expiring, forgotten with them; fresh asks again', async () => {
    const { api, cacheEvents } = lookups({ cacheSize: 2 });
    const gets = () => hits.filter((h) => h.includes('experiments/get?')).length;
    expect(await api.experimentNameById('14')).toBe('team a');
    for (let i = 0; i < 3; i++) expect((await errorOf(api.experimentNameById('99'))).code).toBe('RESOURCE_DOES_NOT_EXIST');
    expect(gets()).toBe(2);
    expect(cacheEvents.filter(([name]) => name === 'experiment_name_of_id').map(([, hit]) => hit)).toEqual([false, false, true, true]);
    // Missing ids fill a cache of their own: they never push a name out.
    for (const id of ['97', '98', '99', '96']) await errorOf(api.experimentNameById(id));
    expect(api.knownExperimentName('14')).toBe('team a');
    // The gate asks afresh about an id remembered as missing (it may have been made since).
    expect((await errorOf(api.experimentNameById('96', true))).code).toBe('RESOURCE_DOES_NOT_EXIST');
    const before = gets();
    await errorOf(api.experimentNameById('96'));
    expect(gets()).toBe(before);
    api.invalidateExperimentNames();
    await errorOf(api.experimentNameById('96'));
    expect(gets()).toBe(before + 1);
    api.invalidateMutable();
    await errorOf(api.experimentNameById('96'));
    expect(gets()).toBe(before + 2);

    const short = lookups({ ttlMs: 40 }).api;
    await errorOf(short.experimentNameById('99'));
    await new Promise((resolve) => setTimeout(resolve, 80));
    await errorOf(short.experimentNameById('99'));
    const off = lookups({ ttlMs: 0 }).api;
    await errorOf(off.experimentNameById('99'));
    await errorOf(off.experimentNameById('99'));
    expect(gets()).toBe(before + 6);
  });

  it('a missing answer already in flight is not remembered once names were forgotten', async () => {
    const { api } = lookups();
    let open!: () => void;
    gate = new Promise((resolve) => (open = resolve));
    const stale = errorOf(api.experimentNameById('99'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    api.invalidateExperimentNames();
    open();
    await stale;
    gate = undefined;
    await errorOf(api.experimentNameById('99'));
    expect(hits.filter((h) => h.includes('experiments/get?'))).toHaveLength(2);
  });

  it('an answer already in flight does not refill an invalidated entry', async () => {
    const { api } = lookups();
    let open!: () => void;
    gate = new Promise((resolve) => (open = resolve));
    const stale = api.isPrompt('p');
    await new Promise((resolve) => setTimeout(resolve, 20));
    api.invalidateModel('p');
    open();
    await stale;
    gate = undefined;
    promptTagValue = 'false';
    expect(await api.isPrompt('p')).toBe(false);
  });
});
