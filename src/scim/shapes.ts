import { createHash } from 'node:crypto';
import type { Group, User } from '../principals/types.js';
import type { ScimRecord } from './scimmy.js';

/**
 * The resource's version (`meta.version`, the ETag): a digest of what SCIM shows of it, so any
 * change to a shown attribute changes it, with no column to keep.
 */
export function versionOf(record: Record<string, unknown>): string {
  const { meta: _meta, ...shown } = record;
  return `W/"${createHash('sha256').update(JSON.stringify(shown)).digest('base64url').slice(0, 22)}"`;
}

const withMeta = (record: ScimRecord, createdAt: number): ScimRecord => ({
  ...record,
  meta: { created: new Date(createdAt).toISOString(), version: versionOf(record) },
});

/** A flowgate user as a SCIM User; `groups` are the SCIM groups they are in (the only ones SCIM shows). */
export function scimUser(user: User, groups: readonly Group[]): ScimRecord {
  return withMeta(
    {
      id: String(user.id),
      ...(user.externalId !== null ? { externalId: user.externalId } : {}),
      userName: user.username,
      // Empty when SCIM gave none or removed it: flowgate keeps no other value under this name.
      ...(user.displayName !== '' ? { displayName: user.displayName } : {}),
      active: user.disabledAt === null,
      ...(groups.length ? { groups: groups.map((g) => ({ value: String(g.id), display: g.name, type: 'direct' })) } : {}),
    },
    user.createdAt,
  );
}

export function scimGroup(group: Group, members: readonly User[], usersBase: string): ScimRecord {
  return withMeta(
    {
      id: String(group.id),
      ...(group.externalId !== null ? { externalId: group.externalId } : {}),
      displayName: group.name,
      ...(members.length ? { members: members.map((u) => ({ value: String(u.id), $ref: `${usersBase}/${u.id}`, type: 'User' })) } : {}),
    },
    group.createdAt,
  );
}

/**
 * The one attribute an `eq` filter names, when the whole filter is that comparison (what identity
 * providers send to match an account: `userName eq "…"`, `externalId eq "…"`): read straight from
 * the store instead of comparing every record.
 */
export function singleEquality(filter: { readonly length: number; readonly [i: number]: Record<string, unknown> } | undefined): { attribute: string; value: string } | undefined {
  if (!filter || filter.length !== 1) return undefined;
  const entries = Object.entries(filter[0]!);
  if (entries.length !== 1) return undefined;
  const [attribute, expression] = entries[0]!;
  if (!Array.isArray(expression) || expression.length !== 2 || String(expression[0]).toLowerCase() !== 'eq' || typeof expression[1] !== 'string') return undefined;
  return { attribute: attribute.toLowerCase(), value: expression[1] };
}
