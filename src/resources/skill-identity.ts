/**
 * A Skill's identity, as MLflow 3.18 keys it: a name, scoped by an optional organization. flowgate's id
 * for one is MLflow's own resource key (`_format_skill_registry_resource_key`): `<name>` without an
 * organization, `@<organization>/<name>` with one. A name is lowercase letters, digits and single
 * hyphens, so it never starts with `@` nor holds a `/`: the two forms cannot collide, and each Skill
 * has exactly one id. Anything MLflow would refuse as a name or organization is refused here too
 * (a 400 before MLflow sees it), so no other spelling (`Reviewer`, `%40acme`, `acme/`) reaches a decision.
 */

/** MLflow's `_SKILL_NAME_REGEX`, 1-64 characters. */
const NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
/** MLflow's `_ORGANIZATION_NAME_REGEX`, 1-64 characters. */
const ORGANIZATION = /^[a-z0-9]+(?:[-.][a-z0-9]+)*$/;
const MAX_LENGTH = 64;

export interface SkillIdentity {
  /** '' for a Skill without an organization. */
  readonly organization: string;
  readonly name: string;
}

/** Why MLflow would refuse this name as a Skill's, or undefined when it takes it. */
export function skillNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name === '') return 'a Skill name must be a non-empty string';
  if (name.length > MAX_LENGTH || !NAME.test(name))
    return `invalid Skill name '${name}': 1-64 lowercase ASCII letters, digits and single hyphens, not starting or ending with a hyphen`;
  return undefined;
}

/** Why MLflow would refuse this organization, or undefined when it takes it ('' is none). */
export function organizationProblem(organization: unknown): string | undefined {
  if (organization === '') return undefined;
  if (typeof organization !== 'string') return 'a Skill organization must be a string';
  if (organization.length > MAX_LENGTH || !ORGANIZATION.test(organization))
    return `invalid organization '${organization}': 1-64 lowercase ASCII letters, digits, hyphens and periods, alphanumeric first and last, no two separators in a row`;
  return undefined;
}

/** The id of the Skill (organization '' for none). */
export const skillId = ({ organization, name }: SkillIdentity): string => (organization === '' ? name : `@${organization}/${name}`);

/** The identity an id names, or undefined when it is not the id of any Skill MLflow could have. */
export function parseSkillId(id: string): SkillIdentity | undefined {
  let organization = '';
  let name = id;
  if (id.startsWith('@')) {
    const slash = id.indexOf('/');
    if (slash < 0) return undefined;
    organization = id.slice(1, slash);
    name = id.slice(slash + 1);
    if (organization === '') return undefined;
  }
  return skillNameProblem(name) === undefined && organizationProblem(organization) === undefined ? { organization, name } : undefined;
}

/** Why the text is not a Skill's id, or undefined when it is one. */
export function skillIdProblem(id: string): string | undefined {
  if (parseSkillId(id) !== undefined) return undefined;
  return `'${id}' is not a Skill: write <name>, or @<organization>/<name> (lowercase letters, digits and hyphens; an organization may also hold periods)`;
}

/** The id's place in MLflow's Skill paths: `/<name>` or `/@<organization>/<name>` (both need no encoding). */
export function skillPathOf(id: string): string {
  const identity = parseSkillId(id);
  if (identity === undefined) throw new Error(`not a Skill id: ${id}`);
  return identity.organization === '' ? `/${identity.name}` : `/@${identity.organization}/${identity.name}`;
}
