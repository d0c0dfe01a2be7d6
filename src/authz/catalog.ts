import { EXPERIMENT, GATEWAY_ENDPOINT, GATEWAY_MODEL_DEFINITION, GATEWAY_SECRET, type GatewayKind, MCP_SERVER, PROMPT, SCORER, SKILL, WORKSPACE } from '../resources/kinds.js';
import { LATEST_OF_EACH } from './registered-scorers.js';
import type { AfterHook, FieldGuard, HttpMethod, IdLocation, IdSource, Need, RouteEntry } from './types.js';

/*
 * Every (method, path) the supported MLflow releases (3.0 to 3.18; pinned: 3.17.2) answer, relative
 * to its root, with what the caller needs. src/authz/catalog-versions.json records each release's
 * routes and which rows exist in which releases; test/unit/catalog.test.ts checks this
 * table against every recorded release, and test/e2e/route-coverage.test.ts checks the record
 * against the installed server's own route list, so a new MLflow route fails CI instead of slipping through.
 *
 * Decision rule: READ reads; EDIT also updates; MANAGE also deletes; `create` makes a new
 * top-level resource; searches over many resources are `authenticated` and filtered afterwards.
 * A route whose resource flowgate cannot resolve safely is `admin` (fail closed).
 */

type Resource = RouteEntry['resource'];

const NONE: IdSource = { kind: 'none' };

const experimentId = (from: IdLocation = 'auto', field = 'experiment_id'): IdSource => ({
  kind: 'experiment_id',
  field,
  from,
});
const experimentIds = (from: IdLocation = 'auto', field = 'experiment_ids'): IdSource => ({
  kind: 'experiment_ids',
  field,
  from,
});
/** `run_uuid` is the old spelling of `run_id`; both are read and must agree. */
const runId = (from: IdLocation = 'auto'): IdSource => ({ kind: 'run_id', field: 'run_id', from, alias: 'run_uuid' });
const runIds = (field: string): IdSource => ({ kind: 'run_ids', field, from: 'auto' });
/** Every logged model named under a body field (lists included): each one's experiment is checked. */
const loggedModelIn = (field: string): IdSource => ({ kind: 'logged_model_ids', field, from: 'body' });
const loggedModelParam: IdSource = { kind: 'logged_model_id', field: 'model_id', from: 'param' };
const traceParam = (field: string): IdSource => ({ kind: 'trace_id', field, from: 'param' });
const DATASET: IdSource = { kind: 'dataset_id', field: 'dataset_id', from: 'param' };
const ISSUE: IdSource = { kind: 'owned_id', owner: 'issue', field: 'issue_id', from: 'param' };
const LABEL_SCHEMA: IdSource = { kind: 'owned_id', owner: 'label_schema', field: 'schema_id', from: 'auto' };
const REVIEW_QUEUE: IdSource = { kind: 'owned_id', owner: 'review_queue', field: 'queue_id', from: 'auto' };
const OPTIMIZATION_JOB: IdSource = { kind: 'owned_id', owner: 'prompt_optimization_job', field: 'job_id', from: 'param' };
const traceField = (field: string, from: IdLocation = 'auto'): IdSource => ({ kind: 'trace_id', field, from });
const traceIds: IdSource = { kind: 'trace_ids', field: 'trace_ids', from: 'auto' };
const modelName = (from: IdLocation = 'auto'): IdSource => ({ kind: 'model_name', field: 'name', from });
/** Artifact paths start with the experiment id: `<exp>/<run>/artifacts/...` (with MLflow's workspaces, also after `workspaces/<ws>/`). */
const artifactWildcard: IdSource = { kind: 'artifact_path', field: '*', from: 'param' };
/** Trace tags that are storage pointers, in each shape a trace request carries tags. */
const traceTagKey: readonly FieldGuard[] = [{ kind: 'reserved_tag_key', field: 'key' }];
/**
 * Trace metadata `mlflow.sourceRun` ties a trace to a run (MLflow lists it under that run), as
 * link-to-run does: the run must be the caller's to edit.
 */
const sourceRunIn = (field: string) => ({ id: { kind: 'run_id', field, from: 'body', entry: 'mlflow.sourceRun' } as IdSource, need: 'edit' as const });
const traceTagList = (field: string): readonly FieldGuard[] => [{ kind: 'reserved_tag_list', field }];

function route(
  method: HttpMethod,
  pattern: string,
  need: Need,
  resource: Resource = 'none',
  id: IdSource = NONE,
  after?: AfterHook,
): RouteEntry {
  return after === undefined ? { method, pattern, need, resource, id } : { method, pattern, need, resource, id, after };
}

const onExperiment = (method: HttpMethod, pattern: string, need: Need, id: IdSource = experimentId()) =>
  route(method, pattern, need, EXPERIMENT, id);
/** A scorer: its `name` within the experiment its `experiment_id` names, both where MLflow reads them. */
const scorerNamed = (from: IdLocation = 'auto'): IdSource => ({ kind: 'scorer', field: 'name', experiment: 'experiment_id', from });
const SCORER_IN_BODY = scorerNamed('body');
const onScorer = (method: HttpMethod, pattern: string, need: Need, from: IdLocation = 'auto', after?: AfterHook) =>
  route(method, pattern, need, SCORER, scorerNamed(from), after);
const onModel = (method: HttpMethod, pattern: string, need: Need, after?: AfterHook) =>
  route(method, pattern, need, 'model_or_prompt', modelName(), after);
const admin = (method: HttpMethod, pattern: string) => route(method, pattern, 'admin');
const publicRoute = (method: HttpMethod, pattern: string) => route(method, pattern, 'public');
const authenticated = (method: HttpMethod, pattern: string, after?: AfterHook) =>
  route(method, pattern, 'authenticated', 'none', NONE, after);
/**
 * USE on every AI-gateway endpoint the judges of serialized scorers call (`gateway:/<endpoint>` models):
 * the job worker or online scoring calls them from MLflow's own process, where flowgate decides nothing.
 */
const useJudgeEndpoints = (field: string) => ({ id: { kind: 'judge_endpoints', field, from: 'body' } as IdSource, need: 'use' as const });
/**
 * READ on the experiment of every trace the MemAlign judges of serialized scorers recall (`episodic_trace_ids`):
 * the worker loads them by id, unseen, into its judge's prompt.
 */
const readJudgeTraces = (field: string) => ({ id: { kind: 'judge_traces', field, from: 'body' } as IdSource, need: 'read' as const });
/** The registered scorers a GenAI evaluation loads (`scorer_versions` beside `serialized_scorers`), or their stored judges' endpoints. */
const registeredScorers = (yields: 'scorers' | 'judge_endpoints'): IdSource => ({
  kind: 'registered_scorers',
  shape: 'lists',
  field: 'serialized_scorers',
  versions: 'scorer_versions',
  experiment: 'experiment_id',
  from: 'body',
  yields,
});
/** A row whose answer names the MLflow jobs it started: the caller is recorded as their starter. */
const startsJobs = (row: RouteEntry): RouteEntry => ({ ...row, after: 'record_job_starter' });
/** A route about one job (`:job_id`): its starter's. */
const startedJob = (method: HttpMethod, pattern: string): RouteEntry => ({ ...authenticated(method, pattern), startedJob: 'job_id' });
/** A REST collection only administrators may use: list and create on it, read, update and delete by `:<idParam>`. */
const adminCollection = (base: string, idParam: string) => [
  admin('GET', base),
  admin('POST', base),
  ...(['GET', 'PATCH', 'DELETE'] as const).map((method) => admin(method, `${base}/:${idParam}`)),
];

/** MLflow serves each protobuf endpoint under `/api/` and again under `/ajax-api/` for its UI. */
function withAjaxTwins(rows: readonly RouteEntry[]): RouteEntry[] {
  return rows.flatMap((row) => [row, { ...row, pattern: row.pattern.replace(/^\/api\//, '/ajax-api/') }]);
}

const V2 = '/api/2.0/mlflow';
const V3 = '/api/3.0/mlflow';
const ARTIFACTS = '/api/2.0/mlflow-artifacts';
const AJAX_V2 = '/ajax-api/2.0/mlflow';

/** Experiment names MLflow gives AI-gateway endpoints' usage experiments (`gateway/<endpoint>`): administrators' only. */
const USAGE_EXPERIMENT_NAMES = (field: string) => ({ kind: 'reserved_name_prefix', field, prefix: 'gateway/' }) as const;
const AJAX_V3 = '/ajax-api/3.0/mlflow';

const experimentRoutes = [
  // The name was resolved to an id (possibly cached); MLflow answers for whichever experiment has the
  // name now (after `mlflow gc` and a new create it is another one): the answer must be the one decided on.
  {
    ...onExperiment('GET', `${V2}/experiments/get-by-name`, 'read', { kind: 'experiment_name', field: 'experiment_name', from: 'auto' }),
    after: 'verify_answered_experiment' as const,
  },
  // An artifact location chosen by the caller could lie inside another experiment's artifacts. A name
  // under `gateway/` is one MLflow takes over as an endpoint's usage experiment (it reuses one that exists):
  // made ahead of the endpoint, it would collect every caller's prompts and answers for its maker.
  {
    ...route('POST', `${V2}/experiments/create`, 'create', EXPERIMENT, NONE, 'grant_creator_experiment'),
    guards: [{ kind: 'admin_only', field: 'artifact_location' }, USAGE_EXPERIMENT_NAMES('name')] as const,
  },
  authenticated('POST', `${V2}/experiments/search`, 'filter_search_experiments'),
  authenticated('GET', `${V2}/experiments/search`, 'filter_search_experiments'),
  onExperiment('GET', `${V2}/experiments/get`, 'read'),
  { ...onExperiment('POST', `${V2}/experiments/delete`, 'manage'), after: 'forget_experiment_names' as const },
  { ...onExperiment('POST', `${V2}/experiments/restore`, 'manage'), after: 'forget_experiment_names' as const },
  { ...onExperiment('POST', `${V2}/experiments/update`, 'edit'), after: 'forget_experiment_names' as const, renames: 'new_name', guards: [USAGE_EXPERIMENT_NAMES('new_name')] as const },
  onExperiment('POST', `${V2}/experiments/set-experiment-tag`, 'edit'),
  onExperiment('POST', `${V2}/experiments/delete-experiment-tag`, 'edit'),
  // MLflow registers this one without the slash after `2.0` (a typo in its handler table); it is
  // a live route all the same.
  onExperiment('POST', '/api/2.0mlflow/experiments/search-datasets', 'read', experimentIds()),
];

const runRoutes = [
  onExperiment('POST', `${V2}/runs/create`, 'edit'),
  onExperiment('POST', `${V2}/runs/update`, 'edit', runId()),
  onExperiment('POST', `${V2}/runs/delete`, 'manage', runId()),
  onExperiment('POST', `${V2}/runs/restore`, 'manage', runId()),
  { ...onExperiment('POST', `${V2}/runs/log-metric`, 'edit', runId()), also: [{ id: loggedModelIn('model_id'), need: 'edit' as const }] },
  onExperiment('POST', `${V2}/runs/log-parameter`, 'edit', runId()),
  onExperiment('POST', `${V2}/runs/set-tag`, 'edit', runId()),
  onExperiment('POST', `${V2}/runs/delete-tag`, 'edit', runId()),
  { ...onExperiment('POST', `${V2}/runs/log-batch`, 'edit', runId()), also: [{ id: loggedModelIn('metrics.model_id'), need: 'edit' as const }] },
  onExperiment('POST', `${V2}/runs/log-model`, 'edit', runId()),
  { ...onExperiment('POST', `${V2}/runs/log-inputs`, 'edit', runId()), also: [{ id: loggedModelIn('models.model_id'), need: 'edit' as const }] },
  { ...onExperiment('POST', `${V2}/runs/outputs`, 'edit', runId()), also: [{ id: loggedModelIn('models.model_id'), need: 'edit' as const }] },
  onExperiment('GET', `${V2}/runs/get`, 'read', runId()),
  authenticated('POST', `${V2}/runs/search`, 'filter_search_runs'),
  onExperiment('GET', `${V2}/artifacts/list`, 'read', runId()),
  // Accepts run_id or model_id; only the run form is resolvable here, so a model_id-only request
  // is refused as missing run_id rather than let through.
  onExperiment('POST', `${V2}/artifacts/presigned-upload-url`, 'edit', runId()),
  onExperiment('POST', `${V2}/artifacts/presigned-download-url`, 'read', runId()),
  onExperiment('GET', `${V2}/metrics/get-history`, 'read', runId()),
  onExperiment('GET', `${V2}/metrics/get-history-bulk-interval`, 'read', runIds('run_ids')),
];

const traceRoutes = [
  { ...onExperiment('POST', `${V2}/traces`, 'edit'), guards: traceTagList('tags'), also: [sourceRunIn('request_metadata')] },
  {
    ...onExperiment('PATCH', `${V2}/traces/:request_id`, 'edit', traceParam('request_id')),
    guards: traceTagList('tags'),
    also: [sourceRunIn('request_metadata')],
  },
  onExperiment('GET', `${V2}/traces/:request_id/info`, 'read', traceParam('request_id')),
  { ...onExperiment('PATCH', `${V2}/traces/:request_id/tags`, 'edit', traceParam('request_id')), guards: traceTagKey },
  { ...onExperiment('DELETE', `${V2}/traces/:request_id/tags`, 'edit', traceParam('request_id')), guards: traceTagKey },
  authenticated('GET', `${V2}/traces`, 'filter_search_traces'),
  onExperiment('POST', `${V2}/traces/delete-traces`, 'manage'),
  { ...onExperiment('POST', `${V2}/traces/link-to-run`, 'edit', runId()), also: [{ id: { kind: 'trace_ids', field: 'trace_ids', from: 'body' } as IdSource, need: 'edit' as const }] },
  // The prompts named must be readable by the caller: linking is a way to reference them.
  {
    ...onExperiment('POST', `${V2}/traces/link-prompts`, 'edit', traceField('trace_id')),
    also: [{ id: { kind: 'model_names', field: 'prompt_versions.name', from: 'body' } as IdSource, need: 'read' as const, resource: PROMPT }],
  },
  // Databricks-only lookups (SQL warehouse, inference tables): nothing local to resolve.
  admin('GET', `${V2}/unified-traces`),
  admin('GET', `${V2}/get-online-trace-details`),
  // MLflow 3.0 and 3.1 register their v3 trace service under 2.0 paths with a handler that only answers
  // NOT_IMPLEMENTED (Databricks-only): nothing to resolve, so admin.
  admin('GET', `${V2}/traces/:request_id`),
  admin('POST', `${V2}/traces/search`),
  admin('POST', `${V2}/traces/:request_id/assessments`),
  admin('GET', `${V2}/traces/:request_id/assessments/:assessment_id`),
  admin('PATCH', `${V2}/traces/:request_id/assessments/:assessment_id`),
  admin('DELETE', `${V2}/traces/:request_id/assessments/:assessment_id`),

  // The client chooses the trace id, and MLflow updates (and may move) a trace that already has it.
  {
    ...onExperiment('POST', `${V3}/traces`, 'edit', experimentId('body', 'trace.trace_info.trace_location.mlflow_experiment.experiment_id')),
    also: [
      { id: traceField('trace.trace_info.trace_id', 'body'), need: 'edit' as const, clientChosen: true as const },
      sourceRunIn('trace.trace_info.trace_metadata'),
    ],
    guards: [{ kind: 'reserved_tag_map', field: 'trace.trace_info.tags' }] as const,
    after: 'forget_written_traces' as const,
  },
  onExperiment('GET', `${V3}/traces/:trace_id`, 'read', traceParam('trace_id')),
  onExperiment('GET', `${V3}/traces/get`, 'read', traceField('trace_id')),
  onExperiment('GET', `${V3}/traces/batchGet`, 'read', traceIds),
  onExperiment('POST', `${V3}/traces/batchGetInfos`, 'read', traceIds),
  authenticated('POST', `${V3}/traces/search`, 'filter_search_traces'),
  onExperiment('POST', `${V3}/traces/delete-traces`, 'manage'),
  onExperiment('POST', `${V3}/traces/calculate-filter-correlation`, 'read', experimentIds()),
  onExperiment('POST', `${V3}/traces/metrics`, 'read', experimentIds()),
  { ...onExperiment('PATCH', `${V3}/traces/:trace_id/tags`, 'edit', traceParam('trace_id')), guards: traceTagKey },
  { ...onExperiment('DELETE', `${V3}/traces/:trace_id/tags`, 'edit', traceParam('trace_id')), guards: traceTagKey },
  onExperiment('POST', `${V3}/traces/:trace_id/assessments`, 'edit', traceParam('trace_id')),
  onExperiment('GET', `${V3}/traces/:trace_id/assessments/:assessment_id`, 'read', traceParam('trace_id')),
  onExperiment('PATCH', `${V3}/traces/:trace_id/assessments/:assessment_id`, 'edit', traceParam('trace_id')),
  onExperiment('DELETE', `${V3}/traces/:trace_id/assessments/:assessment_id`, 'edit', traceParam('trace_id')),
];

const loggedModelRoutes = [
  // A logged model names the run it came from, and shows up on that run's page: the run must be the caller's to edit.
  {
    ...onExperiment('POST', `${V2}/logged-models`, 'edit'),
    also: [{ id: { kind: 'run_id', field: 'source_run_id', from: 'body' } as IdSource, need: 'edit' as const }],
  },
  authenticated('POST', `${V2}/logged-models/search`, 'filter_search_logged_models'),
  onExperiment('GET', `${V2}/logged-models/:model_id`, 'read', loggedModelParam),
  onExperiment('PATCH', `${V2}/logged-models/:model_id`, 'edit', loggedModelParam),
  onExperiment('DELETE', `${V2}/logged-models/:model_id`, 'manage', loggedModelParam),
  onExperiment('PATCH', `${V2}/logged-models/:model_id/tags`, 'edit', loggedModelParam),
  onExperiment('DELETE', `${V2}/logged-models/:model_id/tags/:tag_key`, 'edit', loggedModelParam),
  onExperiment('GET', `${V2}/logged-models/:model_id/artifacts/directories`, 'read', loggedModelParam),
  onExperiment('POST', `${V2}/logged-models/:model_id/params`, 'edit', loggedModelParam),
];

/*
 * Experiment-scoped GenAI features. Datasets, issues, label schemas, review queues and
 * prompt-optimization jobs addressed by their own id are resolved to their experiment(s) by a look-up.
 */
const genaiRoutes = [
  onExperiment('POST', `${V3}/datasets/create`, 'edit', experimentIds()),
  // A dataset found may also belong to experiments the caller cannot read: those are left out.
  { ...onExperiment('POST', `${V3}/datasets/search`, 'read', experimentIds()), after: 'filter_found_datasets' as const },
  { ...onExperiment('GET', `${V3}/datasets/search`, 'read', experimentIds()), after: 'filter_found_datasets' as const },
  // Evaluation datasets by id: the right on every experiment the dataset belongs to (MLflow's rule).
  onExperiment('GET', `${V3}/datasets/:dataset_id`, 'read', DATASET),
  { ...onExperiment('DELETE', `${V3}/datasets/:dataset_id`, 'manage', DATASET), after: 'forget_dataset_experiments' as const },
  onExperiment('PATCH', `${V3}/datasets/:dataset_id/tags`, 'edit', DATASET),
  onExperiment('DELETE', `${V3}/datasets/:dataset_id/tags/:key`, 'edit', DATASET),
  onExperiment('POST', `${V3}/datasets/:dataset_id/records`, 'edit', DATASET),
  onExperiment('GET', `${V3}/datasets/:dataset_id/records`, 'read', DATASET),
  onExperiment('DELETE', `${V3}/datasets/:dataset_id/records`, 'edit', DATASET),
  onExperiment('GET', `${V3}/datasets/:dataset_id/experiment-ids`, 'read', DATASET),
  // Attaching also needs EDIT on each experiment attached, so a dataset cannot be pushed into a stranger's experiment.
  {
    ...onExperiment('POST', `${V3}/datasets/:dataset_id/add-experiments`, 'edit', DATASET),
    also: [{ id: { kind: 'experiment_ids', field: 'experiment_ids', from: 'body' } as IdSource, need: 'edit' as const }],
    after: 'forget_dataset_experiments' as const,
  },
  { ...onExperiment('POST', `${V3}/datasets/:dataset_id/remove-experiments`, 'edit', DATASET), after: 'forget_dataset_experiments' as const },

  onExperiment('POST', `${V3}/issues`, 'edit'),
  onExperiment('POST', `${V3}/issues/search`, 'read'),
  onExperiment('GET', `${V3}/issues/:issue_id`, 'read', ISSUE),
  onExperiment('PATCH', `${V3}/issues/:issue_id`, 'edit', ISSUE),

  onExperiment('POST', `${V3}/label-schemas/create`, 'edit'),
  onExperiment('GET', `${V3}/label-schemas/get-by-name`, 'read'),
  onExperiment('GET', `${V3}/label-schemas/list`, 'read'),
  // MLflow asks MANAGE to change a label schema, READ to see one.
  onExperiment('GET', `${V3}/label-schemas/get`, 'read', LABEL_SCHEMA),
  onExperiment('PATCH', `${V3}/label-schemas/update`, 'manage', LABEL_SCHEMA),
  onExperiment('DELETE', `${V3}/label-schemas/delete`, 'manage', LABEL_SCHEMA),

  onExperiment('POST', `${V3}/review-queues/create`, 'edit'),
  onExperiment('POST', `${V3}/review-queues/get-or-create-user`, 'edit'),
  { ...onExperiment('GET', `${V3}/review-queues/get-by-name`, 'read'), queueRule: 'member_or_manage' as const },
  { ...onExperiment('GET', `${V3}/review-queues/list`, 'read'), after: 'filter_review_queues' as const },
  // A queue by id, under MLflow's basic-auth rules for a server whose MLflow stamps no owner (behind
  // flowgate `created_by` stays unset, so the owner clauses never apply): opening one takes READ and
  // being assigned to it (or MANAGE); routing work in takes EDIT; reviewing takes EDIT and being
  // assigned; reshaping, deleting and pruning take MANAGE.
  { ...onExperiment('GET', `${V3}/review-queues/get`, 'read', REVIEW_QUEUE), queueRule: 'member_or_manage' as const },
  { ...onExperiment('GET', `${V3}/review-queues/items/list`, 'read', REVIEW_QUEUE), queueRule: 'member_or_manage' as const },
  onExperiment('POST', `${V3}/review-queues/items/add`, 'edit', REVIEW_QUEUE),
  {
    ...onExperiment('POST', `${V3}/review-queues/items/set-status`, 'edit', REVIEW_QUEUE),
    queueRule: 'member' as const,
    after: 'stamp_review_completed_by' as const,
  },
  { ...onExperiment('POST', `${V3}/review-queues/update`, 'manage', REVIEW_QUEUE), after: 'forget_review_queue' as const },
  { ...onExperiment('POST', `${V3}/review-queues/delete`, 'manage', REVIEW_QUEUE), after: 'forget_review_queue' as const },
  onExperiment('POST', `${V3}/review-queues/items/remove`, 'manage', REVIEW_QUEUE),

  // Scorers (judges) are a kind of their own, keyed `<experiment_id>/<name>` as MLflow's basic-auth keys
  // them, and decided on their own grants: an experiment grant stands for none of its scorers (MLflow's rule).
  // Registering needs EDIT on the experiment; a name the experiment already has gets a new version, which
  // changes that scorer: EDIT on it too. The registrant of a new scorer gets MANAGE on it.
  {
    ...onExperiment('POST', `${V3}/scorers/register`, 'edit'),
    also: [{ id: SCORER_IN_BODY, need: 'edit' as const, resource: SCORER, clientChosen: true as const }, useJudgeEndpoints('serialized_scorer'), readJudgeTraces('serialized_scorer')],
    after: 'grant_creator_scorer' as const,
  },
  // With an experiment_id, READ on it answers all its scorers (MLflow's rule); without one (every
  // experiment's), the scorers the caller may read in experiments they may read.
  authenticated('GET', `${V3}/scorers/list`, 'filter_scorer_list'),
  onScorer('GET', `${V3}/scorers/versions`, 'read'),
  onScorer('GET', `${V3}/scorers/get`, 'read'),
  // With or without a version (a version's delete is the scorer's MANAGE in MLflow too); the grants go
  // once MLflow no longer has the scorer.
  onScorer('DELETE', `${V3}/scorers/delete`, 'manage', 'auto', 'drop_scorer_grants'),
  // Online scoring runs the scorer on the experiment's traces and writes assessments there: EDIT on the
  // experiment (MLflow's rule) and on the scorer.
  { ...onScorer('PUT', `${V3}/scorers/online-config`, 'edit', 'body'), also: [{ id: experimentId('body'), need: 'edit' as const }] },
  // Keyed by scorer ids: each config is shown when the caller may read its experiment (MLflow's rule)
  // and the scorer its id names in that experiment's list.
  authenticated('GET', `${V3}/scorers/online-configs`, 'filter_online_configs'),

  // The optimization worker runs with no caller identity: it loads the source prompt, the experiment's
  // scorers the config names, the dataset and the reflection model's endpoint, so each needs the
  // caller's right (MLflow's rules; READ on the dataset is flowgate's, as the worker reads its records
  // into a run of the caller's experiment). The worker ends by registering its output as a new version
  // of the source prompt (`register_prompt(name=<source prompt>)`, straight to the database): EDIT on
  // the prompt, as creating a version of it through flowgate needs. A scorer name the worker does not
  // take as a built-in loads the experiment's registered scorer of that name at its latest version, whose
  // judge the worker runs: USE on the endpoints that judge calls, as for a registered scorer `scorer/invoke`
  // or `genai/evaluate/invoke` loads (every name MLflow has a registered scorer for is looked up, a
  // built-in's namesake too; after READ on it, so no look-up for a caller who may not read it). The job is
  // also its starter's to poll by job id.
  {
    ...startsJobs(onExperiment('POST', `${V3}/prompt-optimization/jobs`, 'edit')),
    also: [
      { id: { kind: 'prompt_uri', field: 'source_prompt_uri', from: 'body' } as IdSource, need: 'edit' as const },
      { id: { kind: 'scorer_names', field: 'config.scorers', experiment: 'experiment_id', from: 'body' } as IdSource, need: 'read' as const },
      {
        id: { kind: 'registered_scorers', shape: 'lists', field: 'config.scorers', versions: LATEST_OF_EACH, experiment: 'experiment_id', from: 'body', yields: 'judge_endpoints' } as IdSource,
        need: 'use' as const,
      },
      { id: { kind: 'dataset_id', field: 'config.dataset_id', from: 'body' } as IdSource, need: 'read' as const },
      { id: { kind: 'reflection_endpoint', field: 'config.optimizer_config_json', from: 'body' } as IdSource, need: 'use' as const },
    ],
  },
  onExperiment('POST', `${V3}/prompt-optimization/jobs/search`, 'read'),
  onExperiment('GET', `${V3}/prompt-optimization/jobs/search`, 'read'),
  // By the experiment the job was created in, as MLflow decides them.
  onExperiment('GET', `${V3}/prompt-optimization/jobs/:job_id`, 'read', OPTIMIZATION_JOB),
  onExperiment('POST', `${V3}/prompt-optimization/jobs/:job_id/cancel`, 'edit', OPTIMIZATION_JOB),
  onExperiment('DELETE', `${V3}/prompt-optimization/jobs/:job_id`, 'manage', OPTIMIZATION_JOB),
];

/*
 * The AI gateway (MLflow 3.9+), under MLflow 3.17.2 basic-auth's rules: secrets (provider credentials),
 * model definitions (a provider model on a secret) and endpoints (routing to model definitions) are
 * kinds of their own, keyed by name as mlflow-oidc-auth keys them; MLflow's routes name them by
 * generated ids (`s-…`, `d-…`, `e-…`), whose names flowgate asks MLflow for (an id MLflow does not have
 * is decided like a hidden object). USE (between READ and EDIT) spends one: builds a model definition
 * on a secret, routes an endpoint to a model definition, invokes an endpoint. The creator gets MANAGE;
 * a rename moves the grants, a delete drops them. MLflow never answers a secret's value.
 */
const GW = `${V3}/gateway`;
type GatewayId = Extract<IdSource, { kind: 'gateway_id' }>;
const gatewayId = (of: GatewayKind, field: string, from: IdLocation = 'auto', orName?: string): GatewayId =>
  orName === undefined ? { kind: 'gateway_id', of, field, from } : { kind: 'gateway_id', of, field, from, orName };
const SECRET_ID = gatewayId(GATEWAY_SECRET, 'secret_id');
const DEFINITION_ID = gatewayId(GATEWAY_MODEL_DEFINITION, 'model_definition_id');
const ENDPOINT_ID = gatewayId(GATEWAY_ENDPOINT, 'endpoint_id');
const onGateway = (method: HttpMethod, path: string, need: Need, id: GatewayId, after?: AfterHook) =>
  route(method, `${GW}/${path}`, need, id.of, id, after);
/** USE on every model definition an endpoint is routed to (all of them are replaced on update). */
const useDefinitions = (field: string) => ({ id: { kind: 'gateway_ids', of: GATEWAY_MODEL_DEFINITION, field, from: 'body' } as IdSource, need: 'use' as const });
/** USE on the secret a model definition is built on. */
const useSecret = { id: gatewayId(GATEWAY_SECRET, 'secret_id', 'body'), need: 'use' as const };
/**
 * An endpoint writes its invocations' usage traces into an experiment: one the body names needs EDIT;
 * with none named and tracking on, MLflow gets or creates `gateway/<endpoint name>` with its own
 * authority, so one that already exists needs EDIT too (MLflow's own rule only asks that the
 * experiment is not denied).
 */
const usageExperiment = (on: 'create' | 'update') => [
  { id: experimentId('body'), need: 'edit' as const },
  { id: { kind: 'usage_experiment', field: 'name', from: 'body', on } as IdSource, need: 'edit' as const, clientChosen: true as const },
];

const gatewayConfigRoutes = [
  route('POST', `${GW}/secrets/create`, 'create', GATEWAY_SECRET, NONE, 'grant_creator_gateway'),
  onGateway('GET', 'secrets/get', 'read', SECRET_ID, 'redact_gateway_answer'),
  // A secret's name cannot be changed (MLflow's update takes the value and auth config only).
  onGateway('POST', 'secrets/update', 'edit', SECRET_ID),
  onGateway('DELETE', 'secrets/delete', 'manage', SECRET_ID, 'follow_gateway'),
  authenticated('GET', `${GW}/secrets/list`, 'filter_gateway_list'),

  { ...route('POST', `${GW}/model-definitions/create`, 'create', GATEWAY_MODEL_DEFINITION, NONE, 'grant_creator_gateway'), also: [useSecret] },
  onGateway('GET', 'model-definitions/get', 'read', DEFINITION_ID, 'redact_gateway_answer'),
  { ...onGateway('POST', 'model-definitions/update', 'edit', DEFINITION_ID, 'follow_gateway'), renames: 'name', also: [useSecret] },
  onGateway('DELETE', 'model-definitions/delete', 'manage', DEFINITION_ID, 'follow_gateway'),
  // Listing the definitions built on one secret tells which use it: READ on that secret (MLflow: not denied it).
  { ...authenticated('GET', `${GW}/model-definitions/list`, 'filter_gateway_list'), also: [{ id: SECRET_ID, need: 'read' as const }] },

  {
    ...route('POST', `${GW}/endpoints/create`, 'create', GATEWAY_ENDPOINT, NONE, 'grant_creator_gateway'),
    also: [useDefinitions('model_configs.model_definition_id'), ...usageExperiment('create')],
  },
  // By id or by name (MLflow takes exactly one).
  onGateway('GET', 'endpoints/get', 'read', gatewayId(GATEWAY_ENDPOINT, 'endpoint_id', 'auto', 'name'), 'redact_gateway_answer'),
  {
    ...onGateway('POST', 'endpoints/update', 'edit', ENDPOINT_ID, 'follow_gateway'),
    renames: 'name',
    also: [useDefinitions('model_configs.model_definition_id'), ...usageExperiment('update')],
  },
  onGateway('DELETE', 'endpoints/delete', 'manage', ENDPOINT_ID, 'follow_gateway'),
  // MLflow drops a `secret_id` filter here: nothing but the rows to filter.
  authenticated('GET', `${GW}/endpoints/list`, 'filter_gateway_list'),
  {
    ...onGateway('POST', 'endpoints/models/attach', 'edit', ENDPOINT_ID, 'redact_gateway_answer'),
    also: [{ id: gatewayId(GATEWAY_MODEL_DEFINITION, 'model_config.model_definition_id', 'body'), need: 'use' as const }],
  },
  onGateway('POST', 'endpoints/models/detach', 'edit', ENDPOINT_ID),
  // Bindings record which scorers use an endpoint: MLflow's rule, EDIT on the endpoint to change them,
  // READ to list them. MLflow lists every endpoint's only to administrators; here the list without an
  // `endpoint_id` is a 400 for anyone else.
  onGateway('POST', 'endpoints/bindings/create', 'edit', ENDPOINT_ID),
  onGateway('DELETE', 'endpoints/bindings/delete', 'edit', ENDPOINT_ID),
  onGateway('GET', 'endpoints/bindings/list', 'read', ENDPOINT_ID),
  onGateway('POST', 'endpoints/set-tag', 'edit', ENDPOINT_ID),
  onGateway('DELETE', 'endpoints/delete-tag', 'edit', ENDPOINT_ID),

  // Budgets limit spend across the server: administrators only (MLflow lets anyone signed in read them;
  // flowgate keeps their reads, which name users and endpoints, to administrators too).
  ...(['budgets/create', 'budgets/update'] as const).map((path) => admin('POST', `${GW}/${path}`)),
  admin('DELETE', `${GW}/budgets/delete`),
  ...(['budgets/get', 'budgets/list', 'budgets/windows'] as const).map((path) => admin('GET', `${GW}/${path}`)),
  // Guardrails are administrators' (MLflow: standalone ones are admin-only). Attaching one to an
  // endpoint, changing its config or listing an endpoint's needs EDIT/READ on the endpoint in MLflow,
  // plus a veto on the guardrail's scorer, which lives in an experiment flowgate cannot look up from a
  // guardrail id; removing one lifts a check an administrator put on the endpoint. All stay admin-only.
  admin('POST', `${GW}/guardrails/create`),
  admin('GET', `${GW}/guardrails/get`),
  admin('DELETE', `${GW}/guardrails/delete`),
  admin('GET', `${GW}/guardrails/list`),
  admin('POST', `${GW}/guardrails/add-to-endpoint`),
  admin('DELETE', `${GW}/guardrails/remove-from-endpoint`),
  admin('GET', `${GW}/guardrails/list-for-endpoint`),
  admin('PATCH', `${GW}/guardrails/update-config`),
];

/** An endpoint invoked by its name: in the path, or as the body's `model` (one non-empty string, else 400). */
const endpointNamed = (field: string, from: IdLocation = 'param', form?: 'gemini' | 'proxy'): IdSource =>
  form === undefined ? { kind: 'gateway_name', of: GATEWAY_ENDPOINT, field, from } : { kind: 'gateway_name', of: GATEWAY_ENDPOINT, field, from, form };
const MODEL = endpointNamed('model', 'body');
const invoke = (pattern: string, id: IdSource) => route('POST', pattern, 'use', GATEWAY_ENDPOINT, id);

/** Invocations spend an endpoint's provider credentials: USE on it (MLflow's rule). Answers stream through. */
const gatewayInvocationRoutes = [
  invoke('/gateway/:endpoint_name/mlflow/invocations', endpointNamed('endpoint_name')),
  invoke('/gateway/mlflow/v1/chat/completions', MODEL),
  // The OpenAI-style model list: the endpoints the caller may invoke.
  authenticated('GET', '/gateway/mlflow/v1/models', 'filter_gateway_list'),
  invoke('/gateway/openai/v1/chat/completions', MODEL),
  invoke('/gateway/openai/v1/embeddings', MODEL),
  invoke('/gateway/typesafe/v1/systemone', MODEL),
  invoke('/gateway/openai/v1/responses', MODEL),
  invoke('/gateway/openai/v1/responses/compact', MODEL),
  invoke('/gateway/anthropic/v1/messages', MODEL),
  // `<endpoint>:generateContent` / `:streamGenerateContent`: one wildcard row, since find-my-way
  // cannot end a parameter at a `:`; anything else after `models/` is refused (400).
  invoke('/gateway/gemini/v1beta/models/*', endpointNamed('*', 'param', 'gemini')),
  // MLflow's router tries `/{endpoint}/mlflow/invocations` first: `proxy/mlflow/invocations` invokes the endpoint `proxy`.
  invoke('/gateway/proxy/:endpoint_name/*', endpointNamed('endpoint_name', 'param', 'proxy')),
];

/**
 * MLflow's workspaces: anyone lists the ones they hold a role in and reads one they belong to (the UI's
 * workspace picker); creating, changing and deleting one is for administrators.
 */
const WORKSPACE_NAMED: IdSource = { kind: 'workspace', field: 'workspace_name', from: 'param' };
const workspaceRoutes = [
  authenticated('GET', `${V3}/workspaces`, 'filter_workspaces'),
  admin('POST', `${V3}/workspaces`),
  { ...route('GET', `${V3}/workspaces/:workspace_name`, 'read'), resource: WORKSPACE, id: WORKSPACE_NAMED },
  admin('PATCH', `${V3}/workspaces/:workspace_name`),
  // MLflow's delete (any `mode`) takes every grant of the workspace and in it with it, once it succeeded.
  { ...admin('DELETE', `${V3}/workspaces/:workspace_name`), after: 'drop_workspace_grants' as const },
];

const webhookRoutes = [...adminCollection(`${V2}/webhooks`, 'webhook_id'), admin('POST', `${V2}/webhooks/:webhook_id/test`)];

const registryRoutes = [
  route('POST', `${V2}/registered-models/create`, 'create', 'model_or_prompt', modelName(), 'grant_creator_registered_model'),
  { ...onModel('POST', `${V2}/registered-models/rename`, 'edit', 'move_registered_model_grants'), renames: 'new_name' },
  onModel('PATCH', `${V2}/registered-models/update`, 'edit'),
  onModel('DELETE', `${V2}/registered-models/delete`, 'manage', 'drop_registered_model_grants'),
  onModel('GET', `${V2}/registered-models/get`, 'read'),
  authenticated('GET', `${V2}/registered-models/search`, 'filter_search_registered_models'),
  onModel('POST', `${V2}/registered-models/get-latest-versions`, 'read'),
  onModel('GET', `${V2}/registered-models/get-latest-versions`, 'read'),
  // The prompt flag (`mlflow.prompt.is_prompt`) moves a model between model and prompt grants: MANAGE on both.
  { ...onModel('POST', `${V2}/registered-models/set-tag`, 'edit'), after: 'forget_prompt_flag' as const, kindTag: 'key' },
  { ...onModel('DELETE', `${V2}/registered-models/delete-tag`, 'manage'), after: 'forget_prompt_flag' as const, kindTag: 'key' },
  onModel('POST', `${V2}/registered-models/alias`, 'edit'),
  onModel('DELETE', `${V2}/registered-models/alias`, 'manage'),
  onModel('GET', `${V2}/registered-models/alias`, 'read'),
  { ...onModel('POST', `${V2}/model-versions/create`, 'edit'), alsoReads: 'model_version_source' as const },
  onModel('PATCH', `${V2}/model-versions/update`, 'edit'),
  onModel('POST', `${V2}/model-versions/transition-stage`, 'edit'),
  onModel('DELETE', `${V2}/model-versions/delete`, 'manage'),
  onModel('GET', `${V2}/model-versions/get`, 'read'),
  authenticated('GET', `${V2}/model-versions/search`, 'filter_search_model_versions'),
  onModel('GET', `${V2}/model-versions/get-download-uri`, 'read'),
  onModel('POST', `${V2}/model-versions/set-tag`, 'edit'),
  onModel('DELETE', `${V2}/model-versions/delete-tag`, 'manage'),
];

/** Proxied artifacts (`--serve-artifacts`): the first path segment is the experiment id (the third after MLflow's `workspaces/<ws>/`). */
const artifactRoutes = [
  onExperiment('GET', `${ARTIFACTS}/artifacts/*`, 'read', artifactWildcard),
  onExperiment('PUT', `${ARTIFACTS}/artifacts/*`, 'edit', artifactWildcard),
  onExperiment('DELETE', `${ARTIFACTS}/artifacts/*`, 'manage', artifactWildcard),
  onExperiment('GET', `${ARTIFACTS}/artifacts`, 'read', { kind: 'artifact_path', field: 'path', from: 'auto' }),
  onExperiment('POST', `${ARTIFACTS}/mpu/create/*`, 'edit', artifactWildcard),
  onExperiment('POST', `${ARTIFACTS}/mpu/complete/*`, 'edit', artifactWildcard),
  onExperiment('POST', `${ARTIFACTS}/mpu/abort/*`, 'edit', artifactWildcard),
  onExperiment('GET', `${ARTIFACTS}/presigned/*`, 'read', artifactWildcard),
];

/*
 * MCP server registry (MLflow 3.15+), under MLflow 3.17.2 basic-auth's rules: a server is a kind of its
 * own keyed by its name, `<namespace>/<slug>`, which MLflow's `{name:path}` takes as the path's first two
 * segments (`:namespace/:slug`; a name MLflow would refuse, a reserved slug such as `versions` among
 * them, is a 400). Everything under a server is decided on the server, by the method, as MLflow decides
 * it for a caller holding no version-tier grant (flowgate has none): reading READ, writing EDIT,
 * deleting anything (the server, a version, an endpoint, a tag, an alias) MANAGE. Creating a server is
 * a create (the creator gets MANAGE); a first version makes its server as MLflow does (`createsMissing`).
 * Searches are filtered to readable servers. A path no row here takes (a third name segment, a
 * version holding a `/`) is unknown: refused to anyone but an administrator.
 */
const MCP = `${V3}/mcp-servers`;
const MCP_NAME: IdSource = { kind: 'mcp_server', field: 'name', from: 'param' };
const onMcpServer = (method: HttpMethod, path: string, need: Need, after?: AfterHook) =>
  route(method, `${MCP}/:namespace/:slug${path}`, need, MCP_SERVER, MCP_NAME, after);
const mcpServerRoutes = [
  route('POST', MCP, 'create', MCP_SERVER, NONE, 'grant_creator_mcp_server'),
  authenticated('GET', MCP, 'filter_search_mcp_servers'),
  authenticated('GET', `${MCP}/endpoints`, 'filter_search_mcp_endpoints'),
  onMcpServer('GET', '', 'read'),
  onMcpServer('PATCH', '', 'edit'),
  onMcpServer('DELETE', '', 'manage', 'drop_mcp_server_grants'),
  onMcpServer('GET', '/versions', 'read'),
  // A server MLflow does not have is made with its first version: whoever may create may make it.
  { ...onMcpServer('POST', '/versions', 'edit', 'make_mcp_server_parent'), createsMissing: true as const },
  onMcpServer('GET', '/versions/:version', 'read'),
  onMcpServer('PATCH', '/versions/:version', 'edit'),
  onMcpServer('DELETE', '/versions/:version', 'manage'),
  onMcpServer('POST', '/versions/:version/tags', 'edit'),
  onMcpServer('DELETE', '/versions/:version/tags/*', 'manage'),
  // An endpoint id belongs to one server: MLflow refuses one of another server's under this one.
  onMcpServer('GET', '/endpoints', 'read'),
  onMcpServer('POST', '/endpoints', 'edit'),
  onMcpServer('GET', '/endpoints/:endpoint_id', 'read'),
  onMcpServer('PATCH', '/endpoints/:endpoint_id', 'edit'),
  onMcpServer('DELETE', '/endpoints/:endpoint_id', 'manage'),
  onMcpServer('POST', '/tags', 'edit'),
  onMcpServer('DELETE', '/tags/*', 'manage'),
  onMcpServer('POST', '/aliases', 'edit'),
  onMcpServer('GET', '/aliases/*', 'read'),
  onMcpServer('DELETE', '/aliases/*', 'manage'),
];

/*
 * Skill Registry (MLflow 3.18): a Skill is a resource kind of its own, granted by its identity as MLflow's
 * basic-auth keys it: `<name>`, or `@<organization>/<name>` (src/resources/skill-identity.ts). Each row's
 * need follows the operation MLflow's auth app gives it (`_SKILL_ROUTE_OPERATIONS`): read → READ,
 * update → EDIT, manage → MANAGE; a version update setting `status` to `deleted` is a delete (MANAGE).
 * Every per-Skill path also exists with an `@<organization>` segment before the name; the identity is
 * read from the path alone, and a name or organization MLflow would refuse is a 400.
 * - search: any signed-in caller, the answer kept to the Skills they may READ (flowgate pages it);
 * - create: open like any create; the creator gets MANAGE on the Skill MLflow answers with;
 * - register (a version, or a bulk registration): EDIT on each Skill that exists; one that does not is
 *   made by the registration, which is decided as a create, and flowgate makes it first (MLflow refuses
 *   a second maker), so its MANAGE goes to the one caller whose request made it;
 * - delete: MANAGE, and the Skill's grants go with it.
 * Anything else under `/skills` matches no row: refused to non-admins.
 */
const SKILLS = `${V3}/skills`;
const SKILL_IN_PATH: IdSource = { kind: 'skill', field: 'name', from: 'param' };
/** A version update that soft-deletes it (MLflow: `status` = `deleted` makes the update a manage). */
const SKILL_VERSION_DELETED: IdSource = { kind: 'skill', field: 'name', from: 'param', when: { field: 'status', value: 'deleted' } };
type SkillOperation = 'read' | 'update' | 'manage' | 'register';
const SKILL_NEED = { read: 'read', update: 'edit', manage: 'manage', register: 'edit' } as const satisfies Record<SkillOperation, Need>;
const SKILL_ROUTES: ReadonlyArray<readonly [HttpMethod, string, SkillOperation]> = [
  ['GET', '', 'read'],
  ['PATCH', '', 'update'],
  ['DELETE', '', 'manage'],
  ['GET', '/versions', 'read'],
  ['POST', '/versions', 'register'],
  ['GET', '/versions/:version', 'read'],
  ['PATCH', '/versions/:version', 'update'],
  ['DELETE', '/versions/:version', 'manage'],
  ['POST', '/tags', 'update'],
  ['DELETE', '/tags/*', 'update'],
  ['POST', '/versions/:version/tags', 'update'],
  ['DELETE', '/versions/:version/tags/*', 'manage'],
  ['GET', '/aliases/:alias', 'read'],
  ['POST', '/aliases', 'update'],
  ['DELETE', '/aliases/:alias', 'manage'],
];
function skillRow(method: HttpMethod, pattern: string, operation: SkillOperation, path: string): RouteEntry {
  const row = route(method, pattern, SKILL_NEED[operation], SKILL, SKILL_IN_PATH);
  if (operation === 'register') return { ...row, after: 'register_skill', createsMissing: true };
  if (method === 'DELETE' && path === '') return { ...row, after: 'drop_skill_grants' };
  if (method === 'PATCH' && path === '/versions/:version') return { ...row, also: [{ id: SKILL_VERSION_DELETED, need: 'manage' }] };
  return row;
}
const skillRoutes = [
  authenticated('GET', SKILLS, 'filter_search_skills'),
  route('POST', SKILLS, 'create', SKILL, NONE, 'grant_creator_skill'),
  {
    ...route('POST', `${SKILLS}/bulk-register`, 'edit', SKILL, { kind: 'skills_registered', field: 'skills.name', from: 'body' }, 'register_skill'),
    createsMissing: true as const,
  },
  ...SKILL_ROUTES.flatMap(([method, path, operation]) =>
    [':name', '@:organization/:name'].map((name) => skillRow(method, `${SKILLS}/${name}${path}`, operation, path)),
  ),
];

const serverInfoRoutes = [publicRoute('GET', `${V3}/server-info`)];

const twinnedRoutes = withAjaxTwins([
  ...experimentRoutes,
  ...runRoutes,
  ...traceRoutes,
  ...loggedModelRoutes,
  ...genaiRoutes,
  ...gatewayConfigRoutes,
  ...workspaceRoutes,
  ...webhookRoutes,
  ...registryRoutes,
  ...artifactRoutes,
  ...mcpServerRoutes,
  ...skillRoutes,
  ...serverInfoRoutes,
]);

/** Routes MLflow registers only for its UI (no `/api/` twin). */
const ajaxOnlyRoutes = [
  onExperiment('GET', `${AJAX_V2}/metrics/get-history-bulk`, 'read', runIds('run_id')),
  onExperiment('POST', `${AJAX_V2}/experiments/search-datasets`, 'read', experimentIds()),
  onExperiment('POST', `${AJAX_V2}/runs/create-promptlab-run`, 'edit'),
  onExperiment('POST', `${AJAX_V2}/upload-artifact`, 'edit', runId('query')),
  onExperiment('GET', `${AJAX_V2}/get-trace-artifact`, 'read', traceField('request_id', 'query')),
  onExperiment('GET', `${AJAX_V3}/get-trace-artifact`, 'read', traceField('request_id', 'query')),
  onExperiment('GET', `${AJAX_V2}/logged-models/:model_id/artifacts/files`, 'read', loggedModelParam),
  // Forwards arbitrary calls to the legacy MLFLOW_DEPLOYMENTS_TARGET with the server's credentials, for
  // no endpoint flowgate could decide on. MLflow's basic-auth lets every signed-in caller through
  // (`validate_gateway_proxy`); flowgate deliberately keeps it to administrators.
  admin('GET', `${AJAX_V2}/gateway-proxy`),
  admin('POST', `${AJAX_V2}/gateway-proxy`),
  // Static capability lists backing the gateway UI: no secret material in them.
  authenticated('GET', `${AJAX_V3}/gateway/supported-providers`),
  authenticated('GET', `${AJAX_V3}/gateway/supported-models`),
  authenticated('GET', `${AJAX_V3}/gateway/provider-config`),
  // Whether secrets can be stored; whether the default passphrase encrypts them is withheld from
  // non-admins, as MLflow's `redact_secrets_config_for_non_admins` does.
  authenticated('GET', `${AJAX_V3}/gateway/secrets/config`, 'redact_secrets_config'),
  // These start MLflow jobs: flowgate records who started each one (the `jobs` rows below).
  // A registered scorer named by `scorer_name` is loaded from the experiment: READ on it (MLflow: not denied).
  // MLflow then runs its stored version `scorer_version` in place of the inline `serialized_scorer`: USE on
  // the endpoints that stored judge calls too (checked after READ: no look-up for a caller who may not read it).
  {
    ...startsJobs(onExperiment('POST', `${AJAX_V3}/scorer/invoke`, 'edit')),
    also: [
      { id: { kind: 'scorer', field: 'scorer_name', experiment: 'experiment_id', from: 'body' } as IdSource, need: 'read' as const },
      useJudgeEndpoints('serialized_scorer'),
      readJudgeTraces('serialized_scorer'),
      {
        id: { kind: 'registered_scorers', shape: 'one', field: 'scorer_name', versions: 'scorer_version', experiment: 'experiment_id', from: 'body', yields: 'judge_endpoints' } as IdSource,
        need: 'use' as const,
      },
    ],
  },
  // An entry of `serialized_scorers` whose `scorer_versions` entry is an integer is replaced by that version of
  // the experiment's scorer its `name` names: READ on each (MLflow's rule for loading one), then USE on the
  // endpoints its stored judges call, which the worker calls unseen (checked after READ: no look-up for a
  // caller who may not read the scorer).
  {
    ...startsJobs(onExperiment('POST', `${AJAX_V3}/genai/evaluate/invoke`, 'edit')),
    also: [
      useJudgeEndpoints('serialized_scorers'),
      readJudgeTraces('serialized_scorers'),
      { id: registeredScorers('scorers'), need: 'read' as const, resource: SCORER },
      { id: registeredScorers('judge_endpoints'), need: 'use' as const },
    ],
  },
  // Creates a run in the experiment; decrypts the gateway secret `secret_id` into the job it starts
  // (USE, as building a model definition on it); calls the endpoint `endpoint_name` (USE, as invoking it).
  {
    ...startsJobs(onExperiment('POST', `${AJAX_V3}/issues/invoke`, 'edit')),
    also: [useSecret, { id: endpointNamed('endpoint_name', 'body'), need: 'use' as const }],
  },
  // Writes the issue-detection schedule's state, an experiment tag the caller could also set with
  // set-experiment-tag, derived from the schedule tags the UI has just written (MLflow 3.18's own
  // auth app has no rule for it yet and refuses it to non-admins; the UI treats a refusal as "later").
  onExperiment('POST', `${AJAX_V3}/issues/schedule/state`, 'edit', experimentId('body')),
  // MLflow acts here with its own authority on shared objects: generating writes traces, runs and
  // datasets into the one "MLflow Demo" experiment whoever owns it (or whoever created one of that
  // name) and deletes and re-registers the `mlflow-demo.*` prompts; deleting hard-deletes them all.
  admin('POST', `${AJAX_V3}/demo/generate`),
  admin('POST', `${AJAX_V3}/demo/delete`),
  // A job is its starter's: read and cancelled by them (and administrators), and a search answers
  // each caller their own (MLflow's rule, by the creator only its own auth app records).
  startedJob('GET', `${AJAX_V3}/jobs/:job_id`),
  startedJob('PATCH', `${AJAX_V3}/jobs/cancel/:job_id`),
  startedJob('GET', '/ajax-api/3.0/jobs/:job_id'),
  startedJob('PATCH', '/ajax-api/3.0/jobs/cancel/:job_id'),
  authenticated('POST', '/ajax-api/3.0/jobs/search', 'filter_started_jobs'),
  // A job submitted by name runs an allowed job function with whatever params the body gives (an
  // experiment, a scorer, a secret): flowgate would have to check each function's params as the
  // route that starts it does, so submitting stays administrators' (MLflow lets anyone signed in).
  admin('POST', '/ajax-api/3.0/jobs/'),
  // The assistant runs tools on the server host.
  admin('POST', `${AJAX_V3}/assistant/message`),
  admin('GET', `${AJAX_V3}/assistant/sessions/:session_id/stream`),
  admin('PATCH', `${AJAX_V3}/assistant/sessions/:session_id`),
  admin('POST', `${AJAX_V3}/assistant/sessions/:session_id/permission`),
  admin('POST', `${AJAX_V3}/assistant/sessions/:session_id/tool-result`),
  admin('GET', `${AJAX_V3}/assistant/providers/:provider/health`),
  admin('GET', `${AJAX_V3}/assistant/providers`),
  admin('GET', `${AJAX_V3}/assistant/config`),
  admin('PUT', `${AJAX_V3}/assistant/config`),
  admin('POST', `${AJAX_V3}/assistant/skills/install`),
  admin('GET', `${AJAX_V3}/assistant/providers/:provider/models`),
  authenticated('GET', `${AJAX_V3}/ui-telemetry`),
  authenticated('POST', `${AJAX_V3}/ui-telemetry`),
];

/** Routes outside `/api/` and `/ajax-api/`. */
const rootRoutes = [
  publicRoute('GET', '/'),
  publicRoute('GET', '/static-files/*'),
  // Flask's own static route for the UI build folder (`js/build`): the same shell as /static-files.
  publicRoute('GET', '/build/*'),
  publicRoute('GET', '/health'),
  publicRoute('GET', '/version'),
  // MLflow 3.9's server info (the store type) before it moved under /api/3.0: the same answer.
  publicRoute('GET', '/server-info'),
  authenticated('GET', '/graphql', 'graphql'),
  authenticated('POST', '/graphql', 'graphql'),
  onExperiment('GET', '/get-artifact', 'read', runId('query')),
  onModel('GET', '/model-versions/get-artifact', 'read'),
  // OTLP trace export: the target experiment travels in a header.
  // Spans are merged into an existing trace of the same id wherever it lives: each is checked.
  {
    ...onExperiment('POST', '/v1/traces', 'edit', { kind: 'experiment_id', field: 'x-mlflow-experiment-id', from: 'header' }),
    also: [
      { id: { kind: 'run_id', field: 'x-mlflow-run-id', from: 'header' } as IdSource, need: 'edit' as const },
      { id: { kind: 'otlp_trace_ids', field: 'body', from: 'body' } as IdSource, need: 'edit' as const, clientChosen: true as const },
    ],
    // Root-span `mlflow.traceTag.<key>` and resource attributes become trace tags.
    guards: [{ kind: 'otlp_reserved_tags', field: 'body' }] as const,
    after: 'forget_written_traces' as const,
  },
  ...gatewayInvocationRoutes,
];

export const ROUTE_CATALOG: readonly RouteEntry[] = Object.freeze(
  [...twinnedRoutes, ...ajaxOnlyRoutes, ...rootRoutes].map((row) => Object.freeze(row)),
);
