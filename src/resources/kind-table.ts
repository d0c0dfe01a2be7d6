import { PERMISSIONS, PERMISSIONS_WITHOUT_USE, type Permission } from './permissions.js';

const GATEWAY = '/api/3.0/mlflow/gateway';
const SKILLS = '/api/3.0/mlflow/skills';
const MCP_SERVERS = '/api/3.0/mlflow/mcp-servers';
const WORKSPACES = '/api/3.0/mlflow/workspaces';

/**
 * Every kind of resource flowgate keeps grants on, declared once, as data. A kind added here and not
 * to `KINDS` is a compile error; `test/unit/resource-kinds.test.ts` walks `KINDS` and fails for any
 * consumer (store, admin API, CLI, policy file, UI, orphan detection, metrics) that does not take it.
 * Everything derived from the table is in `kinds.ts`.
 */
export type ResourceKind = 'experiment' | 'registered_model' | 'prompt' | 'gateway_secret' | 'gateway_model_definition' | 'gateway_endpoint' | 'skill' | 'scorer' | 'mcp_server' | 'workspace';

export interface KindSpec<K extends ResourceKind = ResourceKind> {
  readonly kind: K;
  /**
   * How its id looks: MLflow's `numeric` experiment ids, or a `name` (a registered model's or prompt's
   * name is its id: name patterns match the id itself, and the policy file shows it as it is), or
   * `in_experiment`: `<experiment_id>/<name>`, a name that is unique within its experiment (a scorer's),
   * which name patterns match whole (`12/*`: every one in experiment 12).
   */
  readonly id: 'numeric' | 'name' | 'in_experiment';
  /** The MLflow object it is: a prompt is a registered model tagged `mlflow.prompt.is_prompt`. */
  readonly stored: { readonly as: 'experiment' | 'registered_model' | 'gateway' | 'skill' | 'scorer' | 'mcp_server' | 'workspace'; readonly prompt: boolean };
  /**
   * How flowgate learns from MLflow that it exists (only RESOURCE_DOES_NOT_EXIST means gone) and,
   * for a numeric id, what it is called: the look-up's query parameter and where its answer has the name.
   * A kind MLflow gets only by its generated id is found by name in its list (`list`: the answer's
   * field, `nameField`: each row's name). A kind MLflow gets by its id in the path (`<path>/<id>`, a
   * Skill's `@<organization>/<name>` as two segments) has `inPath`.
   */
  readonly lookup:
    | {
        readonly path: string;
        readonly param: string;
        readonly name?: readonly [string, string];
        /** An `in_experiment` id: the query parameter taking its experiment (`param` takes the name). */
        readonly experiment?: string;
      }
    | { readonly path: string; readonly list: string; readonly nameField: string }
    | { readonly path: string; readonly inPath: true };
  /**
   * A kind keyed by name whose MLflow routes name it by a generated id (`e-…`, `s-…`, `d-…`): the id's
   * field, and the call that answers the name for it (where in the answer).
   */
  readonly generatedId?: { readonly field: string; readonly path: string; readonly name: readonly [string, string] };
  /** The permissions a grant on it may give, in their order. */
  readonly permissions: readonly Permission[];
  /** The admin API's grant paths, as mlflow-oidc-auth spells them: `permissions/users/<u>/<segment>/<:param>`; `param` is also the grant JSON's id field. */
  readonly admin: {
    readonly segment: string;
    readonly param: string;
    /**
     * An `in_experiment` id's experiment: the path parameter before `param` (`…/scorers/:experiment_id/:scorer_name`,
     * as mlflow-oidc-auth spells it), and the grant JSON's field for it beside `param`'s.
     */
    readonly experiment?: string;
    /**
     * A name holding one `/` (an MCP server's `<namespace>/<slug>`): the path parameter taking the part
     * before it, ahead of `param` (`…/mcp-servers/:namespace/:name`); the grant JSON has the name whole.
     */
    readonly namespace?: string;
  };
  /** The words `flowgate` commands accept for it, the one shown in help first. */
  readonly cli: readonly [string, ...string[]];
  /** The policy file's field naming a grant's resource, and a pattern grant's `resource_type`. */
  readonly policyField: string;
  /** The Manage screens: their route, their title, and the word for one. */
  readonly ui: { readonly route: string; readonly title: string; readonly one: string };
  /** Its `resource_type` label on the decision metrics. */
  readonly metricLabel: string;
  /**
   * Its id is scoped by an organization, as MLflow keys Skills: `<name>` without one, `@<organization>/<name>`
   * with one (a name never starts with `@` nor holds a `/`, so the two forms cannot collide). Paths carry
   * the scoped form as two segments (`…/skills/@acme/reviewer`), the admin API's grant paths too.
   */
  readonly scoped?: 'organization';
  /**
   * Its grants hold across MLflow's workspaces (a workspace's own membership): every other kind's are
   * keyed in the workspace they were made in (src/workspaces/names.ts).
   */
  readonly global?: true;
}

export const KINDS = {
  experiment: {
    kind: 'experiment',
    id: 'numeric',
    stored: { as: 'experiment', prompt: false },
    lookup: { path: '/api/2.0/mlflow/experiments/get', param: 'experiment_id', name: ['experiment', 'name'] },
    permissions: PERMISSIONS_WITHOUT_USE,
    admin: { segment: 'experiments', param: 'experiment_id' },
    cli: ['experiment', 'experiments'],
    policyField: 'experiment',
    ui: { route: 'experiments', title: 'Experiments', one: 'experiment' },
    metricLabel: 'experiment',
  },
  registered_model: {
    kind: 'registered_model',
    id: 'name',
    stored: { as: 'registered_model', prompt: false },
    lookup: { path: '/api/2.0/mlflow/registered-models/get', param: 'name' },
    permissions: PERMISSIONS_WITHOUT_USE,
    admin: { segment: 'registered-models', param: 'name' },
    cli: ['model', 'models', 'registered-model', 'registered_model'],
    policyField: 'registered_model',
    ui: { route: 'models', title: 'Registered models', one: 'registered model' },
    metricLabel: 'registered_model',
  },
  prompt: {
    kind: 'prompt',
    id: 'name',
    stored: { as: 'registered_model', prompt: true },
    lookup: { path: '/api/2.0/mlflow/registered-models/get', param: 'name' },
    permissions: PERMISSIONS_WITHOUT_USE,
    admin: { segment: 'prompts', param: 'name' },
    cli: ['prompt', 'prompts'],
    policyField: 'prompt',
    ui: { route: 'prompts', title: 'Prompts', one: 'prompt' },
    metricLabel: 'prompt',
  },
  gateway_secret: {
    kind: 'gateway_secret',
    id: 'name',
    stored: { as: 'gateway', prompt: false },
    lookup: { path: `${GATEWAY}/secrets/list`, list: 'secrets', nameField: 'secret_name' },
    generatedId: { field: 'secret_id', path: `${GATEWAY}/secrets/get`, name: ['secret', 'secret_name'] },
    permissions: PERMISSIONS,
    admin: { segment: 'gateways/secrets', param: 'name' },
    cli: ['gateway-secret', 'gateway-secrets'],
    policyField: 'gateway_secret',
    ui: { route: 'gateway-secrets', title: 'Gateway secrets', one: 'gateway secret' },
    metricLabel: 'gateway_secret',
  },
  gateway_model_definition: {
    kind: 'gateway_model_definition',
    id: 'name',
    stored: { as: 'gateway', prompt: false },
    lookup: { path: `${GATEWAY}/model-definitions/list`, list: 'model_definitions', nameField: 'name' },
    generatedId: { field: 'model_definition_id', path: `${GATEWAY}/model-definitions/get`, name: ['model_definition', 'name'] },
    permissions: PERMISSIONS,
    admin: { segment: 'gateways/model-definitions', param: 'name' },
    cli: ['gateway-model-definition', 'gateway-model-definitions', 'model-definition'],
    policyField: 'gateway_model_definition',
    ui: { route: 'gateway-model-definitions', title: 'Gateway model definitions', one: 'gateway model definition' },
    metricLabel: 'gateway_model_definition',
  },
  gateway_endpoint: {
    kind: 'gateway_endpoint',
    id: 'name',
    stored: { as: 'gateway', prompt: false },
    lookup: { path: `${GATEWAY}/endpoints/get`, param: 'name' },
    generatedId: { field: 'endpoint_id', path: `${GATEWAY}/endpoints/get`, name: ['endpoint', 'name'] },
    permissions: PERMISSIONS,
    admin: { segment: 'gateways/endpoints', param: 'name' },
    cli: ['gateway-endpoint', 'gateway-endpoints', 'endpoint'],
    policyField: 'gateway_endpoint',
    ui: { route: 'gateway-endpoints', title: 'Gateway endpoints', one: 'gateway endpoint' },
    metricLabel: 'gateway_endpoint',
  },
  skill: {
    kind: 'skill',
    id: 'name',
    stored: { as: 'skill', prompt: false },
    lookup: { path: SKILLS, inPath: true },
    // MLflow 3.18 gives Skills READ, EDIT and MANAGE: no Skill operation spends one (no USE).
    permissions: PERMISSIONS_WITHOUT_USE,
    admin: { segment: 'skills', param: 'name' },
    cli: ['skill', 'skills'],
    policyField: 'skill',
    ui: { route: 'skills', title: 'Skills', one: 'skill' },
    metricLabel: 'skill',
    scoped: 'organization',
  },
  scorer: {
    kind: 'scorer',
    id: 'in_experiment',
    stored: { as: 'scorer', prompt: false },
    lookup: { path: '/api/3.0/mlflow/scorers/get', param: 'name', experiment: 'experiment_id' },
    // MLflow's basic-auth reads a scorer's READ, EDIT and MANAGE (and DELETE's MANAGE), never its USE:
    // a USE grant there would read as READ, so scorers take the levels experiments take.
    permissions: PERMISSIONS_WITHOUT_USE,
    admin: { segment: 'scorers', param: 'scorer_name', experiment: 'experiment_id' },
    cli: ['scorer', 'scorers', 'judge', 'judges'],
    policyField: 'scorer',
    ui: { route: 'scorers', title: 'Scorers', one: 'scorer' },
    metricLabel: 'scorer',
  },
  mcp_server: {
    kind: 'mcp_server',
    id: 'name',
    stored: { as: 'mcp_server', prompt: false },
    // `<namespace>/<slug>` in the path (src/resources/mcp-server-identity.ts).
    lookup: { path: MCP_SERVERS, inPath: true },
    // MLflow 3.17.2 stores a USE grant on an MCP server, but no MCP route asks for USE (it reads as
    // READ): MCP servers take the levels experiments take.
    permissions: PERMISSIONS_WITHOUT_USE,
    admin: { segment: 'mcp-servers', param: 'name', namespace: 'namespace' },
    cli: ['mcp-server', 'mcp-servers', 'mcp'],
    policyField: 'mcp_server',
    ui: { route: 'mcp-servers', title: 'MCP servers', one: 'MCP server' },
    metricLabel: 'mcp_server',
  },
  workspace: {
    kind: 'workspace',
    id: 'name',
    stored: { as: 'workspace', prompt: false },
    lookup: { path: WORKSPACES, inPath: true },
    // Membership, as MLflow's basic-auth and mlflow-oidc-auth grant it: USE reads what is in the
    // workspace at the default permission and creates in it; MANAGE is its administrator.
    permissions: ['USE', 'MANAGE'],
    admin: { segment: 'workspaces', param: 'workspace' },
    cli: ['workspace', 'workspaces'],
    policyField: 'workspace',
    ui: { route: 'workspaces', title: 'Workspaces', one: 'workspace' },
    metricLabel: 'workspace',
    global: true,
  },
} as const satisfies { readonly [K in ResourceKind]: KindSpec<K> };
