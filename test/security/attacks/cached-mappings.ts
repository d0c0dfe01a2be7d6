import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { pythonEnv } from '../../helpers/mlflow-server.js';
import type { Attack, AttackContext } from '../harness/attack.js';
import { ok, type Reply } from '../harness/http.js';
import { newTraceHex, randomHex, traceInfo, V2, V3 } from '../harness/world.js';

/*
 * Class 9: what flowgate remembers about MLflow's objects (names, prompt flags, a trace's
 * experiment, an experiment id) goes stale when MLflow changes them. Each case warms the memory
 * as mallory, changes the object as the administrator, and tries again.
 */
const run = promisify(execFile);

async function grantExperiment(ctx: AttackContext, id: string, permission: string): Promise<void> {
  ok(await ctx.admin('POST', `${V2}/permissions/users/mallory/experiments/${id}`, { body: { permission } }), 'grant mallory');
}

async function adminExperiment(ctx: AttackContext, name: string, secret?: string): Promise<string> {
  const tags = secret ? [{ key: 'secret', value: `${ctx.target.prefix}${secret}` }] : [];
  return ok(await ctx.admin('POST', `${V2}/experiments/create`, { body: { name, tags } }), 'admin creates experiment').experiment_id as string;
}

const renamedExperiment = (how: string, rename: (ctx: AttackContext, id: string, newName: string) => Promise<Reply>): Attack => ({
  name: `experiment renamed (${how}) and its name given to another: get-by-name follows the new owner of the name`,
  class: '9 cached mappings',
  control: 'none',
  async run(ctx) {
    const name = `foo-${randomHex(4)}`;
    const readable = await adminExperiment(ctx, name);
    await grantExperiment(ctx, readable, 'READ');
    ok(await ctx.mallory('GET', `${V2}/experiments/get-by-name`, { query: { experiment_name: name } }), 'mallory reads foo');
    ok(await rename(ctx, readable, `${name}-old`), 'admin renames');
    await adminExperiment(ctx, name, 'renamed-foo');
    const again = await ctx.attack('GET', `${V2}/experiments/get-by-name`, { query: { experiment_name: name } });
    if (again.status === 200) ctx.flag(`mallory read the new '${name}' by name`);
  },
});

const modelBecomesPrompt = (how: string, body: (name: string) => unknown): Attack => ({
  name: `registered model turned into a prompt (${how}): prompt grants apply at once`,
  class: '9 cached mappings',
  control: 'none',
  async run(ctx) {
    const name = `turncoat-${randomHex(4)}`;
    // No marker on it: mallory may read it while it is a model; only her read afterwards counts.
    ok(await ctx.admin('POST', `${V2}/registered-models/create`, { body: { name } }), 'admin creates');
    ok(await ctx.admin('POST', `${V2}/permissions/users/mallory/registered-models/${name}`, { body: { permission: 'READ' } }), 'grant model READ');
    ok(await ctx.admin('POST', `${V2}/permissions/users/mallory/prompts/${name}`, { body: { permission: 'NO_PERMISSIONS' } }), 'deny prompt');
    ok(await ctx.mallory('GET', `${V2}/registered-models/get`, { query: { name } }), 'mallory reads it as a model');
    ok(await ctx.admin('POST', `${V2}/registered-models/set-tag`, { body: body(name) }), 'admin flags it a prompt');
    const again = await ctx.attack('GET', `${V2}/registered-models/get`, { query: { name } });
    if (again.status === 200) ctx.flag(`mallory still reads '${name}' with a model grant after it became a prompt`);
  },
});

const movedTrace = (how: string, move: (ctx: AttackContext, traceId: string, to: string) => Promise<Reply>): Attack => ({
  name: `trace moved by the admin into a hidden experiment (${how}): judged on its new experiment`,
  class: '9 cached mappings',
  control: 'none',
  async run(ctx) {
    const readable = await adminExperiment(ctx, `readable-${randomHex(4)}`);
    await grantExperiment(ctx, readable, 'READ');
    const id = `tr-${newTraceHex()}`;
    ok(await ctx.admin('POST', `${V3}/traces`, { body: traceInfo(id, readable) }), 'admin starts trace');
    ok(await ctx.mallory('GET', `${V3}/traces/${id}`), 'mallory reads the trace');
    const hidden = await adminExperiment(ctx, `hidden-${randomHex(4)}`);
    ok(await move(ctx, id, hidden), 'admin moves the trace');
    const moved = await ctx.mlflow('GET', `${V3}/traces/${id}`);
    if (moved.json?.trace?.trace_info?.trace_location?.mlflow_experiment?.experiment_id !== hidden) throw new Error('MLflow did not move the trace');
    for (const path of [`${V3}/traces/${id}`, `${V2}/traces/${id}/info`]) {
      const again = await ctx.attack('GET', path);
      if (again.status === 200) ctx.flag(`mallory reads the moved trace at ${path}`);
    }
  },
});

/** Class 9a: `mlflow gc` frees an experiment id and SQLite hands it out again. */
const reusedId: Attack = {
  name: 'experiment id reused after mlflow gc: the old grant does not open the new experiment',
  class: '9a id reuse after gc',
  control: 'none',
  async run(ctx) {
    const old = await adminExperiment(ctx, `doomed-${randomHex(4)}`);
    await grantExperiment(ctx, old, 'READ');
    ok(await ctx.mallory('GET', `${V2}/experiments/get`, { query: { experiment_id: old } }), 'mallory reads E');
    ok(await ctx.admin('POST', `${V2}/experiments/delete`, { body: JSON.stringify({ experiment_id: old }) }), 'admin deletes E');
    const venv = ctx.stack.mlflow.venv;
    await run(join(venv, 'bin/mlflow'), ['gc', '--backend-store-uri', ctx.stack.backendStoreUri, '--experiment-ids', old], {
      env: pythonEnv(venv, { MLFLOW_TRACKING_URI: ctx.stack.mlflow.url }),
      timeout: 60_000,
    });
    const reborn = await adminExperiment(ctx, `reborn-${randomHex(4)}`, 'reborn');
    if (reborn !== old) throw new Error(`MLflow did not reuse id ${old} (got ${reborn}); the case proves nothing`);
    const read = await ctx.attack('GET', `${V2}/experiments/get`, { query: { experiment_id: reborn } });
    if (read.status === 200) ctx.flag(`mallory reads the new experiment ${reborn} through the grant on the old one`);
  },
};

export const cachedMappingAttacks: Attack[] = [
  renamedExperiment('update', (ctx, id, newName) => ctx.admin('POST', `${V2}/experiments/update`, { body: { experiment_id: id, new_name: newName } })),
  renamedExperiment('update, double-encoded body', (ctx, id, newName) => ctx.admin('POST', `${V2}/experiments/update`, { body: JSON.stringify({ experiment_id: id, new_name: newName }) })),
  renamedExperiment('update on the ajax-api twin', (ctx, id, newName) => ctx.admin('POST', '/ajax-api/2.0/mlflow/experiments/update', { body: { experiment_id: id, new_name: newName } })),
  modelBecomesPrompt('set-tag', (name) => ({ name, key: 'mlflow.prompt.is_prompt', value: 'true' })),
  modelBecomesPrompt('set-tag, double-encoded body', (name) => JSON.stringify({ name, key: 'mlflow.prompt.is_prompt', value: 'true' })),
  movedTrace('v3 start trace', (ctx, id, to) => ctx.admin('POST', `${V3}/traces`, { body: traceInfo(id, to, { secret: `${ctx.target.prefix}moved-trace` }) })),
  movedTrace('v3 start trace, double-encoded body', (ctx, id, to) =>
    ctx.admin('POST', `${V3}/traces`, { body: JSON.stringify(traceInfo(id, to, { secret: `${ctx.target.prefix}moved-trace` })) }),
  ),
  reusedId,
];
