import type { EXPERIMENT, GatewayKind, MCP_SERVER, ModelKind, PROMPT, ResourceKind, SCORER, SKILL, WORKSPACE } from '../resources/kinds.js';
import type { ResourceNeed } from '../resources/permissions.js';

export type { Permission } from '../resources/permissions.js';
export type { ResourceKind } from '../resources/kinds.js';

/** What a route needs of the caller. `create` is creating a new top-level resource. */
export type Need = 'public' | 'authenticated' | 'admin' | ResourceNeed | 'create';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

/**
 * Where a route's resource id comes from. `field` names a query/body field, a path parameter of
 * `pattern` (`from: 'param'`) or a header. `auto` = where MLflow's protobuf handlers read it: a GET's query string (its body when the query is empty), any other method's JSON body
 * (a copy only in the other place is refused); a field present in both must agree.
 */
export type IdLocation = 'auto' | 'query' | 'body' | 'param' | 'header';

export type IdSource =
  | { readonly kind: 'none' }
  | { readonly kind: 'experiment_id'; readonly field: string; readonly from: IdLocation }
  | { readonly kind: 'experiment_ids'; readonly field: string; readonly from: IdLocation }
  | { readonly kind: 'experiment_name'; readonly field: string; readonly from: IdLocation }
  /**
   * `entry`: the field is a map or a list of `{key, value}` (trace metadata), and the id is the value
   * under that key (`mlflow.sourceRun`).
   */
  | { readonly kind: 'run_id'; readonly field: string; readonly from: IdLocation; readonly alias?: string; readonly entry?: string }
  | { readonly kind: 'run_ids'; readonly field: string; readonly from: IdLocation }
  | { readonly kind: 'logged_model_id'; readonly field: string; readonly from: IdLocation }
  | { readonly kind: 'logged_model_ids'; readonly field: string; readonly from: IdLocation }
  | { readonly kind: 'trace_id'; readonly field: string; readonly from: IdLocation }
  | { readonly kind: 'trace_ids'; readonly field: string; readonly from: IdLocation }
  | { readonly kind: 'model_name'; readonly field: string; readonly from: IdLocation }
  | { readonly kind: 'model_names'; readonly field: string; readonly from: IdLocation }
  | { readonly kind: 'artifact_path'; readonly field: string; readonly from: IdLocation }
  /** An evaluation dataset: its right is the right on every experiment it belongs to (as in MLflow's basic-auth). */
  | { readonly kind: 'dataset_id'; readonly field: string; readonly from: IdLocation }
  /** The traces an OTLP export writes spans into (the body is protobuf or OTLP JSON). */
  | { readonly kind: 'otlp_trace_ids'; readonly field: 'body'; readonly from: 'body' }
  /** A GenAI issue, label schema or review queue: the experiment it belongs to. */
  | { readonly kind: 'owned_id'; readonly owner: 'issue' | 'label_schema' | 'review_queue' | 'prompt_optimization_job'; readonly field: string; readonly from: IdLocation }
  /**
   * An AI-gateway object named by MLflow's generated id (`s-…`, `d-…`, `e-…`): its grants are keyed by
   * its name, which MLflow is asked for. `orName`: a field that may name it by its name instead (MLflow
   * takes exactly one of the two).
   */
  | { readonly kind: 'gateway_id'; readonly of: GatewayKind; readonly field: string; readonly from: IdLocation; readonly orName?: string }
  /** Every AI-gateway object named by generated ids under a (dotted) field, lists walked. */
  | { readonly kind: 'gateway_ids'; readonly of: GatewayKind; readonly field: string; readonly from: IdLocation }
  /**
   * An AI-gateway endpoint named by its name: an invocation's path segment or its body's `model`, which
   * must be one non-empty string. `gemini`: the path's `<name>:generateContent` or `:streamGenerateContent`;
   * `proxy`: `proxy/<name>/<path>`, except `proxy/mlflow/invocations`, which MLflow's router reads as
   * the invocation of the endpoint `proxy`.
   */
  | { readonly kind: 'gateway_name'; readonly of: GatewayKind; readonly field: string; readonly from: IdLocation; readonly form?: 'gemini' | 'proxy' }
  /**
   * The experiment an AI-gateway endpoint's usage traces go to when the body names none: with usage
   * tracking on, MLflow gets or creates `gateway/<endpoint name>` with its own authority (`field`: the
   * endpoint's new name). `create`: tracking defaults on; `update`: only when the body turns it on for
   * an endpoint that has no experiment yet (the endpoint named by `endpoint_id`). Client-chosen: one
   * that does not exist yet needs nothing.
   */
  /** The prompt a prompt-optimization job's `source_prompt_uri` names (`prompts:/<name>/<version>`, `@<alias>`, or a name). */
  | { readonly kind: 'prompt_uri'; readonly field: string; readonly from: IdLocation }
  /** The AI-gateway endpoint an optimizer config's `reflection_model` names (`gateway:/<endpoint>`); none for another provider. */
  | { readonly kind: 'reflection_endpoint'; readonly field: string; readonly from: IdLocation }
  /** The AI-gateway endpoints the judges of serialized scorers (JSON texts under `field`) call: `model` values `gateway:/<endpoint>`. */
  | { readonly kind: 'judge_endpoints'; readonly field: string; readonly from: IdLocation }
  /** The traces the MemAlign judges of serialized scorers (JSON texts under `field`) recall by id (`episodic_trace_ids`): their experiments. */
  | { readonly kind: 'judge_traces'; readonly field: string; readonly from: IdLocation }
  | { readonly kind: 'usage_experiment'; readonly field: 'name'; readonly from: 'body'; readonly on: 'create' | 'update' }
  /**
   * A scorer, named by its name (`field`) within the experiment `experiment` names, both read where
   * MLflow reads them: its id is `<experiment_id>/<name>` (src/resources/scorer-identity.ts).
   */
  | { readonly kind: 'scorer'; readonly field: string; readonly experiment: string; readonly from: IdLocation }
  /** Every scorer a list of names (`field`) names in the experiment `experiment` names. */
  | { readonly kind: 'scorer_names'; readonly field: string; readonly experiment: string; readonly from: IdLocation }
  /**
   * The registered scorers a GenAI evaluation loads from the experiment `experiment` names: where the
   * list `versions` has an integer, MLflow loads that version of the scorer whose name is the `name` in
   * the JSON text at the same place in the list `field` (src/authz/registered-scorers.ts). `yields`:
   * the scorers themselves, or the AI-gateway endpoints their stored judges call (looked up in MLflow).
   * `shape` `one` (a scorer run, `scorer/invoke`): `field` is a string naming one scorer and `versions`
   * the integer field beside it, given together or not at all.
   */
  | {
      readonly kind: 'registered_scorers';
      readonly shape: 'lists' | 'one';
      readonly field: string;
      readonly versions: string;
      readonly experiment: string;
      readonly from: 'body';
      readonly yields: 'scorers' | 'judge_endpoints';
    }
  /**
   * A Skill named by the path: its `name` parameter, scoped by the `organization` parameter when the
   * route has one (`/skills/@<organization>/<name>/…`). `when`: named only when the body's field holds
   * that value (trimmed, in any case), as a version update setting `status` to `deleted`.
   */
  | { readonly kind: 'skill'; readonly field: 'name'; readonly from: 'param'; readonly when?: { readonly field: string; readonly value: string } }
  /** Every Skill a bulk registration names: each of the body's `skills[].name`, scoped by its `organization`. */
  | { readonly kind: 'skills_registered'; readonly field: 'skills.name'; readonly from: 'body' }
  /**
   * An MCP server named by the path: `<namespace>/<slug>`, its `namespace` and `slug` parameters (MLflow's
   * `{name:path}`, which its basic-auth also reads as the first two segments). Only the path: MLflow's
   * handlers read the name from it, and a version's `server_json.name` must repeat it or MLflow refuses.
   */
  | { readonly kind: 'mcp_server'; readonly field: 'name'; readonly from: 'param' }
  /** An MLflow workspace named by the path (`/workspaces/:workspace_name`). */
  | { readonly kind: 'workspace'; readonly field: string; readonly from: 'param' };

/**
 * A field a non-administrator may not set, because MLflow reads it as a storage location or as
 * system state: `admin_only` refuses any non-empty value; the tag forms refuse a reserved tag key
 * given as one `key` field, as a list of `{key, value}` objects, or as the keys of a map.
 */
export type FieldGuard =
  | { readonly kind: 'admin_only'; readonly field: string }
  | { readonly kind: 'reserved_tag_key'; readonly field: string }
  | { readonly kind: 'reserved_tag_list'; readonly field: string }
  | { readonly kind: 'reserved_tag_map'; readonly field: string }
  /** A name under a prefix MLflow makes names under itself (an endpoint's usage experiment: `gateway/<endpoint>`). */
  | { readonly kind: 'reserved_name_prefix'; readonly field: string; readonly prefix: string }
  /** The trace tags an OTLP export sets (root-span `mlflow.traceTag.*` and resource attributes). */
  | { readonly kind: 'otlp_reserved_tags'; readonly field: 'body' };

export type QueueRule = 'member' | 'member_or_manage';

/** Named after-response behaviours; the proxy owns their implementations. */
export type AfterHook =
  | 'grant_creator_experiment'
  | 'grant_creator_registered_model'
  | 'filter_search_experiments'
  | 'filter_search_registered_models'
  | 'filter_search_model_versions'
  | 'filter_search_logged_models'
  | 'filter_search_runs'
  | 'filter_search_traces'
  | 'drop_registered_model_grants'
  | 'move_registered_model_grants'
  | 'forget_dataset_experiments'
  | 'forget_review_queue'
  | 'stamp_review_completed_by'
  | 'filter_review_queues'
  | 'graphql'
  | 'forget_experiment_names'
  | 'forget_prompt_flag'
  | 'forget_written_traces'
  | 'filter_found_datasets'
  | 'verify_answered_experiment'
  /** The AI gateway: a creator's MANAGE (named by MLflow's answer), grants that follow a rename or delete, filtered lists and answers. */
  | 'grant_creator_gateway'
  | 'follow_gateway'
  | 'redact_gateway_answer'
  | 'filter_gateway_list'
  /** The gateway's secrets config without `using_default_passphrase` (the server's security posture), as MLflow answers non-admins. */
  | 'redact_secrets_config'
  /** Jobs: who started the jobs an answer names is recorded; a job search answers only the caller's own. */
  | 'record_job_starter'
  | 'filter_started_jobs'
  /** MLflow's workspace list: only the workspaces the caller holds a role in (MLflow's basic-auth lists those). */
  | 'filter_workspaces'
  /** A deleted workspace: every grant of it and in it dropped, once MLflow answered the delete with success. */
  | 'drop_workspace_grants'
  /** Scorers: the registrant's MANAGE, grants dropped with the scorer, lists and online configs filtered. */
  | 'grant_creator_scorer'
  | 'drop_scorer_grants'
  | 'filter_scorer_list'
  | 'filter_online_configs'
  /**
   * MCP servers: the creator's MANAGE (a server, or the one MLflow makes with its first version, which
   * flowgate makes first), grants dropped with the server, searches filtered to readable servers.
   */
  | 'grant_creator_mcp_server'
  | 'make_mcp_server_parent'
  | 'drop_mcp_server_grants'
  | 'filter_search_mcp_servers'
  | 'filter_search_mcp_endpoints'
  /**
   * Skills: the creator's MANAGE (named by MLflow's answer); a registration that makes its Skill has
   * flowgate make it first, so the grant goes to the one request that made it; a delete drops the
   * Skill's grants; the search keeps the Skills the caller may read.
   */
  | 'grant_creator_skill'
  | 'register_skill'
  | 'drop_skill_grants'
  | 'filter_search_skills';

/** One row of the route catalog: data, not code. */
export interface RouteEntry {
  readonly method: HttpMethod;
  /** find-my-way pattern relative to MLflow's root (no base path, no static prefix), e.g. `/api/2.0/mlflow/runs/get`. */
  readonly pattern: string;
  /** The resource kind the decision is about; `model_or_prompt` is told apart by the model's prompt tag. */
  readonly resource: ResourceKind | 'model_or_prompt' | 'none';
  readonly id: IdSource;
  readonly need: Need;
  readonly after?: AfterHook;
  /**
   * A second resource the request reads from, checked besides the main one: creating a model
   * version copies a run's or logged model's artifacts, so the caller must be able to read them.
   */
  readonly alsoReads?: 'model_version_source';
  /**
   * Review-queue work that also depends on the queue's assigned users (MLflow's own rule): `member`
   * = the caller must be one of them; `member_or_manage` = one of them, or MANAGE on the experiment.
   */
  readonly queueRule?: QueueRule;
  /**
   * Further ids the request may carry (the logged models metrics or inputs are attached to, the
   * traces linked to a run, the run named in an OTLP header, the prompts linked to a trace): when
   * present, each needs `need` too, on `resource` (default: the experiment the id resolves to).
   */
  readonly also?: readonly AlsoCheck[];
  /** Fields of the request non-administrators may not set (see FieldGuard). */
  readonly guards?: readonly FieldGuard[];
  /**
   * The body field holding the resource's new name: a rename that changes which name-pattern grants
   * match it grants or takes away access, so it needs MANAGE, as granting does.
   */
  readonly renames?: string;
  /**
   * The field holding the key of a tag the request sets or removes: the prompt flag decides whether
   * a registered model is governed by model or by prompt grants, so changing it needs MANAGE on both.
   */
  readonly kindTag?: string;
  /**
   * The path parameter naming an MLflow job: only the user flowgate saw start it may use the route
   * (MLflow's rule, by the creator it records; a job with no recorded starter is administrators').
   */
  readonly startedJob?: string;
  /**
   * The request makes each resource it names that MLflow does not have yet (a Skill's first version
   * registered makes the Skill): `create` decides for those (`createsMissing` rows' refs come back
   * `missing` from resolution), `need` for the ones that exist.
   */
  readonly createsMissing?: true;
}

export interface AlsoCheck {
  readonly id: IdSource;
  readonly need: ResourceNeed;
  readonly resource?: typeof EXPERIMENT | typeof PROMPT | typeof SCORER;
  /**
   * The client chooses this id and MLflow updates the object when it exists: an id that does not
   * exist yet needs nothing, one that exists must live in the experiment the request names
   * (no moving objects between experiments) and is checked as an update of it.
   */
  readonly clientChosen?: true;
}

/** A resource the decision is about, after resolution. */
export type ResourceRef =
  | {
      readonly kind: typeof EXPERIMENT;
      readonly id: string;
      /**
       * Its name as MLflow answered it (never as a client sent it): what experiment pattern grants match.
       * `null` when MLflow has no such experiment: no pattern matches it, so a missing experiment is decided
       * like a hidden one and a pattern holder cannot tell them apart.
       */
      readonly name?: string | null;
    }
  | { readonly kind: ModelKind; readonly id: string }
  | {
      readonly kind: GatewayKind;
      /** Its name (what its grants are keyed by), or, when `missing`, the generated id the request named. */
      readonly id: string;
      /**
       * The request named it by a generated id MLflow does not have: no grant or pattern bears on it, so it
       * is decided like a resource the caller holds nothing on (the same refusal), and ids are no oracle.
       */
      readonly missing?: true;
    }
  | {
      readonly kind: typeof SKILL;
      /** Its id: `<name>`, or `@<organization>/<name>` (see src/resources/skill-identity.ts). */
      readonly id: string;
      /** Only on a row that `createsMissing`: MLflow has no such Skill yet, so the request would make it. */
      readonly missing?: true;
    }
  /** A scorer: `<experiment_id>/<name>` (see src/resources/scorer-identity.ts). */
  | { readonly kind: typeof SCORER; readonly id: string }
  | {
      readonly kind: typeof MCP_SERVER;
      /** `<namespace>/<slug>` (see src/resources/mcp-server-identity.ts). */
      readonly id: string;
      /** Only on a row that `createsMissing` (a first version's create): MLflow has no such server yet. */
      readonly missing?: true;
    }
  /** A workspace itself (its membership grants): named as MLflow names it, the same in every workspace. */
  | { readonly kind: typeof WORKSPACE; readonly id: string };
