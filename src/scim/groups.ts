import { groupNameSchema } from '../admin/validation.js';
import type { Group, User } from '../principals/types.js';
import { parseId, SCIM_ACTOR, type ScimBackendDeps } from './backend-deps.js';
import { ScimError, scimErrors } from './errors.js';
import type { ResourceHandlers, ScimRecord, ScimRequestResource } from './scimmy.js';
import { matchIgnoringCase } from './caseless-filter.js';
import { scimGroup, singleEquality } from './shapes.js';

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * SCIM Groups: the groups SCIM created, and only those (origin `scim`). Groups an administrator
 * made or sign-in claims created are not the identity provider's to list, fill or delete; a SCIM
 * group's members are SCIM's alone (sign-in claims neither join nor leave it).
 */
export function scimGroups(d: ScimBackendDeps): ResourceHandlers {
  const { directory, principalWriter: writer } = d;
  const visible = (g: Group | undefined): Group | undefined => (g?.origin === 'scim' ? g : undefined);
  const notFound = (id: string | undefined) => new ScimError(404, null, `Resource ${id ?? ''} not found`);

  async function find(id: string | undefined): Promise<Group> {
    const n = parseId(id);
    const group = visible(n === undefined ? undefined : await directory.groupById(n));
    if (!group) throw notFound(id);
    return group;
  }
  const record = async (g: Group): Promise<ScimRecord> => scimGroup(g, await directory.membersOfGroup(g.id), d.usersBase);

  async function candidates(resource: ScimRequestResource): Promise<Group[]> {
    const eq = singleEquality(resource.filter);
    const one = (g: Group | undefined) => (g ? [g] : []);
    // displayName is caseExact=false (RFC 7643 §4.2); group names may be any Unicode, which SQLite's lower() does not fold.
    if (eq?.attribute === 'displayname') return (await directory.groupsFrom('scim')).filter((g) => g.name.toLowerCase() === eq.value.toLowerCase());
    if (eq?.attribute === 'externalid') return one(await directory.groupByExternalId(eq.value));
    if (eq?.attribute === 'id') return one(parseId(eq.value) === undefined ? undefined : await directory.groupById(parseId(eq.value)!));
    return directory.groupsFrom('scim');
  }

  /**
   * The displayName a create or replace sends. A name a kubernetes issuer's `namespace_group` can make
   * (any case) is that namespace's group: SCIM's members in it would take the namespace's grants and
   * workspace. Refused when SCIM would give it (create, rename); a group already holding it (made
   * before this check) is still updated.
   */
  function validName(instance: Record<string, unknown>, self?: Group): string {
    const parsed = groupNameSchema.safeParse(instance.displayName);
    if (!parsed.success) throw new ScimError(400, 'invalidValue', `displayName ${parsed.error.issues[0]?.message ?? 'is not valid'}`);
    if (parsed.data !== self?.name && d.clusterNames.isGroup(parsed.data))
      throw new ScimError(
        400,
        'invalidValue',
        `displayName ${JSON.stringify(parsed.data)} has the shape of a Kubernetes namespace's group, which only the kubernetes issuer makes (docs/machine-identity.md#scim)`,
      );
    return parsed.data;
  }

  /** The members a request names: people SCIM sees, by id; anything else is refused before any change. */
  async function membersOf(instance: Record<string, unknown>): Promise<User[]> {
    const given = Array.isArray(instance.members) ? (instance.members as Array<Record<string, unknown>>) : [];
    const users: User[] = [];
    for (const m of given) {
      const n = parseId(typeof m?.value === 'string' ? m.value : undefined);
      const user = n === undefined ? undefined : await directory.userById(n);
      if (!user || user.isServiceAccount || user.username === d.protectedAdmin)
        throw new ScimError(400, 'invalidValue', `members: no user has the id ${JSON.stringify(String(m?.value ?? '')).slice(0, 40)}`);
      if (!users.some((u) => u.id === user.id)) users.push(user);
    }
    return users;
  }

  async function holderCheck(name: string, externalId: string | null, self?: Group): Promise<void> {
    const named = await directory.groupByName(name);
    if (named && named.id !== self?.id)
      throw new ScimError(409, 'uniqueness', named.origin === 'scim' ? 'A group of that name already exists' : 'A group of that name already exists in flowgate, not made by SCIM');
    const held = externalId === null ? undefined : await directory.groupByExternalId(externalId);
    if (held && held.id !== self?.id) throw new ScimError(409, 'uniqueness', 'Another group has that externalId');
  }

  async function setMembers(group: Group, members: readonly User[]): Promise<void> {
    const before = await directory.membersOfGroup(group.id);
    for (const u of before) if (!members.some((m) => m.id === u.id)) await writer.removeMember(SCIM_ACTOR, group, u);
    for (const u of members) if (!before.some((b) => b.id === u.id)) await writer.addMember(SCIM_ACTOR, group, u);
  }

  async function create(instance: Record<string, unknown>): Promise<ScimRecord> {
    const name = validName(instance);
    const externalId = text(instance.externalId) ?? null;
    const members = await membersOf(instance);
    const group = await d.sql.transaction(async () => {
      await holderCheck(name, externalId);
      const made = await writer.createGroup(SCIM_ACTOR, name, 'scim', externalId);
      await setMembers(made, members);
      return made;
    });
    d.principalsChanged();
    return record(group);
  }

  async function replace(id: string | undefined, instance: Record<string, unknown>): Promise<ScimRecord> {
    const group = await find(id);
    const name = validName(instance, group);
    const externalId = text(instance.externalId) ?? null;
    const members = await membersOf(instance);
    await d.sql.transaction(async () => {
      await holderCheck(name, externalId, group);
      await writer.updateGroup(SCIM_ACTOR, group, name, externalId);
      await setMembers(group, members);
    });
    d.principalsChanged();
    return record((await directory.groupById(group.id))!);
  }

  return {
    egress: scimErrors(async (resource) => {
      if (resource.id !== undefined) return record(await find(resource.id));
      const groups = (await candidates(resource)).map(visible).filter((g): g is Group => g !== undefined);
      const records: ScimRecord[] = [];
      for (const g of groups) records.push(await record(g));
      return resource.filter ? matchIgnoringCase(resource.filter, records, ['displayName']) : records;
    }),
    ingress: scimErrors(async (resource, instance) => (resource.id === undefined ? create(instance) : replace(resource.id, instance))),
    // The group's grants go with it, as when an administrator deletes it; the policy index re-reads
    // once the deletion commits (the route's lock, one-at-a-time.ts).
    degress: scimErrors(async (resource) => {
      await writer.deleteGroup(SCIM_ACTOR, await find(resource.id));
    }),
  };
}
