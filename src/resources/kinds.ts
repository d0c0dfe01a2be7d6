import { KINDS, type KindSpec, type ResourceKind } from './kind-table.js';

export { KINDS, type KindSpec, type ResourceKind } from './kind-table.js';

/** Every kind, in the order lists and forms show them. */
export const RESOURCE_KINDS = Object.keys(KINDS) as readonly ResourceKind[];

export const KIND_SPECS: readonly KindSpec[] = RESOURCE_KINDS.map((k) => KINDS[k]);

export function isResourceKind(word: string): word is ResourceKind {
  return (RESOURCE_KINDS as readonly string[]).includes(word);
}

/** Whether the kind's id is its name (else MLflow is asked for the name). */
export const idIsName = (kind: ResourceKind): boolean => KINDS[kind].id === 'name';

type Spec = (typeof KINDS)[ResourceKind];

/*
 * The kinds by name, for the places that genuinely name one (a route catalog row about experiments,
 * a search answer of experiments): typed as the literal, so unions discriminated on `kind` narrow.
 */
export const EXPERIMENT = KINDS.experiment.kind;
export const REGISTERED_MODEL = KINDS.registered_model.kind;
export const PROMPT = KINDS.prompt.kind;

/** The kinds whose id is MLflow's number: their name, which name patterns match, is looked up in MLflow. */
export type NumericKind = Extract<Spec, { id: 'numeric' }>['kind'];

export const NUMERIC_KINDS = KIND_SPECS.filter((k) => k.id === 'numeric').map((k) => k.kind) as readonly NumericKind[];

/** Whether the ref's kind has a numeric id (its name looked up), narrowing a union of refs discriminated on `kind`. */
export function hasNumericId<R extends { readonly kind: ResourceKind }>(ref: R): ref is Extract<R, { readonly kind: NumericKind }> {
  return KINDS[ref.kind].id === 'numeric';
}

/** The kinds MLflow stores as a registered model, told apart by the prompt flag. */
export type ModelKind = Extract<Spec, { stored: { as: typeof REGISTERED_MODEL } }>['kind'];

export const MODEL_KINDS = KIND_SPECS.filter((k) => k.stored.as === REGISTERED_MODEL).map((k) => k.kind) as readonly ModelKind[];

const modelKindFlagged = (prompt: boolean) => MODEL_KINDS.find((k) => KINDS[k].stored.prompt === prompt)!;
const PROMPT_KIND = modelKindFlagged(true);
const MODEL_KIND = modelKindFlagged(false);

/** The kind a registered model's grants are under: its prompt flag decides. */
export function modelKind(isPrompt: boolean): ModelKind {
  return isPrompt ? PROMPT_KIND : MODEL_KIND;
}

/** A pattern grant's `resource_type` and the policy file's grant fields: the kinds' policy names. */
export type PolicyField = Spec['policyField'];

export const POLICY_FIELDS = RESOURCE_KINDS.map((k) => KINDS[k].policyField) as readonly PolicyField[];

/** The kind a policy file's field names. */
export function kindOfPolicyField(field: string): ResourceKind | undefined {
  return KIND_SPECS.find((k) => k.policyField === field)?.kind;
}

/** The kind a `flowgate` command names by one of its words. */
export function kindOfCliWord(word: string): ResourceKind | undefined {
  return KIND_SPECS.find((k) => (k.cli as readonly string[]).includes(word))?.kind;
}

/** The kind an admin API path segment (`experiments`, `registered-models`, `prompts`) names. */
export function kindOfSegment(segment: string): ResourceKind | undefined {
  return KIND_SPECS.find((k) => k.admin.segment === segment)?.kind;
}

/**
 * A resource's name as far as it is known: the id itself for a kind whose id is its name, else the
 * name MLflow answered (`null`: MLflow has no such resource; `undefined`: not looked up).
 */
export function knownName(ref: { readonly kind: ResourceKind; readonly id: string; readonly name?: string | null }): string | null | undefined {
  return idIsName(ref.kind) ? ref.id : ref.name;
}

export function isModelKind(kind: string): kind is ModelKind {
  return (MODEL_KINDS as readonly string[]).includes(kind);
}
