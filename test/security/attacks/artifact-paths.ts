import type { Attack, AttackContext } from '../harness/attack.js';
import { V2 } from '../harness/world.js';

/*
 * Class 11: artifact paths that leave the attacker's own tree or hide S's experiment id behind dot
 * segments, encoded slashes and backslashes. Sent byte for byte (fetch would resolve them first).
 * MLflow refuses `..` in every encoding; a `.` segment it resolves away on reads.
 */
const SERVED = '/api/2.0/mlflow-artifacts/artifacts';

const sRunFile = (ctx: AttackContext) => `${ctx.target.experimentId}/${ctx.target.runId}/artifacts/secret.txt`;
const sRunDir = (ctx: AttackContext) => `${ctx.target.experimentId}/${ctx.target.runId}/artifacts`;

const verbatim = (name: string, control: Attack['control'], path: (ctx: AttackContext, m: string, ownRun: () => Promise<string>) => string | Promise<string>, method = 'GET'): Attack => ({
  name,
  class: '11 artifact path tricks',
  control,
  async run(ctx) {
    const m = await ctx.own.experiment();
    const target = await path(ctx, m, () => ctx.own.run());
    await ctx.attack(method, target, { verbatim: true, ...(method === 'PUT' ? { raw: 'planted by mallory' } : {}) });
  },
});

/** A listing names S's file but carries no marker: the attack flags it itself. */
const listing = (name: string, control: Attack['control'], path: (ctx: AttackContext, m: string) => string): Attack => ({
  name,
  class: '11 artifact path tricks',
  control,
  async run(ctx) {
    const listed = await ctx.attack('GET', `${SERVED}?path=${path(ctx, await ctx.own.experiment())}`, { verbatim: true });
    if (listed.status === 200 && listed.text.includes('secret.txt')) ctx.flag(`listing ${path(ctx, '<M>')} shows S's run artifacts`);
  },
});

/** `/get-artifact` and `artifacts/list` on her own run, with a path meant to climb into S's run. */
const ownRunPath = (name: string, route: 'get-artifact' | 'list', path: (ctx: AttackContext) => string): Attack =>
  verbatim(name, 'mlflow-refuses', async (ctx, _m, ownRun) => {
    const run = await ownRun();
    return route === 'get-artifact' ? `/get-artifact?run_id=${run}&path=${path(ctx)}` : `${V2}/artifacts/list?run_id=${run}&path=${path(ctx)}`;
  });

const climb = (ctx: AttackContext) => `../../${ctx.target.runId}/artifacts`;

export const artifactPathAttacks: Attack[] = [
  verbatim('mlflow-artifacts GET <M>/../<S>/<run>/artifacts/secret.txt', 'mlflow-refuses', (ctx, m) => `${SERVED}/${m}/../${sRunFile(ctx)}`),
  verbatim('mlflow-artifacts GET <M>/%2e%2e/<S>/... (encoded dots)', 'mlflow-refuses', (ctx, m) => `${SERVED}/${m}/%2e%2e/${sRunFile(ctx)}`),
  verbatim('mlflow-artifacts GET <M>%2f..%2f<S>/... (encoded slashes)', 'mlflow-refuses', (ctx, m) => `${SERVED}/${m}%2f..%2f${sRunFile(ctx)}`),
  verbatim('mlflow-artifacts GET <M>//../<S>/... (double slash)', 'mlflow-refuses', (ctx, m) => `${SERVED}/${m}//../${sRunFile(ctx)}`),
  verbatim('mlflow-artifacts GET <M>/..%5c<S>/... (encoded backslash)', 'mlflow-refuses', (ctx, m) => `${SERVED}/${m}/..%5c${sRunFile(ctx)}`),
  verbatim('mlflow-artifacts GET <M>/<run>/artifacts/../../../<S>/...', 'mlflow-refuses', async (ctx, m, ownRun) => `${SERVED}/${m}/${await ownRun()}/artifacts/../../../${sRunFile(ctx)}`),
  verbatim('mlflow-artifacts GET ./<S>/<run>/artifacts/secret.txt (leading dot segment)', 'direct', (ctx) => `${SERVED}/./${sRunFile(ctx)}`),
  verbatim('mlflow-artifacts GET %2e/<S>/... (encoded leading dot segment)', 'direct', (ctx) => `${SERVED}/%2e/${sRunFile(ctx)}`),
  verbatim('mlflow-artifacts GET .%2f<S>/... (dot and encoded slash)', 'direct', (ctx) => `${SERVED}/.%2f${sRunFile(ctx)}`),
  verbatim('mlflow-artifacts GET <S>/./<run>/... (inner dot segment)', 'direct', (ctx) => `${SERVED}/${ctx.target.experimentId}/./${ctx.target.runId}/artifacts/secret.txt`),
  // MLflow refuses dot segments on upload (its file store would resolve the name to another).
  verbatim('mlflow-artifacts PUT ./<S>/<run>/artifacts/planted.txt (leading dot segment)', 'mlflow-refuses', (ctx) => `${SERVED}/./${sRunDir(ctx)}/planted.txt`, 'PUT'),
  listing('mlflow-artifacts list ?path=./<S>/<run>/artifacts', 'direct', (ctx) => `./${sRunDir(ctx)}`),
  listing('mlflow-artifacts list ?path=%2e/<S>/<run>/artifacts', 'direct', (ctx) => `%2e/${sRunDir(ctx)}`),
  listing('mlflow-artifacts list ?path=<M>/%2e%2e/<S>/<run>/artifacts', 'mlflow-refuses', (ctx, m) => `${m}/%2e%2e/${sRunDir(ctx)}`),

  ownRunPath('get-artifact own run_id, path=../../<S run>/artifacts/secret.txt', 'get-artifact', (ctx) => `${climb(ctx)}/secret.txt`),
  ownRunPath('get-artifact own run_id, path=%2e%2e%2f... (encoded)', 'get-artifact', (ctx) => `%2e%2e%2f%2e%2e%2f${ctx.target.runId}%2fartifacts%2fsecret.txt`),
  ownRunPath('get-artifact own run_id, path with backslashes', 'get-artifact', (ctx) => `..%5c..%5c${ctx.target.runId}%5cartifacts%5csecret.txt`),
  ownRunPath('get-artifact own run_id, path=//<S>/<run>/artifacts/secret.txt', 'get-artifact', (ctx) => `//${sRunFile(ctx)}`),
  ownRunPath('artifacts/list own run_id, path=../../<S run>/artifacts', 'list', climb),
  ownRunPath('artifacts/list own run_id, path=%2e%2e/%2e%2e/<S run>/artifacts', 'list', (ctx) => `%2e%2e/%2e%2e/${ctx.target.runId}/artifacts`),
];
