import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { afterHookAttacks } from './attacks/after-hooks.js';
import { artifactPathAttacks } from './attacks/artifact-paths.js';
import { artifactRootAttacks } from './attacks/artifact-roots.js';
import { cachedMappingAttacks } from './attacks/cached-mappings.js';
import { datasetAttacks } from './attacks/datasets.js';
import { grantLifecycleAttacks } from './attacks/grant-lifecycle.js';
import { kindChangeAttacks } from './attacks/kind-changes.js';
import { loggedModelAttacks } from './attacks/logged-models.js';
import { modelSourceAttacks } from './attacks/model-sources.js';
import { otlpExportAttacks } from './attacks/otlp-exports.js';
import { ownAuthorityAttacks } from './attacks/own-authority.js';
import { patternNameAttacks } from './attacks/pattern-names.js';
import { runIdSpellingAttacks } from './attacks/run-id-spellings.js';
import { runLinkAttacks } from './attacks/run-links.js';
import { traceAttacks } from './attacks/traces.js';
import type { Attack } from './harness/attack.js';
import { describeExchange, ok, type Exchange, type Reply } from './harness/http.js';
import { attackRunner, type Outcome } from './harness/runner.js';
import { snapshotDiff, snapshotWorld, type Snapshot } from './harness/snapshot.js';
import { startStack, type Stack } from './harness/stack.js';
import { seedWorld, V2, type World } from './harness/world.js';

/**
 * mallory, who holds no grant on the secret experiment S, attacks it through flowgate in front of
 * the real MLflow. A bypass is a response carrying one of S's markers, any change to S's data or
 * grants, or a finding an attack flags itself. Each attack that can be replayed without flowgate is
 * replayed first on a copy of S and must land there, so an attack that fails for an unrelated
 * reason cannot pass as held.
 */
const ATTACKS: readonly Attack[] = [
  ...loggedModelAttacks,
  ...traceAttacks,
  ...otlpExportAttacks,
  ...runLinkAttacks,
  ...modelSourceAttacks,
  ...artifactRootAttacks,
  ...artifactPathAttacks,
  ...runIdSpellingAttacks,
  ...datasetAttacks,
  ...grantLifecycleAttacks,
  ...cachedMappingAttacks,
  ...patternNameAttacks,
  ...kindChangeAttacks,
  ...ownAuthorityAttacks,
  ...afterHookAttacks,
];

let stack: Stack;
let S: World;
let initialS: Snapshot;
let runAttack: (attack: Attack) => Promise<Outcome>;
const outcomes: Outcome[] = [];

const snapshotS = () => snapshotWorld(S, stack.direct(), stack.through('admin'));
async function assertSUnchanged(): Promise<void> {
  expect(snapshotDiff(initialS, await snapshotS())).toEqual([]);
}
function expectNoLeak(reply: Reply): void {
  expect(reply.text).not.toContain(S.prefix);
}

beforeAll(async () => {
  stack = await startStack(['mallory', 'alice']);
  S = await seedWorld(stack.through('admin'), 'S');
  ok(await stack.through('admin')('POST', `${V2}/permissions/users/mallory/experiments/${S.sharedExperimentId}`, { body: { permission: 'READ' } }), 'grant shared READ');
  initialS = await snapshotS();
  runAttack = attackRunner(stack, S);
}, 300_000);

afterAll(async () => {
  await stack?.stop();
});

describe('positive controls', () => {
  it('the administrator reads S through flowgate, and the leak check sees it', async () => {
    const admin = stack.through('admin');
    const read = await admin('GET', `${V2}/runs/get`, { query: { run_id: S.runId } });
    expect(read.text).toContain(S.prefix);
  });

  it('mallory is refused S itself', async () => {
    const mallory = stack.through('mallory');
    for (const [path, query] of [
      [`${V2}/experiments/get`, { experiment_id: S.experimentId }],
      [`${V2}/runs/get`, { run_id: S.runId }],
      [`/api/3.0/mlflow/traces/${S.artifactTraceId}`, {}],
      ['/ajax-api/2.0/mlflow/get-trace-artifact', { request_id: S.artifactTraceId }],
    ] as const) {
      const reply = await mallory('GET', path, { query });
      expect(reply.status).toBe(403);
      expectNoLeak(reply);
    }
  });
});

describe('attacks by mallory', () => {
  it.each(ATTACKS.map((a) => [a.name, a] as const))('%s', async (_name, attack) => {
    const outcome = await runAttack(attack);
    outcomes.push(outcome);
    if (attack.control === 'direct')
      expect(outcome.controlLanded, `the attack does not land even without flowgate: it proves nothing\n${steps(outcome.controlTranscript)}`).toBe(true);
    if (attack.control === 'mlflow-refuses')
      expect(outcome.controlFindings, 'MLflow now accepts this request: turn it into a direct-control attack').toEqual([]);
    expect(outcome.findings, report(outcome)).toEqual([]);
  });

  it('S is unchanged after every attack', assertSUnchanged);
});

const steps = (transcript: readonly Exchange[]) => transcript.map((e) => `  ${describeExchange(e)}`).join('\n');
function report(o: Outcome): string {
  return `${o.attack.name} [class ${o.attack.class}]\n${steps(o.transcript)}`;
}

describe('summary', () => {
  it('no bypasses', () => {
    const bypassed = outcomes.filter((o) => o.findings.length > 0);
    const lines = [`${outcomes.length} attacks, ${bypassed.length} bypasses`, ...bypassed.map((o) => `  BYPASS ${o.attack.name}: ${o.findings[0]}`)];
    console.log(lines.join('\n'));
    expect(outcomes.length).toBe(ATTACKS.length);
    expect(bypassed.map((o) => o.attack.name)).toEqual([]);
  });
});
