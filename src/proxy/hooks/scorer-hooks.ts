import { bodyLeavesOf, experimentRef, readField } from '../../authz/resolve.js';
import type { ResourceRef } from '../../authz/types.js';
import { badRequest, forbidden } from '../../errors.js';
import type { Principal } from '../../principals/types.js';
import { SCORER } from '../../resources/kinds.js';
import { experimentIdProblem, parseScorerId, scorerId } from '../../resources/scorer-identity.js';
import { relayAfter } from '../after/relay.js';
import { rewriteJsonAnswer } from '../after/rewrite-json.js';
import { hookFailed, obj, REWRITTEN_ANSWER_MAX_BYTES, type Hook, type HookContext } from './types.js';

/** MLflow's scorer list at its `/ajax-api/` twin, which every release serves under a static prefix. */
const SCORER_LIST = '/ajax-api/3.0/mlflow/scorers/list';

/** An id MLflow's JSON gives as a string or (an int32 field) a number, as text; undefined when it is neither. */
const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : undefined);

/** The scorer a row of MLflow's answer is (`experiment_id` and the name under `nameField`), when it names one. */
function scorerOf(row: Record<string, unknown>, nameField: string): ResourceRef | undefined {
  const experimentId = text(row.experiment_id);
  const name = row[nameField];
  if (experimentId === undefined || typeof name !== 'string') return undefined;
  const id = scorerId({ experimentId, name });
  return parseScorerId(id) === undefined ? undefined : { kind: SCORER, id };
}

/** Whether the caller may read every one of the refs (each decided once per answer). */
function reader(ctx: HookContext, principal: Principal) {
  const decided = new Map<string, Promise<boolean>>();
  return (refs: readonly ResourceRef[]): Promise<boolean> => {
    const key = refs.map((r) => `${r.kind}\u0000${r.id}`).join('\u0001');
    let verdict = decided.get(key);
    if (verdict === undefined) {
      verdict = Promise.resolve(ctx.evaluator.decideNamed(principal, 'read', refs)).then(
        (d) => d.allow,
        () => false,
      );
      decided.set(key, verdict);
    }
    return verdict;
  };
}

/**
 * The registrant of a new scorer (MLflow answers its first version) gets MANAGE on it; grants already
 * on its id (a scorer deleted outside flowgate, or given before anyone registered it) are pruned first.
 * A new version of an existing scorer (its registrant was decided on EDIT on it) gives nothing: EDIT is
 * not MANAGE.
 */
export const grantCreatorOfScorer: Hook = ({ principal, hook }, ctx) => ({
  onResponse: relayAfter(async (json) => {
    const answer = obj(json);
    if (answer.version !== 1 && answer.version !== '1') return;
    const ref = scorerOf(answer, 'name');
    if (ref !== undefined) await ctx.grantWriter.creator({ grantee: { type: 'user', id: principal.userId }, name: principal.username }, ref);
  }, hookFailed(ctx, hook)),
});

/**
 * A deleted scorer's grants go with it, once MLflow answered the delete with success: at once when the
 * whole scorer was deleted, and when one version was, if MLflow then has no version of it left (its get
 * answers none). MLflow drops them on a version's delete too; a scorer that keeps versions keeps its grants here.
 */
export const dropScorerGrants: Hook = ({ request, refs, principal, hook }, ctx) => {
  const ref = refs[0];
  if (ref === undefined || ref.kind !== SCORER) return {};
  // MLflow's `version` is a number in a JSON body and text in a query: any value means one version.
  const oneVersion = request.query.has('version') || bodyLeavesOf(request.body, 'version').some((v) => v !== undefined && v !== null);
  return {
    onResponse: relayAfter(async () => {
      if (oneVersion && (await ctx.lookups.scorerExists(ref.id))) return;
      await ctx.grantWriter.dropWithResource(principal.username, ref);
    }, hookFailed(ctx, hook)),
  };
};

/**
 * `scorers/list`. With an `experiment_id`, MLflow answers every scorer of that experiment to whoever may
 * read it: decided here before MLflow is asked, and only that experiment's rows relayed (should MLflow
 * have read another scope than the one decided on, nothing else gets through). Without one (every
 * experiment's, or `experiment_ids`), each row is kept when the caller may read its experiment and the
 * scorer, MLflow's `filter_list_scorers`.
 */
export const filterScorerList: Hook = async ({ principal, request, req, hook }, ctx) => {
  const [experimentId] = readField({ kind: 'experiment_id', field: 'experiment_id', from: 'auto' }, request);
  delete req.headers['accept-encoding'];
  if (experimentId !== undefined) {
    if (experimentIdProblem(experimentId) !== undefined) throw badRequest("Parameter 'experiment_id' must be an experiment id in plain decimal");
    const decision = await ctx.evaluator.decideNamed(principal, 'read', [experimentRef(experimentId)]);
    if (!decision.allow) throw forbidden(`Permission denied: ${principal.username} may not read on experiment '${experimentId}'`, decision.reason);
    return {
      onResponse: rewriteJsonAnswer(
        (json) => {
          const answer = obj(json);
          if (!Array.isArray(answer.scorers)) return Promise.resolve();
          const kept = answer.scorers.filter((row) => text(obj(row).experiment_id) === experimentId);
          // MLflow's protobuf JSON leaves an empty list out.
          if (kept.length > 0) answer.scorers = kept;
          else delete answer.scorers;
          return Promise.resolve();
        },
        REWRITTEN_ANSWER_MAX_BYTES,
        hookFailed(ctx, hook),
      ),
    };
  }
  const may = reader(ctx, principal);
  return {
    onResponse: rewriteJsonAnswer(
      async (json) => {
        const answer = obj(json);
        if (!Array.isArray(answer.scorers)) return;
        const keep = await Promise.all(
          answer.scorers.map(async (row) => {
            const scorer = scorerOf(obj(row), 'scorer_name');
            return scorer !== undefined && (await may([experimentRef(parseScorerId(scorer.id)!.experimentId), scorer]));
          }),
        );
        const kept = answer.scorers.filter((_, i) => keep[i]);
        // MLflow's protobuf JSON leaves an empty list out.
        if (kept.length > 0) answer.scorers = kept;
        else delete answer.scorers;
      },
      REWRITTEN_ANSWER_MAX_BYTES,
      hookFailed(ctx, hook),
    ),
  };
};

/** The scorers of an experiment by their ids (`scorer_id` → name), as MLflow lists them. */
async function scorerNamesIn(ctx: HookContext, experimentId: string): Promise<ReadonlyMap<string, string>> {
  const answer = await ctx.upstream.call('GET', SCORER_LIST, { experiment_id: experimentId });
  if (answer.status !== 200) throw new Error(`the scorers of experiment ${experimentId} could not be listed (${answer.status})`);
  const names = new Map<string, string>();
  const rows = obj(answer.json).scorers;
  for (const row of Array.isArray(rows) ? rows : []) {
    const { scorer_id: id, scorer_name: name } = obj(row);
    if (typeof id === 'string' && typeof name === 'string') names.set(id, name);
  }
  return names;
}

/**
 * `scorers/online-configs` names scorers by their ids. A config is shown when the caller may read its
 * experiment (MLflow's rule, which refuses the whole answer instead) and the scorer its id names in that
 * experiment's list (MLflow answers the pair); a config whose scorer cannot be told is withheld.
 */
export const filterOnlineConfigs: Hook = ({ principal, req, hook }, ctx) => {
  delete req.headers['accept-encoding'];
  const may = reader(ctx, principal);
  return {
    onResponse: rewriteJsonAnswer(
      async (json) => {
        const answer = obj(json);
        if (!Array.isArray(answer.configs)) return;
        const listed = new Map<string, Promise<ReadonlyMap<string, string>>>();
        const namesIn = (experimentId: string) => {
          let names = listed.get(experimentId);
          if (names === undefined) listed.set(experimentId, (names = scorerNamesIn(ctx, experimentId)));
          return names;
        };
        const keep = await Promise.all(
          answer.configs.map(async (row) => {
            const config = obj(row);
            const experimentId = text(config.experiment_id);
            const id = text(config.scorer_id);
            if (experimentId === undefined || id === undefined || experimentIdProblem(experimentId) !== undefined) return false;
            // An experiment the caller may not read is not listed on their behalf.
            if (!(await may([experimentRef(experimentId)]))) return false;
            const name = (await namesIn(experimentId)).get(id);
            if (name === undefined) return false;
            const scorer = scorerOf({ experiment_id: experimentId, name }, 'name');
            return scorer !== undefined && (await may([scorer]));
          }),
        );
        // Kept as `[]` when empty: this answer is MLflow's plain JSON (`json.dumps`), which lists an empty one.
        answer.configs = answer.configs.filter((_, i) => keep[i]);
      },
      REWRITTEN_ANSWER_MAX_BYTES,
      hookFailed(ctx, hook),
    ),
  };
};
