import { UsageError } from './connection.js';

/** Who a grant is for, as the admin API's path names them. */
export interface Grantee {
  readonly segment: 'users' | 'groups';
  readonly name: string;
}

export const GRANTEE_OPTIONS = { user: { type: 'string' }, group: { type: 'string' } } as const;

/** The grantee of `--user` or `--group`; undefined when neither is given and `required` is false. */
export function granteeOf(values: Record<string, unknown>, required: false): Grantee | undefined;
export function granteeOf(values: Record<string, unknown>, required?: true): Grantee;
export function granteeOf(values: Record<string, unknown>, required = true): Grantee | undefined {
  const user = values.user as string | undefined;
  const group = values.group as string | undefined;
  if (user !== undefined && group !== undefined) throw new UsageError('name exactly one of --user USERNAME or --group GROUP');
  if (user !== undefined) return { segment: 'users', name: user };
  if (group !== undefined) return { segment: 'groups', name: group };
  if (required) throw new UsageError('name exactly one of --user USERNAME or --group GROUP');
  return undefined;
}

export const granteeWords = (g: Grantee) => `${g.segment === 'users' ? 'user' : 'group'} ${g.name}`;
