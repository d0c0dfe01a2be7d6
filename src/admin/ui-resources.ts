import { z } from 'zod';
import type { ConcernedUser } from '../authz/grants-repo.js';
import type { Permission, ResourceKind, ResourceRef } from '../authz/types.js';
import { badRequest, FlowgateError } from '../errors.js';
import type { User } from '../principals/types.js';
import { adminIdOf, adminIdPath, KIND_SPECS, withArticle } from '../resources/kinds.js';
import { permits } from '../resources/permissions.js';
import type { GrantReason, WorkspaceReason } from '../resources/reasons.js';
import type { EffectiveAnswer, EffectiveSource, MyPermission, MyPermissionsAnswer, PageRows, ResourceGrantsAnswer } from './api-types.js';
import type { AdminDeps, AdminRequest, AdminResult, AdminRoute } from './types.js';
import { listPage, paged, pageQuery, readQuery } from './ui-query.js';
import { heldIdSchema, parseWith } from './validation.js';

/** The Manage screens' view of one resource: its grants, and each concerned user's effective permission and why. */
const KIND_SHAPES = KIND_SPECS.map((k) => ({
  kind: k.kind,
  segment: k.admin.segment,
  param: k.admin.param,
  label: k.ui.one,
  // Reads only: a name MLflow refuses (a grant kept from before its rules were checked, an old MLflow's name) still answers.
  idSchema: heldIdSchema(k.kind),
}));

const REASON_SOURCE = {
  'direct-grant': 'direct',
  'group-grant': 'group',
  'group-deny': 'group',
  'pattern-grant': 'pattern',
  'group-pattern-grant': 'pattern',
  'group-pattern-deny': 'pattern',
  'default-permission': 'default',
  'workspace-manage': 'workspace',
  'workspace-non-member': 'default',
} as const satisfies Record<GrantReason | WorkspaceReason, EffectiveSource>;

const withGroups = async (deps: AdminDeps, user: User): Promise<ConcernedUser> => ({ ...user, groups: await deps.directory.groupsOfUser(user.id) });

/** A user's effective permission on a resource and where it comes from, as the gate decides it (`effectiveOn`). */
export async function explain(deps: AdminDeps, user: ConcernedUser, kind: ResourceKind, id: string) {
  const who = { username: user.username, is_admin: user.isAdmin, is_service_account: user.isServiceAccount };
  if (user.isAdmin) return { ...who, permission: 'MANAGE' as Permission, source: 'admin' as const, groups: [] as string[] };
  const { permission, reason, decidingGroupIds } = await deps.effectiveOn({ userId: user.id, groupIds: user.groups.map((g) => g.id) }, { kind, id } as ResourceRef);
  const source = REASON_SOURCE[reason];
  const deciding = new Set(decidingGroupIds);
  const groups = user.groups.filter((g) => deciding.has(g.id)).map((g) => g.name);
  return { ...who, permission, source, groups };
}

/**
 * What a manager who is not an administrator sees of who may use their resource: the grants on it,
 * user by user, as those grants give it. Never a user's groups, administrator or service-account
 * standing beyond the grant shown, nor anything about a user holding no grant here: a name that
 * holds nothing here, or no account at all, answers the same (no rows).
 */
async function grantsHere(deps: AdminDeps, kind: ResourceKind, id: string, q: z.infer<typeof effectiveQuery>) {
  if (q.username !== undefined) {
    const user = await deps.directory.userByName(q.username);
    const permission = user && (await deps.grants.get({ type: 'user', id: user.id }, kind, id));
    const shown = user && permission ? [grantRow({ grantee_type: user.isServiceAccount ? 'service_account' : 'user', name: user.username, permission })] : [];
    return { users: shown, scope: GRANTS_HERE };
  }
  // Users and service accounts come before groups, so a page of them is a prefix of the search.
  const rows = (await deps.grants.searchOnResource(kind, id, q.q, q.max_results + 1, q.page_token)).filter((r) => r.grantee_type !== 'group');
  const page = paged(rows, q);
  return { users: page.rows.map(grantRow), scope: GRANTS_HERE, ...page.more };
}

/** Tells the screens a manager's view is of the grants here, not of each user's every grant. */
const GRANTS_HERE = 'grants-here';

function grantRow(r: { grantee_type: string; name: string; permission: Permission }) {
  return { username: r.name, permission: r.permission, source: 'direct' as const, groups: [] as string[], is_service_account: r.grantee_type === 'service_account' };
}

/** A resource the caller may not read, or one that does not exist: the same, and nothing about why. */
const UNREADABLE: MyPermission = { permission: 'NO_PERMISSIONS', source: 'none', groups: [] };

const effectiveQuery = pageQuery.extend({ username: z.string().max(128).optional() });
const mineQuery = z.object({ id: z.array(z.string()).min(1).max(200) });

function routesFor(k: (typeof KIND_SHAPES)[number]): AdminRoute[] {
  const base = `/mlflow/permissions/ui/${k.segment}/${adminIdPath(k.kind)}`;
  const resource = { kind: k.kind, param: k.param };
  const idOf = (params: Record<string, string>) => parseWith(k.idSchema, adminIdOf(k.kind, params), `${adminIdPath(k.kind).replaceAll(':', '')} in the path`);
  return [
    {
      method: 'GET',
      path: `${base}/grants`,
      summary: `List every grant on ${withArticle(k.label)} (users, service accounts, groups), searchable and paged`,
      access: 'manage',
      resource,
      query: pageQuery,
      handler: async (req, deps) => {
        const id = idOf(req.params);
        return listPage(req.query, pageQuery, (q, limit, offset) => deps.grants.searchOnResource(k.kind, id, q.q, limit, offset), (grants): PageRows<ResourceGrantsAnswer> => ({ grants }));
      },
    },
    {
      method: 'GET',
      path: `${base}/effective`,
      summary: `Explain the effective permission of each user a grant on ${withArticle(k.label)} concerns (directly or through a group), or of one named user, and why`,
      access: 'manage',
      resource,
      query: effectiveQuery,
      handler: async (req, deps) => {
        const id = idOf(req.params);
        const q = readQuery(effectiveQuery, req.query);
        if (!req.principal.isAdmin) return { status: 200, body: await grantsHere(deps, k.kind, id, q) };
        if (q.username !== undefined) {
          const user = await deps.directory.userByName(q.username);
          return { status: 200, body: { users: user ? [await explain(deps, await withGroups(deps, user), k.kind, id)] : [] } satisfies EffectiveAnswer };
        }
        const rows = await deps.grants.concernedUsers(k.kind, id, q.q, q.max_results + 1, q.page_token);
        const page = paged(rows, q);
        const users = await Promise.all(page.rows.map((user) => explain(deps, user, k.kind, id)));
        return { status: 200, body: { users, ...page.more } satisfies EffectiveAnswer };
      },
    },
  ];
}

const SEGMENTS = KIND_SHAPES.map((k, i, all) => (i === 0 ? '' : i === all.length - 1 ? ' or ' : ', ') + k.segment).join('');

type Shape = (typeof KIND_SHAPES)[number];

/** How many ids of one request are looked up at once (an experiment's name may be asked of MLflow). */
const MINE_CONCURRENCY = 4;

/**
 * The caller's effective permission on each of some resources of a kind, `NO_PERMISSIONS` (source `none`)
 * where they may not read it. Each distinct id is looked up once (a repeated id costs MLflow nothing
 * more), a few at a time.
 */
async function myPermissions(k: Shape, req: AdminRequest, deps: AdminDeps): Promise<AdminResult> {
  const { id: raw } = parseWith(mineQuery, { id: req.query.getAll('id') }, 'query string');
  const ids = [...new Set([...new Set(raw)].map((one) => parseWith(k.idSchema, one, 'id')))];
  const found = await deps.directory.userByName(req.principal.username);
  if (!found) return { status: 200, body: { permissions: {} } };
  const me = await withGroups(deps, found);
  const answers = await mapBounded(ids, MINE_CONCURRENCY, async (id): Promise<MyPermission> => {
    let e: Awaited<ReturnType<typeof explain>>;
    try {
      e = await explain(deps, me, k.kind, id);
    } catch (error) {
      // An experiment's name looked up for pattern grants: one MLflow does not have is one the caller may not read.
      if (error instanceof FlowgateError && error.code === 'RESOURCE_DOES_NOT_EXIST') return UNREADABLE;
      throw error;
    }
    // Why the caller may not read it (a deny of theirs, a pattern matching its name) is about the resource.
    return me.isAdmin || permits(e.permission, 'read') ? { permission: e.permission, source: e.source, groups: e.groups } : UNREADABLE;
  });
  const permissions: Record<string, MyPermission> = {};
  ids.forEach((id, i) => (permissions[id] = answers[i]!));
  return { status: 200, body: { permissions } satisfies MyPermissionsAnswer };
}

/** `work` on every item, at most `limit` at once, answers in the items' order; the first failure fails it all. */
async function mapBounded<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      try {
        out[i] = await work(items[i]!);
      } catch (e) {
        next = items.length; // nothing more is started: the answer is the failure
        throw e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/**
 * The caller's own effective permission on a page of resources (for the lists: which ones they may
 * manage), one route per kind (a segment may hold a `/`: `gateways/endpoints`); any other word is a 400.
 */
const MINE: readonly AdminRoute[] = [
  ...KIND_SHAPES.map(
    (k): AdminRoute => ({
      method: 'GET',
      path: `/mlflow/permissions/ui/my-permissions/${k.segment}`,
      summary: `Read the caller's effective permission on each listed ${k.label} (query: id, repeated)`,
      access: 'authenticated',
      query: mineQuery,
      handler: (req, deps) => myPermissions(k, req, deps),
    }),
  ),
  {
    method: 'GET',
    path: '/mlflow/permissions/ui/my-permissions/:kind',
    summary: 'Refuses a resource kind flowgate does not know',
    access: 'authenticated',
    handler: (req) => {
      throw badRequest(`Unknown resource kind '${req.params.kind}'; use ${SEGMENTS}`);
    },
  },
];

export const UI_RESOURCE_ROUTES: readonly AdminRoute[] = [...KIND_SHAPES.flatMap(routesFor), ...MINE];
