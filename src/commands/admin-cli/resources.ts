import { KIND_SPECS, kindOfCliWord, KINDS as SPECS, permissionRefusal, type ResourceKind } from '../../resources/kinds.js';
import { isPermission, PERMISSIONS, type Permission } from '../../resources/permissions.js';
import { UsageError } from './connection.js';

export { PERMISSIONS, type Permission };

/** The kinds' words for usage lines: `experiment|model|prompt|gateway-secret|…` (each kind's first word). */
export const KIND_WORDS = KIND_SPECS.map((k) => k.cli[0]).join('|');

/** The kinds a USE grant may be on, for usage lines. */
export const USE_KIND_WORDS = KIND_SPECS.filter((k) => (k.permissions as readonly string[]).includes('USE')).map((k) => k.cli[0]).join('|');

/** A kind of resource grants name, as the admin API spells it. */
export interface Kind {
  readonly kind: ResourceKind;
  /** The path segment: `experiments`, `registered-models`, `prompts`. */
  readonly segment: string;
  /** The field naming the resource in the API's grant JSON. */
  readonly idField: string;
}

export const kindShape = (kind: ResourceKind): Kind => ({ kind, segment: SPECS[kind].admin.segment, idField: SPECS[kind].admin.param });

export const KINDS: readonly Kind[] = KIND_SPECS.map((k) => kindShape(k.kind));

export function kindNamed(word: string): Kind {
  const kind = kindOfCliWord(word);
  if (kind === undefined) throw new UsageError(`unknown resource kind '${word}': use ${orList(KIND_SPECS.map((k) => k.cli[0]))}`);
  return kindShape(kind);
}

const orList = (words: readonly string[]) => (words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`);

/** A permission by its word (any case); with a kind, one a grant on that kind may give (USE only on the gateway's kinds). */
export function permissionNamed(word: string, kind?: Kind): Permission {
  const p = word.toUpperCase();
  if (!isPermission(p)) throw new UsageError(`unknown permission '${word}': use ${PERMISSIONS.join(', ')}`);
  const refusal = kind && permissionRefusal(kind.kind, p);
  if (refusal !== undefined) throw new UsageError(refusal);
  return p;
}
