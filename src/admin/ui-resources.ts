import { z } from 'zod';
import { effectivePermission } from '../authz/decide.js';
import type { Permission, ResourceKind, ResourceRef } from '../authz/types.js';
import { badRequest } from '../errors.js';
import type { User } from '../principals/types.js';
import type { AdminDeps, AdminRoute } from './types.js';
import { paged, pageQuery, readQuery } from './ui-query.js';
import { experimentIdSchema, modelNameSchema, parseWith } from './validation.js';

/** The Manage screens' view of one resource: its grants, and each concerned user's effective permission and why. */
const KINDS = [
  { kind: 'experiment', segment: 'experiments', param: 'experiment_id', idSchema: experimentIdSchema },
  { kind: 'registered_model', segment: 'registered-models', param: 'name', idSchema: modelNameSchema },
  { kind: 'prompt', segment: 'prompts', param: 'name', idSchema: modelNameSchema },
] as const;

const REASON_SOURCE = {
  'direct-grant': 'direct',
  'group-grant': 'group',
  'group-deny': 'group',
  'pattern-grant': 'pattern',
  'group-pattern-grant': 'pattern',
  'group-pattern-deny': 'pattern',
  'default-permission': 'default',
} as const;

/** A user's effective permission on a resource and where it comes from, by the decision rule itself. */
export async function explain(deps: AdminDeps, user: User, kind: ResourceKind, id: string) {
  const who = { username: user.username, is_admin: user.isAdmin, is_service_account: user.isServiceAccount };
  if (user.isAdmin) return { ...who, permission: 'MANAGE' as Permission, source: 'admin' as const, groups: [] as string[] };
  const direct = await deps.grants.get({ type: 'user', id: user.id }, kind, id);
  const groupGrants: Array<{ group: string; permission: Permission }> = [];
  const memberOf = await deps.directory.groupsOfUser(user.id);
  for (const g of memberOf) {
    const p = await deps.grants.get({ type: 'group', id: g.id }, kind, id);
    if (p !== undefined) groupGrants.push({ group: g.name, permission: p });
  }
  const own = { direct, groups: groupGrants.map((g) => g.permission) };
  // Pattern grants count only where the resource has no grant of the user's own (see withPatterns).
  const facts =
    direct === undefined && groupGrants.length === 0 && deps.patternFactsFor
      ? await deps.patternFactsFor({ userId: user.id, groupIds: memberOf.map((g) => g.id) }, { kind, id } as ResourceRef)
      : own;
  const { permission, reason } = effectivePermission(facts, deps.defaultPermission ?? 'NO_PERMISSIONS');
  const source = REASON_SOURCE[reason as keyof typeof REASON_SOURCE] ?? 'default';
  const groups = source === 'group' ? groupGrants.filter((g) => g.permission === permission).map((g) => g.group) : [];
  return { ...who, permission, source, groups };
}

const effectiveQuery = pageQuery.extend({ username: z.string().max(128).optional() });
const mineQuery = z.object({ id: z.array(z.string()).min(1).max(200) });

function routesFor(k: (typeof KINDS)[number]): AdminRoute[] {
  const base = `/mlflow/permissions/ui/${k.segment}/:${k.param}`;
  const resource = { kind: k.kind, param: k.param };
  const idOf = (params: Record<string, string>) => parseWith(k.idSchema, params[k.param], `${k.param} in the path`);
  return [
    {
      method: 'GET',
      path: `${base}/grants`,
      summary: `Every grant on a ${k.kind.replace('_', ' ')} (users, service accounts, groups), searchable and paged`,
      access: 'manage',
      resource,
      handler: async (req, deps) => {
        const id = idOf(req.params);
        const q = readQuery(pageQuery, req.query);
        const rows = await deps.grants.searchOnResource(k.kind, id, q.q, q.max_results + 1, q.page_token);
        const page = paged(rows, q);
        return { status: 200, body: { grants: page.rows, ...(page.next_page_token ? { next_page_token: page.next_page_token } : {}) } };
      },
    },
    {
      method: 'GET',
      path: `${base}/effective`,
      summary: `Each user a grant on a ${k.kind.replace('_', ' ')} concerns (directly or through a group), or one named user: the effective permission and why`,
      access: 'manage',
      resource,
      handler: async (req, deps) => {
        const id = idOf(req.params);
        const q = readQuery(effectiveQuery, req.query);
        if (q.username !== undefined) {
          const user = await deps.directory.userByName(q.username);
          return { status: 200, body: { users: user ? [await explain(deps, user, k.kind, id)] : [] } };
        }
        const rows = await deps.grants.concernedUsers(k.kind, id, q.q, q.max_results + 1, q.page_token);
        const page = paged(rows, q);
        const users = await Promise.all(page.rows.map(async (userId) => explain(deps, (await deps.directory.userById(userId))!, k.kind, id)));
        return { status: 200, body: { users, ...(page.next_page_token ? { next_page_token: page.next_page_token } : {}) } };
      },
    },
  ];
}

/** The caller's own effective permission on a page of resources (for the lists: which ones they may manage). */
const MINE: AdminRoute = {
  method: 'GET',
  path: '/mlflow/permissions/ui/my-permissions/:kind',
  summary: "The caller's effective permission on each listed resource (query: id, repeated)",
  access: 'authenticated',
  handler: async (req, deps) => {
    const k = KINDS.find((x) => x.segment === req.params.kind);
    if (!k) throw badRequest(`Unknown resource kind '${req.params.kind}'; use experiments, registered-models or prompts`);
    const { id: ids } = parseWith(mineQuery, { id: req.query.getAll('id') }, 'query string');
    const me = await deps.directory.userByName(req.principal.username);
    if (!me) return { status: 200, body: { permissions: {} } };
    const permissions: Record<string, { permission: Permission; source: string; groups: string[] }> = {};
    for (const raw of ids) {
      const id = parseWith(k.idSchema, raw, 'id');
      const e = await explain(deps, me, k.kind, id);
      permissions[id] = { permission: e.permission, source: e.source, groups: e.groups };
    }
    return { status: 200, body: { permissions } };
  },
};

export const UI_RESOURCE_ROUTES: readonly AdminRoute[] = [...KINDS.flatMap(routesFor), MINE];
