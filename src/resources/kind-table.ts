import { PERMISSIONS, type Permission } from './permissions.js';

/**
 * Every kind of resource flowgate keeps grants on, declared once, as data. A kind added here and not
 * to `KINDS` is a compile error; `test/unit/resource-kinds.test.ts` walks `KINDS` and fails for any
 * consumer (store, admin API, CLI, policy file, UI, orphan detection, metrics) that does not take it.
 * Everything derived from the table is in `kinds.ts`.
 */
export type ResourceKind = 'experiment' | 'registered_model' | 'prompt';

export interface KindSpec<K extends ResourceKind = ResourceKind> {
  readonly kind: K;
  /**
   * How its id looks: MLflow's `numeric` experiment ids, or a `name` (a registered model's or prompt's
   * name is its id: name patterns match the id itself, and the policy file shows it as it is).
   */
  readonly id: 'numeric' | 'name';
  /** The MLflow object it is: a prompt is a registered model tagged `mlflow.prompt.is_prompt`. */
  readonly stored: { readonly as: 'experiment' | 'registered_model'; readonly prompt: boolean };
  /**
   * How flowgate learns from MLflow that it exists (only RESOURCE_DOES_NOT_EXIST means gone) and,
   * for a numeric id, what it is called: the look-up's query parameter and where its answer has the name.
   */
  readonly lookup: { readonly path: string; readonly param: string; readonly name?: readonly [string, string] };
  /** The permissions a grant on it may give, in their order. */
  readonly permissions: readonly Permission[];
  /** The admin API's grant paths, as mlflow-oidc-auth spells them: `permissions/users/<u>/<segment>/<:param>`; `param` is also the grant JSON's id field. */
  readonly admin: { readonly segment: string; readonly param: string };
  /** The words `flowgate` commands accept for it, the one shown in help first. */
  readonly cli: readonly [string, ...string[]];
  /** The policy file's field naming a grant's resource, and a pattern grant's `resource_type`. */
  readonly policyField: string;
  /** The Manage screens: their route, their title, and the word for one. */
  readonly ui: { readonly route: string; readonly title: string; readonly one: string };
  /** Its `resource_type` label on the decision metrics. */
  readonly metricLabel: string;
}

export const KINDS = {
  experiment: {
    kind: 'experiment',
    id: 'numeric',
    stored: { as: 'experiment', prompt: false },
    lookup: { path: '/api/2.0/mlflow/experiments/get', param: 'experiment_id', name: ['experiment', 'name'] },
    permissions: PERMISSIONS,
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
    permissions: PERMISSIONS,
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
    permissions: PERMISSIONS,
    admin: { segment: 'prompts', param: 'name' },
    cli: ['prompt', 'prompts'],
    policyField: 'prompt',
    ui: { route: 'prompts', title: 'Prompts', one: 'prompt' },
    metricLabel: 'prompt',
  },
} as const satisfies { readonly [K in ResourceKind]: KindSpec<K> };
