import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareVersions } from '../../src/authz/catalog-versions.js';
import { adminAuth, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { runningMlflowVersion, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { caller, ok, type Caller, type CallOptions, type Reply } from './harness/http.js';
import { newTraceHex, traceInfo, V2, V3 } from './harness/world.js';

/**
 * Parser differentials between flowgate and MLflow in the searches flowgate narrows, attacked against the
 * real MLflow. mallory holds NO_PERMISSIONS on the victim experiment V and READ on everything else, once
 * through FLOWGATE_DEFAULT_PERMISSION=READ and once through a name-pattern grant; EDIT on her own O.
 * - MLflow runs experiment ids through Python's int(): `010`, ` 10`, `+10`, `1_0`, `١٠` are experiment 10,
 *   while flowgate's grants are keyed by `10`.
 * - MLflow before 3.17 also reads a field's camelCase JSON name and lets the later key win; 3.17 on refuses
 *   both spellings together but takes either alone.
 * - Python refuses an integer literal of more than 4300 digits, and Flask then hands MLflow no body (`{}`).
 * Each attack is replayed first against MLflow alone, where it must land (or, where MLflow refuses it
 * itself, must be refused), so a refusal here is flowgate's and not an attack that proves nothing.
 */
let mlflow: MlflowServer;
let version = '';
let fgDefault: TestFlowgate;
let fgPattern: TestFlowgate;
const quiet = () => {};
let direct: Caller;
const mallory: Record<'default READ' | 'pattern READ', Caller> = {} as never;
const suffix = Date.now().toString(36);
const MARK = `SECRET-DIFF-${suffix}`;
let O = '';
let V = '';

/** Every spelling of `id` Python's int() reads as the same number. */
function spellingsOf(id: string): Array<[string, string]> {
  const out: Array<[string, string]> = [
    ['a leading zero', `0${id}`],
    ['a leading blank', ` ${id}`],
    ['a trailing blank', `${id} `],
    ['a plus sign', `+${id}`],
    ['Arabic-Indic digits', [...id].map((d) => String.fromCharCode(0x660 + Number(d))).join('')],
  ];
  if (id.length > 1) out.push(['an underscore', `${id[0]}_${id.slice(1)}`]);
  return out;
}

async function startFlowgate(env: Record<string, string>, setUp: (admin: Caller) => Promise<void>): Promise<{ fg: TestFlowgate; as: Caller }> {
  const fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, ...env });
  const admin = caller(fg.url, adminAuth(), quiet);
  ok(await admin('POST', `${V2}/users/create`, { body: { username: 'mallory' } }), 'create mallory');
  const expiration = new Date(Date.now() + 86_400_000).toISOString();
  const token = ok(await admin('PATCH', `${V2}/permissions/users/access-token`, { body: { username: 'mallory', expiration } }), 'mint token').token as string;
  ok(await admin('POST', `${V2}/permissions/users/mallory/experiments/${V}`, { body: { permission: 'NO_PERMISSIONS' } }), 'deny V');
  ok(await admin('POST', `${V2}/permissions/users/mallory/experiments/${O}`, { body: { permission: 'EDIT' } }), 'EDIT on O');
  await setUp(admin);
  return { fg, as: caller(fg.url, basic('mallory', token), quiet) };
}

beforeAll(async () => {
  mlflow = await startMlflowServer();
  version = await runningMlflowVersion(mlflow);
  direct = caller(mlflow.url, undefined, quiet);
  const create = async (name: string) => ok(await direct('POST', `${V2}/experiments/create`, { body: { name } }), `create ${name}`).experiment_id as string;
  O = await create(`diff-${suffix}-own`);
  // V gets a two-digit id, so `1_0` spells it too.
  for (let i = 0; V.length < 2; i++) V = await create(`diff-${suffix}-${i}`);
  ok(await direct('POST', `${V2}/runs/create`, { body: { experiment_id: V, run_name: `${MARK}-run`, tags: [{ key: 'secret', value: `${MARK}-run-tag` }] } }), 'run in V');
  ok(await direct('POST', `${V2}/runs/create`, { body: { experiment_id: O, run_name: 'own-run' } }), 'run in O');
  ok(await direct('POST', `${V3}/traces`, { body: traceInfo(`tr-${newTraceHex()}`, V, { secret: `${MARK}-trace-tag` }) }), 'trace in V');
  ok(await direct('POST', `${V2}/logged-models`, { body: { experiment_id: V, name: `${MARK}-model` } }), 'logged model in V');

  ({ fg: fgDefault, as: mallory['default READ'] } = await startFlowgate({ FLOWGATE_DEFAULT_PERMISSION: 'READ' }, async () => {}));
  ({ fg: fgPattern, as: mallory['pattern READ'] } = await startFlowgate({}, async (admin) => {
    ok(
      await admin('POST', `${V2}/permissions/users/mallory/patterns`, { body: { resource_type: 'experiment', pattern: `diff-${suffix}-*`, permission: 'READ' } }),
      'pattern READ',
    );
  }));
}, 600_000);

afterAll(async () => {
  for (const fg of [fgDefault, fgPattern]) {
    if (!fg) continue;
    await fg.close();
    removeDir(fg.dir);
  }
  await mlflow?.stop();
});

const WAYS = ['default READ', 'pattern READ'] as const;
type Probe = readonly [method: string, path: string, options: CallOptions];

/** flowgate's refusal: a 400 in MLflow's error shape, nothing of V's. */
function expectRefused(reply: Reply, says?: string): void {
  expect(reply.status, reply.text).toBe(400);
  expect(reply.json).toMatchObject({ error_code: 'INVALID_PARAMETER_VALUE' });
  if (says !== undefined) expect(reply.json.message).toContain(says);
  expect(reply.text).not.toContain(MARK);
}

/** The attack, replayed against MLflow alone, reaches V. */
async function expectLandsWithoutFlowgate([method, path, options]: Probe): Promise<void> {
  const reply = await direct(method, path, options);
  expect(reply.status, reply.text).toBe(200);
  expect(reply.text).toContain(MARK);
}

describe('sanity: mallory reads her own experiment and is refused V as written', () => {
  it.each(WAYS)('%s', async (way) => {
    const own = await mallory[way]('POST', `${V2}/runs/search`, { body: { experiment_ids: [O] } });
    expect(own.status, own.text).toBe(200);
    expect(own.text).toContain('own-run');
    const victim = await mallory[way]('POST', `${V2}/runs/search`, { body: { experiment_ids: [V] } });
    expect(victim.text).not.toContain(MARK);
  });
});

describe('experiment ids MLflow reads through int()', () => {
  const probes = (id: string): Array<[string, Probe]> => [
    ['runs/search', ['POST', `${V2}/runs/search`, { body: { experiment_ids: [O, id] } }]],
    ['ajax-api runs/search', ['POST', `/ajax-api/2.0/mlflow/runs/search`, { body: { experiment_ids: [id] } }]],
    ['v3 traces/search', ['POST', `${V3}/traces/search`, { body: { locations: [{ type: 'MLFLOW_EXPERIMENT', mlflow_experiment: { experiment_id: id } }] } }]],
    ['ajax-api v3 traces/search', ['POST', `/ajax-api/3.0/mlflow/traces/search`, { body: { locations: [{ type: 'MLFLOW_EXPERIMENT', mlflow_experiment: { experiment_id: id } }] } }]],
    ['v2 GET traces', ['GET', `${V2}/traces`, { query: { experiment_ids: [O, id] } }]],
    ['logged-models/search', ['POST', `${V2}/logged-models/search`, { body: { experiment_ids: [id] } }]],
  ];

  it('land without flowgate: MLflow reads each spelling as V', async () => {
    for (const [, spelled] of spellingsOf(V)) for (const [, probe] of probes(spelled)) await expectLandsWithoutFlowgate(probe);
  });

  for (const way of WAYS)
    it(`are refused through flowgate (${way})`, async () => {
      for (const [how, spelled] of spellingsOf(V))
        for (const [route, [method, path, options]] of probes(spelled)) {
          const reply = await mallory[way](method, path, options);
          expect.soft(reply.status, `${route}, V with ${how}: ${reply.text}`).toBe(400);
          expectRefused(reply, 'plain decimal');
        }
    });
});

describe('camelCase twins of the fields a narrowed search reads', () => {
  const older = () => compareVersions(version, '3.17.0') < 0;
  const location = (experiment: Record<string, unknown>) => ({ type: 'MLFLOW_EXPERIMENT', ...experiment });
  // [what, probe, does MLflow alone take it (else it refuses it itself), the field flowgate names]
  const CASES = (): Array<[string, Probe, boolean, string]> => [
    ['runs/search: experimentIds after experiment_ids', ['POST', `${V2}/runs/search`, { body: { experiment_ids: [O], experimentIds: [V] } }], older(), 'experimentIds'],
    ['runs/search: experimentIds alone', ['POST', `${V2}/runs/search`, { body: { experimentIds: [V] } }], true, 'experimentIds'],
    [
      'traces/search: experimentId after experiment_id',
      ['POST', `${V3}/traces/search`, { body: { locations: [location({ mlflow_experiment: { experiment_id: O, experimentId: V } })] } }],
      older(),
      'experimentId',
    ],
    [
      'traces/search: a location by mlflowExperiment',
      ['POST', `${V3}/traces/search`, { body: { locations: [location({ mlflow_experiment: { experiment_id: O } }), location({ mlflowExperiment: { experimentId: V } })] } }],
      true,
      'mlflowExperiment',
    ],
    [
      'logged-models/search: experimentIds after experiment_ids',
      ['POST', `${V2}/logged-models/search`, { body: { experiment_ids: [O], experimentIds: [V] } }],
      older(),
      'experimentIds',
    ],
  ];

  it('without flowgate: MLflow reads the twin (before 3.17) or refuses the pair itself (3.17 on)', async () => {
    for (const [what, probe, lands] of CASES()) {
      if (lands) await expectLandsWithoutFlowgate(probe);
      else expect((await direct(...probe)).status, what).toBe(400);
    }
  });

  for (const way of WAYS)
    it(`are refused through flowgate, naming the field to write (${way})`, async () => {
      for (const [what, [method, path, options], , twin] of CASES()) {
        const reply = await mallory[way](method, path, options);
        expect.soft(reply.status, `${what}: ${reply.text}`).toBe(400);
        expectRefused(reply, `'${twin}' is not read here`);
      }
    });

  it('the page size and token of a filtered search are refused in their camelCase spelling', async () => {
    for (const body of [{ pageToken: 'eyJvZmZzZXQiOiAxfQ==' }, { max_results: 1, maxResults: 1000 }]) {
      expectRefused(await mallory['default READ']('POST', `${V2}/experiments/search`, { body }), 'is not read here');
      expectRefused(await mallory['default READ']('POST', `${V2}/logged-models/search`, { body: { experiment_ids: [O], ...body } }), 'is not read here');
    }
  });
});

describe('integers Python will not read', () => {
  const pad = '1'.repeat(5000);
  const json = { 'content-type': 'application/json' };
  const createRun = (experimentId: string): Probe => ['POST', `${V2}/runs/create`, { raw: `{"experiment_id":"${experimentId}","run_name":"padded","pad":${pad}}`, headers: json }];
  const searchOwn = (padded: boolean): Probe => [
    'POST',
    `${V2}/experiments/search`,
    { raw: `{"filter":"name = 'diff-${suffix}-own'","max_results":10${padded ? `,"pad":${pad}` : ''}}`, headers: json },
  ];
  const runCount = async (experimentId: string) => {
    const found = ok(await direct('POST', `${V2}/runs/search`, { body: { experiment_ids: [experimentId], max_results: 1000 } }), `runs in ${experimentId}`);
    return ((found.runs ?? []) as unknown[]).length;
  };

  it('without flowgate: MLflow reads such a body as {}', async () => {
    const found = ok(await direct(...searchOwn(false)), 'experiments/search') as { experiments: Array<{ name: string }> };
    expect(found.experiments.map((e) => e.name)).toEqual([`diff-${suffix}-own`]);
    // The same search padded: MLflow sees no field at all (its max_results is 0).
    const padded = await direct(...searchOwn(true));
    expect(padded.status).toBe(400);
    expect(padded.json.message).toContain("'max_results'");
    // The run is not created in the experiment the body names (on SQLite MLflow fails on experiment '';
    // a database that reads '' as 0 puts it in Default).
    const made = await direct(...createRun(O));
    expect(made.status === 200 ? made.json.run.info.experiment_id : `refused ${made.status}`).not.toBe(O);
  });

  it.each(WAYS)('through flowgate a body with one is refused before MLflow sees it (%s)', async (way) => {
    const before = [await runCount(O), await runCount('0')];
    for (const [method, path, options] of [createRun(O), searchOwn(true)]) expectRefused(await mallory[way](method, path, options), '4300 digits');
    expect([await runCount(O), await runCount('0')]).toEqual(before);
  });
});
