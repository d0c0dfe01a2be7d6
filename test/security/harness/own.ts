import { ok, type Caller } from './http.js';
import { newTraceHex, randomHex, traceInfo, V2, V3 } from './world.js';

/** The attacker's own objects, made through flowgate (she is their creator and holds MANAGE). */
export interface OwnObjects {
  /** Her experiment M (made once). */
  experiment(): Promise<string>;
  run(): Promise<string>;
  /** A trace started in M over the v3 API: no spans anywhere yet. */
  trace(): Promise<string>;
  loggedModel(): Promise<string>;
  /** A registered model of her own (by name). */
  model(): Promise<string>;
}

export function ownObjects(mallory: Caller): OwnObjects {
  let experiment: Promise<string> | undefined;
  const exp = () =>
    (experiment ??= mallory('POST', `${V2}/experiments/create`, { body: { name: `mallory-${randomHex(4)}` } }).then(
      (r) => ok(r, 'mallory creates M').experiment_id as string,
    ));
  return {
    experiment: exp,
    async run() {
      const experiment_id = await exp();
      return ok(await mallory('POST', `${V2}/runs/create`, { body: { experiment_id, start_time: Date.now() } }), 'mallory creates a run').run.info
        .run_id as string;
    },
    async trace() {
      const id = `tr-${newTraceHex()}`;
      ok(await mallory('POST', `${V3}/traces`, { body: traceInfo(id, await exp()) }), 'mallory starts a trace');
      return id;
    },
    async loggedModel() {
      const experiment_id = await exp();
      return ok(await mallory('POST', `${V2}/logged-models`, { body: { experiment_id, name: 'mine' } }), 'mallory creates a logged model').model.info
        .model_id as string;
    },
    async model() {
      const name = `mallory-model-${randomHex(4)}`;
      ok(await mallory('POST', `${V2}/registered-models/create`, { body: { name } }), 'mallory creates a model');
      return name;
    },
  };
}
