import { LazyLru } from '../lazy-lru.js';
import { qualify } from '../workspaces/names.js';
import { currentWorkspace } from '../workspaces/request-workspace.js';
import { FlowgateError, badRequest } from '../errors.js';
import { EXPERIMENT, GATEWAY_ENDPOINT, GATEWAY_KINDS, GATEWAY_SECRET, type GatewayKind, KINDS, lookupCall, MCP_SERVER, type ResourceKind, SCORER, SKILL } from '../resources/kinds.js';
import { UnreadableAnswer, type UpstreamAnswer, type UpstreamJson } from '../upstream/json-client.js';
import { compareVersions } from './catalog-versions.js';
import { createTraceInfoForms, otherForm, type TraceInfoForm } from './trace-info-forms.js';

/** The facts about MLflow resources that authorization needs and requests do not carry. */
export interface MlflowLookups {
  experimentOfRun(runId: string): Promise<string>;
  /** The run's experiment if it is already known (cached): lets a request be decided without waiting. */
  knownExperimentOfRun?(runId: string): string | undefined;
  experimentOfLoggedModel(modelId: string): Promise<string>;
  experimentOfTrace(traceId: string): Promise<string>;
  experimentIdByName(name: string): Promise<string>;
  /** True when the registered model is a prompt (tag `mlflow.prompt.is_prompt` = "true"). */
  isPrompt(modelName: string): Promise<boolean>;
  /** The experiments an evaluation dataset is associated with (possibly none). */
  experimentsOfDataset(datasetId: string): Promise<readonly string[]>;
  /** The experiment a GenAI issue, label schema or review queue belongs to. */
  experimentOfOwned(kind: OwnedKind, id: string): Promise<string>;
  /**
   * The object a generated id (`s-…`, `d-…`, `e-…`) names: RESOURCE_DOES_NOT_EXIST when MLflow has none.
   * (The AI gateway's look-ups are optional here, so fakes for the other kinds need not have them.)
   */
  gatewayObject?(kind: GatewayKind, id: string, fresh?: boolean): Promise<GatewayObject>;
  /**
   * The endpoint's name as MLflow stores it, for a name a client sent (a database whose collation
   * ignores case or trailing blanks finds another spelling): RESOURCE_DOES_NOT_EXIST when none.
   */
  gatewayEndpointName?(name: string): Promise<string>;
  /** Whether MLflow has the Skill (its id: `<name>` or `@<organization>/<name>`), asked now, never cached. */
  skillExists?(id: string): Promise<boolean>;
  /** Whether MLflow has the MCP server (`<namespace>/<slug>`), asked now, never cached. */
  mcpServerExists?(name: string): Promise<boolean>;
  /** Whether MLflow has the scorer `<experiment_id>/<name>` (asked now, never cached: a decision to change it rests on it). */
  scorerExists?(id: string): Promise<boolean>;
  /**
   * One version of a registered scorer as MLflow hands it to a job (its judges' gateway endpoints named as
   * they are named now): the version given, or `latest`, the highest MLflow has (what a job given the name
   * alone loads). Asked now, never cached, as a decision to spend an endpoint is. RESOURCE_DOES_NOT_EXIST
   * when MLflow has no such version (or, for `latest`, no such scorer).
   */
  registeredScorer?(experimentId: string, name: string, version: number | 'latest'): Promise<StoredScorer>;
}

/** A registered scorer's version as MLflow stores it. */
export interface StoredScorer {
  /** The name MLflow found it under (a database collation may match another spelling of the one asked). */
  readonly name: string;
  readonly serializedScorer: string;
}

/** What flowgate needs to know about an AI-gateway object MLflow names by a generated id. */
export interface GatewayObject {
  /** Its name, which its grants are keyed by. */
  readonly name: string;
  /** An endpoint's: the experiment its usage traces go to, if it has one. */
  readonly experimentId?: string;
}


export interface ReviewQueueByName {
  readonly users: readonly string[];
  /** MLflow's status and bytes for the get-by-name, and the seconds the look-up took (answer read). */
  readonly answer: { readonly status: number; readonly raw: Buffer | undefined; readonly seconds: number };
}

/** Experiment-scoped GenAI objects reached by their own id. */
export type OwnedKind = 'issue' | 'label_schema' | 'review_queue' | 'prompt_optimization_job';

export interface CachedMlflowLookups extends MlflowLookups {
  /** `fresh`: asked of MLflow now (a decision to change or spend it), the cache refilled. */
  gatewayObject(kind: GatewayKind, id: string, fresh?: boolean): Promise<GatewayObject>;
  gatewayEndpointName(name: string): Promise<string>;
  skillExists(id: string): Promise<boolean>;
  scorerExists(id: string): Promise<boolean>;
  registeredScorer(experimentId: string, name: string, version: number | 'latest'): Promise<StoredScorer>;
  mcpServerExists(name: string): Promise<boolean>;
  /** After an AI-gateway object is renamed, updated or deleted (`id`), or one is created (no id): names and ids it had. */
  invalidateGateway(id?: string): void;
  /**
   * The experiment's name (experiment pattern grants match it). An id MLflow has no experiment for is
   * remembered as such (RESOURCE_DOES_NOT_EXIST without asking again) until names are forgotten or
   * expire; `fresh` asks MLflow again about an id remembered as missing (the gate's decisions: an
   * experiment created since must not be decided without the patterns its name matches).
   */
  experimentNameById(experimentId: string, fresh?: boolean): Promise<string>;
  /** The experiment's name if it is already known (cached): lets a request be decided without waiting. */
  knownExperimentName(experimentId: string): string | undefined;
  /** The users a review queue is assigned to, as MLflow stores them (lower-cased). */
  reviewQueueUsers(queueId: string): Promise<readonly string[]>;
  /**
   * A queue named in an experiment (uncached: MLflow's UI opens queues by id): its users, and MLflow's
   * answer to exactly this get-by-name, so the caller's request can be answered without asking again.
   */
  reviewQueueByName(experimentId: string, name: string): Promise<ReviewQueueByName>;
  /** After a model is renamed, deleted or re-tagged. */
  invalidateModel(name: string): void;
  /** After an experiment is renamed, deleted or restored. */
  invalidateExperimentName(name: string): void;
  /** After an experiment is renamed, deleted or restored when its old name is not known: every name. */
  invalidateExperimentNames(): void;
  /** After a trace is written by a request that names it (start, OTLP export). */
  invalidateTrace(traceId: string): void;
  /** When the changes another flowgate made can no longer be told apart: everything that can change. */
  invalidateMutable(): void;
  /** After experiments are added to or removed from a dataset, or it is deleted. */
  invalidateDataset(datasetId: string): void;
  /** After a review queue is updated (its users) or deleted. */
  invalidateReviewQueue(queueId: string): void;
}

export type LookupCacheName =
  | 'run_experiment'
  | 'logged_model_experiment'
  | 'trace_experiment'
  | 'experiment_name'
  | 'experiment_name_of_id'
  | 'model_is_prompt'
  | 'dataset_experiments'
  | 'issue_experiment'
  | 'label_schema_experiment'
  | 'prompt_optimization_job_experiment'
  | 'review_queue'
  | 'gateway_object'
  | 'gateway_endpoint_name';

export interface MlflowLookupsOptions {
  /** The keep-alive JSON client to MLflow (its owner closes it). */
  readonly client: UpstreamJson;
  /** Entries per look-up cache. */
  readonly cacheSize: number;
  /** Lifetime of the mutable mappings (experiment name → id, model → prompt flag); 0 disables caching them. */
  readonly ttlMs: number;
  readonly onCache?: (cache: LookupCacheName, hit: boolean) => void;
  /**
   * MLflow's version (`GET /version`) as read at start, and how to read it again (after MLflow was
   * unreachable, or when it did not tell at start): it picks the form of look-ups that differ between
   * versions. Without them the newest form is tried first.
   */
  readonly mlflowVersion?: string;
  readonly readVersion?: () => Promise<string | undefined>;
  /** MLflow's `--static-prefix` (which the client writes before every path), if it runs with one. */
  readonly staticPrefix?: string;
}

export const PROMPT_TAG = 'mlflow.prompt.is_prompt';

interface Lookup<V> {
  get(key: string): Promise<V>;
  /** The cached value, counted as a hit, or undefined (not counted: a `get` follows and counts the miss). */
  peek(key: string): V | undefined;
  delete(key: string): void;
  clear(): void;
}

/**
 * A look-up's cache key: MLflow answers in the caller's workspace (a name is unique only there, and an
 * id of another workspace's resource is not found), so an answer is kept for that workspace alone.
 */
const inCurrentWorkspace = (id: string): string => qualify(currentWorkspace(), id);

/**
 * A bounded cache in front of one look-up. Concurrent misses for the same key share one
 * upstream request; failures are never cached, so the next request asks again.
 */
function cachedLookup<V extends {}>(
  name: LookupCacheName,
  options: { max: number; ttlMs?: number },
  load: (key: string) => Promise<V>,
  onCache: MlflowLookupsOptions['onCache'],
): Lookup<V> {
  const cache = new LazyLru<string, V>(options.ttlMs ? { max: options.max, ttl: options.ttlMs } : { max: options.max });
  const inFlight = new Map<string, Promise<V>>();
  const uncached = options.ttlMs === 0;
  // Bumped by delete(): an answer that was already on its way must not re-fill an invalidated key.
  let generation = 0;

  return {
    get(id) {
      const key = inCurrentWorkspace(id);
      const cached = uncached ? undefined : cache.get(key);
      onCache?.(name, cached !== undefined);
      if (cached !== undefined) return Promise.resolve(cached);
      const pending = inFlight.get(key);
      if (pending) return pending;
      const startedAt = generation;
      const request = load(id)
        .then((value) => {
          if (!uncached && startedAt === generation) cache.set(key, value);
          return value;
        })
        .finally(() => {
          if (inFlight.get(key) === request) inFlight.delete(key);
        });
      inFlight.set(key, request);
      return request;
    },
    peek(id) {
      const cached = uncached ? undefined : cache.get(inCurrentWorkspace(id));
      if (cached !== undefined) onCache?.(name, true);
      return cached;
    },
    delete(id) {
      generation += 1;
      const key = inCurrentWorkspace(id);
      cache.delete(key);
      inFlight.delete(key);
    },
    clear() {
      generation += 1;
      cache.clear();
      inFlight.clear();
    },
  };
}

/**
 * Whether MLflow's 404 or 405 says it has no such route (Flask's HTML page, FastAPI's `{"detail"}`,
 * MLflow's ENDPOINT_NOT_FOUND) rather than no such resource (its JSON RESOURCE_DOES_NOT_EXIST).
 */
function namesNoRoute(status: number, json: unknown): boolean {
  if (status === 405) return true;
  if (status !== 404) return false;
  const code = (json as { error_code?: unknown } | null)?.error_code;
  return typeof code !== 'string' || code === 'ENDPOINT_NOT_FOUND';
}

/**
 * A look-up this MLflow cannot answer: a 404 the client does not retry, where a 503 would keep the
 * MLflow client retrying for minutes.
 */
const noSuchRoute = (what: string, ...paths: readonly string[]) =>
  new FlowgateError(
    'ENDPOINT_NOT_FOUND',
    `Could not look up ${what}: the tracking server has no ${paths.map((p) => `GET ${p}`).join(' or ')} (its MLflow version lacks it)`,
    {},
    'lookup-route-missing',
  );

/** The two forms of MLflow's trace info: where each is and where it keeps the experiment id. */
const TRACE_INFO: Record<TraceInfoForm, { path(traceId: string): string; experimentId: readonly string[] }> = {
  v3: {
    path: (id) => `/api/3.0/mlflow/traces/${encodeURIComponent(id)}`,
    experimentId: ['trace', 'trace_info', 'trace_location', 'mlflow_experiment', 'experiment_id'],
  },
  v2: { path: (id) => `/api/2.0/mlflow/traces/${encodeURIComponent(id)}/info`, experimentId: ['trace_info', 'experiment_id'] },
};

/** The experiment kind's own look-up (`experiments/get`): its query parameter, and where its answer has the name. */
const EXPERIMENT_LOOKUP = KINDS[EXPERIMENT].lookup;
/** `experiments/get-by-name` answers the same object under the same key, its id under the look-up's parameter. */
const EXPERIMENT_ID_IN_ANSWER = [EXPERIMENT_LOOKUP.name[0], EXPERIMENT_LOOKUP.param] as const;

/** Reads a nested string out of MLflow's JSON, or undefined when the shape differs. */
function pick(value: unknown, path: readonly string[]): string | undefined {
  let current = value;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return typeof current === 'string' && current !== '' ? current : undefined;
}

/** The first release serving `/api/` under `--static-prefix` (before it, only `/ajax-api/` is under the prefix). */
const REST_API_UNDER_PREFIX_SINCE = '3.12.0';

/**
 * The path a look-up asks: MLflow before 3.12 serves `/api/` at its root even with `--static-prefix`,
 * which flowgate writes before every path, so there the same handler is asked at its `/ajax-api/`
 * twin, which every release serves under the prefix. Unknown versions get the newest form.
 */
export function lookupPathFor(mlflowVersion: string | undefined, staticPrefix = ''): (path: string) => string {
  const apiUnderPrefix = mlflowVersion === undefined || compareVersions(mlflowVersion, REST_API_UNDER_PREFIX_SINCE) >= 0;
  if (staticPrefix === '' || apiUnderPrefix) return (path) => path;
  return (path) => path.replace(/^\/api\//, '/ajax-api/');
}

export function createMlflowLookups(options: MlflowLookupsOptions): CachedMlflowLookups {
  const client = options.client;
  const traceForms = createTraceInfoForms(options.readVersion, options.mlflowVersion);
  const lookupPath = lookupPathFor(options.mlflowVersion, options.staticPrefix);

  async function getJson(what: string, path: string, query: Record<string, string> = {}): Promise<unknown> {
    return (await getAnswer(what, path, query)).json;
  }

  /** A look-up's whole 2xx answer; the other statuses become flowgate's errors. */
  async function getAnswer(what: string, path: string, query: Record<string, string> = {}): Promise<UpstreamAnswer> {
    let answer: UpstreamAnswer;
    try {
      answer = await client.call('GET', lookupPath(path), query);
    } catch (e) {
      if (e instanceof UnreadableAnswer && namesNoRoute(e.upstreamStatus, undefined)) throw noSuchRoute(what, path);
      const unreadable = e instanceof FlowgateError && e.code === 'BAD_GATEWAY';
      // MLflow went away (no answer, or a cut one): it may come back as another version.
      if (!(e instanceof UnreadableAnswer)) traceForms.forget();
      throw new FlowgateError(
        'TEMPORARILY_UNAVAILABLE',
        unreadable ? `Could not look up ${what}: unreadable answer` : `Could not look up ${what}: the tracking server did not answer`,
      );
    }
    if (namesNoRoute(answer.status, answer.json)) throw noSuchRoute(what, path);
    if (answer.status === 404) throw new FlowgateError('RESOURCE_DOES_NOT_EXIST', `${what} does not exist`);
    // MLflow's verdict on a malformed id: the caller's mistake, not an outage.
    if (answer.status === 400) throw badRequest(`Invalid ${what}`);
    if (answer.status < 200 || answer.status >= 300)
      throw new FlowgateError('TEMPORARILY_UNAVAILABLE', `Could not look up ${what}: tracking server answered ${answer.status}`);
    return answer;
  }

  function required(what: string, value: string | undefined): string {
    if (value === undefined) {
      throw new FlowgateError('TEMPORARILY_UNAVAILABLE', `Could not look up ${what}: unexpected answer`);
    }
    return value;
  }

  const max = options.cacheSize;
  const onCache = options.onCache;

  // A run, logged model or trace never moves to another experiment: cached without expiry.
  const runs = cachedLookup('run_experiment', { max }, async (runId) => {
    const json = await getJson(`run ${runId}`, '/api/2.0/mlflow/runs/get', { run_id: runId });
    return required(`run ${runId}`, pick(json, ['run', 'info', 'experiment_id']));
  }, onCache);

  const loggedModels = cachedLookup('logged_model_experiment', { max }, async (modelId) => {
    const json = await getJson(`logged model ${modelId}`, `/api/2.0/mlflow/logged-models/${encodeURIComponent(modelId)}`);
    return required(`logged model ${modelId}`, pick(json, ['model', 'info', 'experiment_id']));
  }, onCache);

  /** The trace's experiment through one form of trace info; the route's absence is thrown as noSuchRoute. */
  async function traceExperimentVia(form: TraceInfoForm, traceId: string): Promise<string> {
    const json = await getJson(`trace ${traceId}`, TRACE_INFO[form].path(traceId));
    traceForms.answered(form);
    return required(`trace ${traceId}`, pick(json, TRACE_INFO[form].experimentId));
  }

  const traces = cachedLookup('trace_experiment', { max }, async (traceId) => {
    const form = await traceForms.current();
    try {
      return await traceExperimentVia(form, traceId);
    } catch (e) {
      if (!(e instanceof FlowgateError && e.code === 'ENDPOINT_NOT_FOUND')) throw e;
    }
    // This MLflow has the other form: ask it, and from now on ask it first.
    traceForms.missing(form);
    try {
      return await traceExperimentVia(otherForm(form), traceId);
    } catch (e) {
      if (!(e instanceof FlowgateError && e.code === 'ENDPOINT_NOT_FOUND')) throw e;
      throw noSuchRoute(`trace ${traceId}`, TRACE_INFO.v3.path(traceId), TRACE_INFO.v2.path(traceId));
    }
  }, onCache);

  // Names are reused after delete + garbage collection, and tags change: these expire.
  const experimentNames = cachedLookup('experiment_name', { max, ttlMs: options.ttlMs }, async (name) => {
    const json = await getJson(`experiment '${name}'`, '/api/2.0/mlflow/experiments/get-by-name', { experiment_name: name });
    return required(`experiment '${name}'`, pick(json, EXPERIMENT_ID_IN_ANSWER));
  }, onCache);

  // Renames change it: expires like the name → id mapping, and is forgotten with it.
  const experimentNamesById = cachedLookup('experiment_name_of_id', { max, ttlMs: options.ttlMs }, async (id) => {
    const json = await getJson(`experiment ${id}`, EXPERIMENT_LOOKUP.path, { [EXPERIMENT_LOOKUP.param]: id });
    return required(`experiment ${id}`, pick(json, EXPERIMENT_LOOKUP.name));
  }, onCache);

  // An id MLflow has no experiment for: remembered too, so asking about it again (the lists' look-up may
  // name one id 200 times, or the same missing ids page after page) costs MLflow nothing and answers as
  // fast as a cached name, rather than one MLflow call each (a timing oracle on existence, and load).
  // A cache of its own, so missing ids never evict names, with the names' bound and lifetime, and
  // forgotten whenever names are. Creating an experiment forgets nothing, so an id remembered as
  // missing may exist by now: the gate asks `fresh`; the own routes answer it as unreadable, for at
  // most the lifetime.
  const missingExperiments = options.ttlMs > 0 ? new LazyLru<string, string>({ max, ttl: options.ttlMs }) : undefined;
  // Bumped when names are forgotten: an answer already on its way must not remember an id as missing.
  let missingGeneration = 0;
  const forgetMissingExperiments = () => {
    missingGeneration += 1;
    missingExperiments?.clear();
  };

  async function experimentNameById(id: string, fresh = false): Promise<string> {
    const key = inCurrentWorkspace(id);
    const missing = fresh ? undefined : missingExperiments?.get(key);
    if (missing !== undefined) {
      onCache?.('experiment_name_of_id', true);
      throw new FlowgateError('RESOURCE_DOES_NOT_EXIST', missing);
    }
    const startedAt = missingGeneration;
    try {
      const name = await experimentNamesById.get(id);
      if (fresh) missingExperiments?.delete(key);
      return name;
    } catch (e) {
      if (missingExperiments && startedAt === missingGeneration && e instanceof FlowgateError && e.code === 'RESOURCE_DOES_NOT_EXIST') missingExperiments.set(key, e.message);
      throw e;
    }
  }

  const promptFlags = cachedLookup('model_is_prompt', { max, ttlMs: options.ttlMs }, async (name) => {
    const json = await getJson(`registered model '${name}'`, '/api/2.0/mlflow/registered-models/get', { name });
    const model = (json as { registered_model?: { name?: unknown; tags?: unknown } } | null)?.registered_model;
    if (typeof model?.name !== 'string') required(`registered model '${name}'`, undefined);
    const tags = Array.isArray(model?.tags) ? (model.tags as Array<{ key?: unknown; value?: unknown }>) : [];
    const tag = tags.find((t) => t.key === PROMPT_TAG);
    // MLflow's server-side test: the tag's value, lower-cased, equals "true".
    return typeof tag?.value === 'string' && tag.value.toLowerCase() === 'true';
  }, onCache);

  // A dataset's experiments change through add/remove-experiments: these expire, and flowgate
  // forgets an entry when it forwards such a change.
  const datasetExperiments = cachedLookup('dataset_experiments', { max, ttlMs: options.ttlMs }, async (datasetId): Promise<readonly string[]> => {
    const json = await getJson(`dataset ${datasetId}`, `/api/3.0/mlflow/datasets/${encodeURIComponent(datasetId)}/experiment-ids`);
    const ids = (json as { experiment_ids?: unknown } | null)?.experiment_ids ?? [];
    if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string' && id !== ''))
      throw new FlowgateError('TEMPORARILY_UNAVAILABLE', `Could not look up dataset ${datasetId}: unexpected answer`);
    return ids as string[];
  }, onCache);

  // A queue's users change through update: these expire, and flowgate forgets an entry when it
  // forwards an update or delete.
  function reviewQueueFacts(what: string, json: unknown): { experimentId: string; users: string[] } {
    const experimentId = required(what, pick(json, ['review_queue', 'experiment_id']));
    const users = (json as { review_queue?: { users?: unknown } }).review_queue?.users ?? [];
    if (!Array.isArray(users) || !users.every((u) => typeof u === 'string'))
      throw new FlowgateError('TEMPORARILY_UNAVAILABLE', `Could not look up ${what}: unexpected answer`);
    return { experimentId, users: users as string[] };
  }
  const reviewQueues = cachedLookup('review_queue', { max, ttlMs: options.ttlMs }, async (queueId) =>
    reviewQueueFacts(
      `review queue ${queueId}`,
      await getJson(`review queue ${queueId}`, '/api/3.0/mlflow/review-queues/get', { queue_id: queueId }),
    ),
  onCache);

  // Like runs, these never move to another experiment: cached without expiry.
  const owned: Record<Exclude<OwnedKind, 'review_queue'>, Lookup<string>> = {
    issue: cachedLookup('issue_experiment', { max }, async (issueId) => {
      const json = await getJson(`issue ${issueId}`, `/api/3.0/mlflow/issues/${encodeURIComponent(issueId)}`);
      return required(`issue ${issueId}`, pick(json, ['issue', 'experiment_id']));
    }, onCache),
    label_schema: cachedLookup('label_schema_experiment', { max }, async (schemaId) => {
      const json = await getJson(`label schema ${schemaId}`, '/api/3.0/mlflow/label-schemas/get', { schema_id: schemaId });
      return required(`label schema ${schemaId}`, pick(json, ['label_schema', 'experiment_id']));
    }, onCache),
    // The experiment is the one the job was created in (its params), never changed. MLflow answers these
    // routes for a job of any kind (an evaluation's, an issue detection's: their ids are tags on runs any
    // reader sees), reading the experiment from its params; only a prompt optimization is decided here
    // as one (it alone has a source prompt). Any other job stays its starter's, on the jobs routes.
    prompt_optimization_job: cachedLookup('prompt_optimization_job_experiment', { max }, async (jobId) => {
      const what = `prompt optimization job ${jobId}`;
      const json = await getJson(what, `/api/3.0/mlflow/prompt-optimization/jobs/${encodeURIComponent(jobId)}`);
      if (pick(json, ['job', 'source_prompt_uri']) === undefined) throw new FlowgateError('RESOURCE_DOES_NOT_EXIST', `${what} does not exist`);
      return required(what, pick(json, ['job', 'experiment_id']));
    }, onCache),
  };

  // A gateway object's id never changes, but its name and an endpoint's experiment do (renamed or
  // updated through another flowgate, or by MLflow's own clients): they expire, every flowgate on the
  // store forgets an entry when one of them forwards a rename, update or delete (the mapping change
  // log, cache `gateway`), and a decision to change or spend an object asks afresh (a rename by
  // MLflow's own clients reaches no log).
  const gatewayObjects = cachedLookup('gateway_object', { max, ttlMs: options.ttlMs }, async (key): Promise<GatewayObject> => {
    const split = key.indexOf('\u0000');
    const kind = key.slice(0, split) as GatewayKind;
    const id = key.slice(split + 1);
    const spec = KINDS[kind].generatedId;
    const what = `${KINDS[kind].ui.one} ${id}`;
    const json = await getJson(what, spec.path, { [spec.field]: id });
    const name = required(what, pick(json, spec.name));
    const experimentId = kind === GATEWAY_ENDPOINT ? pick(json, [spec.name[0], 'experiment_id']) : undefined;
    return experimentId === undefined ? { name } : { name, experimentId };
  }, onCache);

  /** Whether MLflow has the resource, by its kind's own look-up, asked now (RESOURCE_DOES_NOT_EXIST: it has not). */
  async function existsNow(kind: ResourceKind, id: string): Promise<boolean> {
    const call = lookupCall(kind, id);
    if (call === undefined) throw new Error(`no look-up by id for ${kind}`);
    try {
      await getAnswer(`${KINDS[kind].ui.one} '${id}'`, call.path, { ...call.query });
      return true;
    } catch (e) {
      if (e instanceof FlowgateError && e.code === 'RESOURCE_DOES_NOT_EXIST') return false;
      throw e;
    }
  }

  const endpointNames = cachedLookup('gateway_endpoint_name', { max, ttlMs: options.ttlMs }, async (name) => {
    const spec = KINDS.gateway_endpoint;
    const what = `${spec.ui.one} '${name}'`;
    const json = await getJson(what, spec.lookup.path, { [spec.lookup.param]: name });
    return required(what, pick(json, spec.generatedId.name));
  }, onCache);

  return {
    // Whether a registration adds a version to a scorer (or makes a Skill, or a first version makes its MCP
    // server) decides what it needs: asked afresh every time.
    scorerExists: (id) => existsNow(SCORER, id),
    registeredScorer: async (experimentId, name, version) => {
      const latest = version === 'latest';
      const what = `${latest ? 'the latest version' : `version ${version}`} of scorer '${name}' in experiment ${experimentId}`;
      // Without a version MLflow's get answers the highest one, as the job worker's `get_scorer(name=…)` loads.
      const json = await getJson(what, '/api/3.0/mlflow/scorers/get', latest ? { experiment_id: experimentId, name } : { experiment_id: experimentId, name, version: String(version) });
      const scorer = (json as { scorer?: Record<string, unknown> } | null)?.scorer;
      // MLflow answered about the experiment and version it was asked about, or this is not the scorer it will load.
      if (String(scorer?.experiment_id) !== experimentId || (!latest && String(scorer?.scorer_version) !== String(version))) required(what, undefined);
      return { name: required(what, pick(scorer, ['scorer_name'])), serializedScorer: required(what, pick(scorer, ['serialized_scorer'])) };
    },
    mcpServerExists: (name) => existsNow(MCP_SERVER, name),
    skillExists: (id) => existsNow(SKILL, id),
    gatewayObject: (kind, id, fresh = false) => {
      const key = `${kind}\u0000${id}`;
      if (fresh) gatewayObjects.delete(key);
      return gatewayObjects.get(key);
    },
    gatewayEndpointName: (name) => endpointNames.get(name),
    invalidateGateway: (id) => {
      if (id !== undefined) for (const kind of GATEWAY_KINDS) gatewayObjects.delete(`${kind}\u0000${id}`);
      // Which names the change freed or took is not known here: every name goes.
      endpointNames.clear();
    },
    experimentOfRun: (runId) => runs.get(runId),
    knownExperimentOfRun: (runId) => runs.peek(runId),
    experimentOfLoggedModel: (modelId) => loggedModels.get(modelId),
    experimentOfTrace: (traceId) => traces.get(traceId),
    experimentIdByName: (name) => experimentNames.get(name),
    experimentNameById,
    knownExperimentName: (id) => experimentNamesById.peek(id),
    isPrompt: (name) => promptFlags.get(name),
    invalidateModel: (name) => promptFlags.delete(name),
    invalidateExperimentName: (name) => {
      experimentNames.delete(name);
      // The id whose name this was is not known here: no id keeps a name that may be gone.
      experimentNamesById.clear();
      forgetMissingExperiments();
    },
    invalidateExperimentNames: () => {
      experimentNames.clear();
      experimentNamesById.clear();
      forgetMissingExperiments();
    },
    invalidateTrace: (traceId) => traces.delete(traceId),
    invalidateMutable: () => {
      for (const cache of [traces, experimentNames, experimentNamesById, promptFlags, datasetExperiments, reviewQueues, gatewayObjects, endpointNames]) cache.clear();
      forgetMissingExperiments();
    },
    experimentsOfDataset: (datasetId) => datasetExperiments.get(datasetId),
    experimentOfOwned: (kind, id) =>
      kind === 'review_queue' ? reviewQueues.get(id).then((q) => q.experimentId) : owned[kind].get(id),
    reviewQueueUsers: (queueId) => reviewQueues.get(queueId).then((q) => q.users),
    reviewQueueByName: async (experimentId, name) => {
      const what = `review queue '${name}'`;
      const started = process.hrtime.bigint();
      const answer = await getAnswer(what, '/api/3.0/mlflow/review-queues/get-by-name', { experiment_id: experimentId, name });
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const queue = reviewQueueFacts(what, answer.json);
      // MLflow answered for the experiment it was asked about; anything else is not this queue.
      if (queue.experimentId !== experimentId) required(what, undefined);
      return { users: queue.users, answer: { status: answer.status, raw: answer.raw, seconds } };
    },
    invalidateDataset: (datasetId) => datasetExperiments.delete(datasetId),
    invalidateReviewQueue: (queueId) => reviewQueues.delete(queueId),
  };
}
