import { UsageError } from './connection.js';

/** The three kinds of resource grants name, as the admin API spells them. */
export interface Kind {
  readonly kind: 'experiment' | 'registered_model' | 'prompt';
  /** The path segment: `experiments`, `registered-models`, `prompts`. */
  readonly segment: string;
  /** The field naming the resource in the API's grant JSON. */
  readonly idField: 'experiment_id' | 'name';
}

export const KINDS: readonly Kind[] = [
  { kind: 'experiment', segment: 'experiments', idField: 'experiment_id' },
  { kind: 'registered_model', segment: 'registered-models', idField: 'name' },
  { kind: 'prompt', segment: 'prompts', idField: 'name' },
];

const ALIASES: Record<string, Kind> = {
  experiment: KINDS[0]!,
  experiments: KINDS[0]!,
  model: KINDS[1]!,
  models: KINDS[1]!,
  'registered-model': KINDS[1]!,
  registered_model: KINDS[1]!,
  prompt: KINDS[2]!,
  prompts: KINDS[2]!,
};

export function kindNamed(word: string): Kind {
  const k = ALIASES[word];
  if (!k) throw new UsageError(`unknown resource kind '${word}': use experiment, model or prompt`);
  return k;
}

export const PERMISSIONS = ['READ', 'EDIT', 'MANAGE', 'NO_PERMISSIONS'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export function permissionNamed(word: string): Permission {
  const p = word.toUpperCase();
  if (!(PERMISSIONS as readonly string[]).includes(p)) throw new UsageError(`unknown permission '${word}': use ${PERMISSIONS.join(', ')}`);
  return p as Permission;
}
