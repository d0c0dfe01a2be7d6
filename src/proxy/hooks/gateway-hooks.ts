import type { ServerResponse } from 'node:http';
import { experimentRef, isMissingRef, readField } from '../../authz/resolve.js';
import type { RouteEntry } from '../../authz/types.js';
import { forbidden } from '../../errors.js';
import type { Principal } from '../../principals/types.js';
import { GATEWAY_ENDPOINT, type GatewayKind, isGatewayKind, KINDS } from '../../resources/kinds.js';
import type { ResourceNeed } from '../../resources/permissions.js';
import type { MappingChange } from '../../store/mapping-changes.js';
import { filterGatewayList, gatewayJudge, gatewayListOf, withholdInAnswer, type GatewayJudge } from '../after/gateway-answers.js';
import { relayAfter } from '../after/relay.js';
import { keepingWorkspace } from '../../workspaces/request-workspace.js';
import { rewriteJsonAnswer } from '../after/rewrite-json.js';
import type { ResponseHandler } from '../forward.js';
import { hookFailed, obj, REWRITTEN_ANSWER_MAX_BYTES, type Hook, type HookCall, type HookContext } from './types.js';

function kindOf(entry: RouteEntry): GatewayKind {
  if (!isGatewayKind(entry.resource)) throw new Error(`${entry.method} ${entry.pattern} is not an AI-gateway row`);
  return entry.resource;
}

/** The caller's decisions on the gateway objects an answer names (`need` on each). */
function judge(ctx: HookContext, principal: Principal, need: ResourceNeed): GatewayJudge {
  return gatewayJudge(
    {
      decide: (n, kind, name) => {
        const decision = ctx.evaluator.decideNamed(principal, n, [{ kind, id: name }]);
        return decision instanceof Promise ? decision.then((d) => d.allow) : decision.allow;
      },
      nameOf: async (kind, id) => (await ctx.lookups.gatewayObject(kind, id)).name,
    },
    need,
  );
}

/** The name MLflow's answer gives the object (where its get, create and update calls answer it). */
function answeredName(kind: GatewayKind, json: unknown): string | undefined {
  const [outer, field] = KINDS[kind].generatedId.name;
  const name = obj(obj(json)[outer])[field];
  return typeof name === 'string' && name !== '' ? name : undefined;
}

/**
 * Runs `act` once MLflow answered with success and, for a caller who is not an administrator (when
 * `redact`), withholds what the answer embeds that they may not read. An administrator's answer, and
 * any answer but a success, is relayed as it is.
 */
function afterAnswer(call: HookCall, ctx: HookContext, act: (json: unknown) => Promise<void>, redact: boolean): ResponseHandler {
  const failed = hookFailed(ctx, call.hook);
  if (call.principal.isAdmin || !redact) return relayAfter(act, failed);
  // The answer is rewritten, so it must come back as plain JSON.
  delete call.req.headers['accept-encoding'];
  const may = judge(ctx, call.principal, 'read');
  return rewriteJsonAnswer(
    async (json) => {
      await act(json).catch(failed);
      await withholdInAnswer(json, may);
    },
    REWRITTEN_ANSWER_MAX_BYTES,
    failed,
  );
}

/** The tag MLflow puts on the experiment it creates for an endpoint's usage traces: the endpoint's id. */
const USAGE_EXPERIMENT_SOURCE = 'mlflow.experiment.sourceId';

/**
 * The experiment MLflow created for a new endpoint's usage traces (`gateway/<name>`, tagged with the
 * endpoint's fresh id, so one that existed before is never taken for it): its creator manages it too,
 * or they could not see their own endpoint's usage. Asked at the `/ajax-api/` twin, which every
 * release serves under a static prefix.
 */
/**
 * An endpoint's answer naming a usage experiment: MLflow may just have made it (a create, or an update
 * turning usage tracking on), and its SQLite store may hand out an id `mlflow gc` freed. The names cached
 * for experiment ids go, or pattern grants would judge the new experiment by the old one's name.
 */
function forgetNamesIfUsageExperiment(ctx: HookContext, json: unknown): void {
  const experimentId = obj(obj(json).endpoint).experiment_id;
  if (typeof experimentId === 'string' && experimentId !== '') ctx.mappings.forget({ cache: 'experiment_names', key: '' });
}

async function usageExperimentCreated(ctx: HookContext, json: unknown): Promise<string | undefined> {
  const endpoint = obj(obj(json).endpoint);
  const experimentId = endpoint.experiment_id;
  const endpointId = endpoint.endpoint_id;
  if (typeof experimentId !== 'string' || experimentId === '' || typeof endpointId !== 'string' || endpointId === '') return undefined;
  const answer = await ctx.upstream.call('GET', '/ajax-api/2.0/mlflow/experiments/get', { experiment_id: experimentId });
  if (answer.status !== 200) throw new Error(`the usage experiment of endpoint ${endpointId} could not be read (${answer.status})`);
  const tags = obj(obj(answer.json).experiment).tags;
  const madeForIt = Array.isArray(tags) && tags.some((t) => obj(t).key === USAGE_EXPERIMENT_SOURCE && obj(t).value === endpointId);
  return madeForIt ? experimentId : undefined;
}

/**
 * The creator of a gateway secret, model definition or endpoint gets MANAGE on the name MLflow answers
 * with; grants already on that name (an object removed outside flowgate, or given before anyone
 * created it) are pruned first. An endpoint's creator also manages the usage experiment MLflow made
 * for it. An endpoint's answer embeds model definitions, withheld as in a get.
 */
export const grantCreatorOfGateway: Hook = (call, ctx) => {
  const kind = kindOf(call.entry);
  const { principal } = call;
  const creator = { grantee: { type: 'user' as const, id: principal.userId }, name: principal.username };
  const act = async (json: unknown) => {
    ctx.lookups.invalidateGateway();
    const name = answeredName(kind, json);
    if (name !== undefined) await ctx.grantWriter.creator(creator, { kind, id: name });
    if (kind !== GATEWAY_ENDPOINT) return;
    forgetNamesIfUsageExperiment(ctx, json);
    const experimentId = await usageExperimentCreated(ctx, json);
    if (experimentId !== undefined) await ctx.grantWriter.creator(creator, experimentRef(experimentId));
  };
  return { onResponse: afterAnswer(call, ctx, act, kind === GATEWAY_ENDPOINT) };
};

/** The id's cached name and facts, and every cached endpoint-name spelling ('' when the request names no id: the spellings alone). */
const gatewayChange = (id: string | undefined): MappingChange => ({ cache: 'gateway', key: id ?? '' });

/**
 * A gateway object's grants follow it: a delete drops them, an update whose answer carries another
 * name moves them there (the name decided on was asked of MLflow for the decision). The id's cached
 * name and endpoint facts (and the endpoint-name spellings) are forgotten here before forwarding and
 * again once MLflow answered, and in every flowgate on the store once the answer is sent: after the
 * grants moved, so another flowgate that asks the new name afresh finds them there. Any answer
 * counts, as for the other mappings: MLflow may have written before it failed.
 */
export const followGateway: Hook = (call, ctx) => {
  const { entry, request, refs, principal } = call;
  const kind = kindOf(entry);
  const [id] = readField(entry.id, request);
  const change = gatewayChange(id);
  ctx.mappings.forgetHere([change]);
  const ref = refs[0];
  const name = ref !== undefined && !isMissingRef(ref) ? ref.id : undefined;
  const deletes = entry.method === 'DELETE';
  let response: ServerResponse | undefined;
  let forgotten = false;
  // Bound now: the answer's 'close' comes outside the request's workspace.
  const forget = keepingWorkspace(() => {
    if (forgotten) return;
    forgotten = true;
    ctx.mappings.forget(change);
  });
  const act = async (json: unknown) => {
    try {
      ctx.mappings.forgetHere([change]);
      if (kind === GATEWAY_ENDPOINT && !deletes) forgetNamesIfUsageExperiment(ctx, json);
      if (name === undefined) return;
      const renamed = deletes ? undefined : answeredName(kind, json);
      if (!deletes && (renamed === undefined || renamed === name)) return;
      await ctx.grantWriter.followGateway(principal.username, kind, name, renamed);
    } finally {
      // A client that hung up closed its answer before this hook began: no 'close' is coming.
      if (response?.destroyed) forget();
    }
  };
  const answered = afterAnswer(call, ctx, act, !deletes);
  return {
    onResponse: (upstream, res) => {
      response = res;
      // The hook's work (act) is done before the answer is sent; a client gone away closes it sooner.
      res.once('close', forget);
      answered(upstream, res);
    },
  };
};

/**
 * A get (or attach) answer: what it embeds that the caller may not read is withheld. A get answers the
 * object as it is now: one answered under another name than the one decided on (renamed since its name
 * was cached) is refused, and its id forgotten (in every flowgate on the store), so the client's retry
 * is decided afresh.
 */
export const redactGatewayAnswer: Hook = (call, ctx) => {
  const { entry, refs, principal, request, req, hook } = call;
  const kind = kindOf(entry);
  const ref = refs[0];
  const decided = ref !== undefined && !isMissingRef(ref) ? ref.id : undefined;
  const answersTheObject = entry.method === 'GET';
  delete req.headers['accept-encoding'];
  const may = judge(ctx, principal, 'read');
  return {
    onResponse: rewriteJsonAnswer(
      async (json) => {
        if (answersTheObject && answeredName(kind, json) !== decided) {
          const [id] = readField(entry.id, request);
          // Renamed elsewhere (MLflow's own clients, or another flowgate whose note is on its way): every flowgate forgets it.
          ctx.mappings.forget(gatewayChange(id));
          throw forbidden(`Permission denied: ${principal.username} may not read what the request names now; try again`, 'answer-changed');
        }
        await withholdInAnswer(json, may);
      },
      REWRITTEN_ANSWER_MAX_BYTES,
      hookFailed(ctx, hook),
    ),
  };
};

/** A gateway list keeps the rows the caller may read (the OpenAI-style model list: may use), withholding what they embed. */
export const filterGatewayListAnswer: Hook = ({ entry, principal, req, hook }, ctx) => {
  const list = gatewayListOf(entry.pattern);
  if (list === undefined) throw new Error(`${entry.method} ${entry.pattern} is not an AI-gateway list`);
  delete req.headers['accept-encoding'];
  const mayList = judge(ctx, principal, list.need);
  const mayRead = list.need === 'read' ? mayList : judge(ctx, principal, 'read');
  return {
    onResponse: rewriteJsonAnswer((json) => filterGatewayList(json, list, mayList, mayRead), REWRITTEN_ANSWER_MAX_BYTES, hookFailed(ctx, hook)),
  };
};

/** MLflow strips `using_default_passphrase` (a server security-posture signal) from the gateway's secrets config for non-admins. */
export const redactSecretsConfig: Hook = ({ req, hook }, ctx) => {
  delete req.headers['accept-encoding'];
  return {
    onResponse: rewriteJsonAnswer(
      async (json) => {
        if (typeof json === 'object' && json !== null) delete (json as Record<string, unknown>).using_default_passphrase;
      },
      REWRITTEN_ANSWER_MAX_BYTES,
      hookFailed(ctx, hook),
    ),
  };
};
