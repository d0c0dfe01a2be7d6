import type { AuditLog } from '../audit/audit-log.js';
import { notFound } from '../errors.js';
import { MODEL_KINDS, modelKind, WORKSPACE, type GatewayKind } from '../resources/kinds.js';
import type { Sql } from '../store/sql.js';
import { splitQualified } from '../workspaces/names.js';
import { inWorkspace } from '../workspaces/request-workspace.js';
import type { Grantee, GrantsRepo } from './grants-repo.js';
import type { PatternGrantsRepo } from './pattern-grants-repo.js';
import type { Permission, ResourceKind, ResourceRef } from './types.js';

/** A grantee as the audit log names it. */
export interface NamedGrantee {
  readonly grantee: Grantee;
  readonly name: string;
}

const target = (ref: ResourceRef, who: NamedGrantee) => `${ref.kind}:${ref.id}/${who.grantee.type}:${who.name}`;

/**
 * Callers check that a grant exists before changing it; one removed between that check and the write
 * (another request, another replica) is a 404, with nothing written or audited, not a change reported
 * as made.
 */
const goneMeanwhile = (ref: ResourceRef, who: NamedGrantee) =>
  notFound(`The ${who.grantee.type} '${who.name}' holds no grant on that ${ref.kind.replace(/_/g, ' ')} any more`);

/** What a deleted workspace took with it: its members and administrators, the grants and the pattern grants kept in it. */
export interface DroppedWithWorkspace {
  readonly members: number;
  readonly grants: number;
  readonly pattern_grants: number;
}

/**
 * The one writer of grants: the admin API, the gate's creator and model hooks and any other caller
 * change grants only here, each change in one transaction with its audit entry, and the policy
 * index told which resources changed. Callers check existence and conflicts before writing.
 */
export function createGrantWriter(deps: {
  readonly sql: Sql;
  readonly grants: GrantsRepo;
  readonly audit: AuditLog;
  readonly grantsChanged: (refs: readonly ResourceRef[]) => Promise<void>;
  /** Pattern grants, for what goes with a deleted workspace (`dropWorkspace`), and how the pattern index is told. */
  readonly patterns?: Pick<PatternGrantsRepo, 'deleteIn'>;
  readonly patternsChanged?: () => Promise<void>;
}) {
  const { sql, grants, audit } = deps;

  return {
    async create(actor: string, who: NamedGrantee, ref: ResourceRef, permission: Permission): Promise<void> {
      await sql.transaction(async () => {
        await grants.insert(who.grantee, ref.kind, ref.id, permission);
        await audit.record({ actor, action: 'grant.create', target: target(ref, who), newValue: permission });
      });
      await deps.grantsChanged([ref]);
    },

    async update(actor: string, who: NamedGrantee, ref: ResourceRef, old: Permission, permission: Permission): Promise<void> {
      await sql.transaction(async () => {
        if (!(await grants.update(who.grantee, ref.kind, ref.id, permission))) throw goneMeanwhile(ref, who);
        await audit.record({ actor, action: 'grant.update', target: target(ref, who), oldValue: old, newValue: permission });
      });
      await deps.grantsChanged([ref]);
    },

    async remove(actor: string, who: NamedGrantee, ref: ResourceRef, old: Permission): Promise<void> {
      await sql.transaction(async () => {
        if (!(await grants.delete(who.grantee, ref.kind, ref.id))) throw goneMeanwhile(ref, who);
        await audit.record({ actor, action: 'grant.delete', target: target(ref, who), oldValue: old });
      });
      await deps.grantsChanged([ref]);
    },

    /**
     * The creator gets MANAGE. MLflow just made the resource, so any grant already on its id belongs
     * to an older resource removed outside flowgate (`mlflow gc` frees experiment ids for reuse; a
     * model deleted directly frees its name): those are pruned, never inherited.
     */
    async creator(creator: NamedGrantee & { readonly grantee: { readonly type: 'user' } }, ref: ResourceRef, staleKinds: readonly ResourceKind[] = [ref.kind]): Promise<void> {
      const pruned: ResourceRef[] = [];
      await sql.transaction(async () => {
        for (const kind of staleKinds) {
          const stale = await grants.deleteResource(kind, ref.id);
          if (stale === 0) continue;
          pruned.push({ kind, id: ref.id });
          await audit.record({ actor: creator.name, action: 'grant.prune-stale', target: `${kind}:${ref.id}`, oldValue: { grants: stale } });
        }
        await grants.insert(creator.grantee, ref.kind, ref.id, 'MANAGE');
        await audit.record({ actor: creator.name, action: 'grant.creator', target: target(ref, creator), newValue: 'MANAGE' });
      });
      await deps.grantsChanged([ref, ...pruned]);
    },

    /** MLflow no longer has the resource (removed outside flowgate, e.g. by `mlflow gc`): its grants go. */
    async pruneOrphan(actor: string, ref: ResourceRef): Promise<number> {
      let removed = 0;
      await sql.transaction(async () => {
        removed = await grants.deleteResource(ref.kind, ref.id);
        if (removed > 0) await audit.record({ actor, action: 'grant.prune-orphan', target: `${ref.kind}:${ref.id}`, oldValue: { grants: removed } });
      });
      if (removed > 0) await deps.grantsChanged([ref]);
      return removed;
    },

    /** MLflow deleted the resource through flowgate (a Skill): its grants go with it, so one made later under its id starts without them. */
    async dropWithResource(actor: string, ref: ResourceRef): Promise<number> {
      let removed = 0;
      await sql.transaction(async () => {
        removed = await grants.deleteResource(ref.kind, ref.id);
        if (removed > 0) await audit.record({ actor, action: 'grant.drop-with-resource', target: `${ref.kind}:${ref.id}`, oldValue: { grants: removed } });
      });
      if (removed > 0) await deps.grantsChanged([ref]);
      return removed;
    },

    /**
     * A registered model (or prompt) was renamed (`newName`) or deleted (undefined): its grants follow
     * it. Grants already on the new name, of either kind, belonged to no model MLflow has (it refuses a
     * name in use): one deleted outside flowgate, or a grant given on a name before anyone took it. They
     * are pruned first (`grant.prune-stale`), as for a creator, never merged into the renamed model's:
     * a rename needs only EDIT, and a MANAGE held on the free name must not come to rule the model.
     * A rename to the name it has changes nothing.
     */
    async followModel(actor: string, name: string, newName: string | undefined): Promise<void> {
      if (newName === name) return;
      let changed = 0;
      await sql.transaction(async () => {
        if (newName !== undefined)
          for (const kind of MODEL_KINDS) {
            const stale = await grants.deleteResource(kind, newName);
            if (stale > 0) await audit.record({ actor, action: 'grant.prune-stale', target: `${kind}:${newName}`, oldValue: { grants: stale } });
          }
        for (const kind of MODEL_KINDS)
          changed += newName === undefined ? await grants.deleteResource(kind, name) : await grants.moveResource(kind, name, newName);
        if (changed > 0)
          await audit.record({
            actor,
            action: newName === undefined ? 'grant.drop-with-model' : 'grant.move-with-model',
            target: `${modelKind(false)}:${name}`,
            newValue: newName,
            oldValue: { grants: changed },
          });
      });
      const names = newName === undefined ? [name] : [name, newName];
      await deps.grantsChanged(names.flatMap((id) => MODEL_KINDS.map((kind) => ({ kind, id }))));
    },

    /**
     * An AI-gateway object was renamed (`newName`) or deleted (undefined): its grants follow it. Grants
     * already on the new name belonged to no object MLflow has (it refuses a name in use): they are
     * pruned, as for a creator, never merged into the renamed object's.
     */
    async followGateway(actor: string, kind: GatewayKind, name: string, newName: string | undefined): Promise<void> {
      if (newName === name) return;
      const changed: ResourceRef[] = [{ kind, id: name }];
      await sql.transaction(async () => {
        if (newName !== undefined) {
          const stale = await grants.deleteResource(kind, newName);
          changed.push({ kind, id: newName });
          if (stale > 0) await audit.record({ actor, action: 'grant.prune-stale', target: `${kind}:${newName}`, oldValue: { grants: stale } });
        }
        const moved = newName === undefined ? await grants.deleteResource(kind, name) : await grants.moveResource(kind, name, newName);
        if (moved > 0)
          await audit.record({
            actor,
            action: newName === undefined ? 'grant.drop-with-resource' : 'grant.move-with-resource',
            target: `${kind}:${name}`,
            newValue: newName,
            oldValue: { grants: moved },
          });
      });
      await deps.grantsChanged(changed);
    },

    /**
     * MLflow deleted the workspace (in any of its modes): every grant of it and in it goes, in one
     * transaction with one audit entry (`grant.drop-with-workspace`, the counts): its membership
     * (USE and MANAGE grants on the workspace, a group rule's included), the grants on resources kept
     * in it and the pattern grants made in it. A workspace made again under the name starts with none,
     * as a Kubernetes namespace made again starts without the old one's RoleBindings. Resources MLflow
     * moved into `default` (SET_DEFAULT) keep none of them either: under `default`'s keys they could meet
     * grants already there. Pattern grants on the workspace kind (`team-*`) name workspaces, not this
     * one, and stay. The `default` workspace is never deleted (MLflow refuses it): refused here too.
     */
    async dropWorkspace(actor: string, workspace: string): Promise<DroppedWithWorkspace> {
      const patterns = deps.patterns;
      if (patterns === undefined) throw new Error('dropWorkspace needs the pattern grants repository');
      let inside: ResourceRef[] = [];
      let dropped: DroppedWithWorkspace = { members: 0, grants: 0, pattern_grants: 0 };
      await sql.transaction(async () => {
        inside = await grants.resourcesIn(workspace);
        dropped = {
          members: await grants.deleteResource(WORKSPACE, workspace),
          grants: await grants.deleteIn(workspace),
          pattern_grants: await patterns.deleteIn(workspace),
        };
        if (dropped.members + dropped.grants + dropped.pattern_grants > 0)
          await audit.record({ actor, action: 'grant.drop-with-workspace', target: `${WORKSPACE}:${workspace}`, oldValue: dropped });
      });
      // Each resource re-read in its own workspace, by its id there (the request may name another workspace).
      const ids = inside.map((ref) => Object.assign({}, ref, { id: splitQualified(ref.id).id }));
      await Promise.all([
        dropped.members > 0 ? deps.grantsChanged([{ kind: WORKSPACE, id: workspace }]) : undefined,
        ids.length > 0 ? inWorkspace(workspace, () => deps.grantsChanged(ids)) : undefined,
        dropped.pattern_grants > 0 ? deps.patternsChanged?.() : undefined,
      ]);
      return dropped;
    },
  };
}

export type GrantWriter = ReturnType<typeof createGrantWriter>;
