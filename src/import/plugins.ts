import type { Permission } from '../resources/permissions.js';
import { planBasicAuth } from './basic-auth-plan.js';
import { readBasicAuth } from './basic-auth-read.js';
import { planOidcAuth } from './oidc-auth-plan.js';
import { readOidcAuth } from './oidc-auth-read.js';
import type { ImportPlan, PlanRefusals } from './plan.js';
import { openSourceDatabase } from './source-database.js';

export const PLUGINS = ['mlflow-basic-auth', 'mlflow-oidc-auth'] as const;
export type Plugin = (typeof PLUGINS)[number];

export interface PlanOptions {
  readonly mlflowDefault: Permission;
  readonly flowgateDefault: Permission;
  /** Whether flowgate signs people in through OIDC: mlflow-oidc-auth's people then come over as `sign_in: oidc`. */
  readonly oidcSignIn?: boolean;
  /** The source's users and groups flowgate's store keeps out (refusals.ts). */
  readonly refused?: PlanRefusals;
}

/** Each plugin's own default permission, where its configuration does not say: basic-auth's ini READ, oidc-auth's NO_PERMISSIONS (since its 7.6). */
export const PLUGIN_DEFAULT_PERMISSION: Readonly<Record<Plugin, Permission>> = { 'mlflow-basic-auth': 'READ', 'mlflow-oidc-auth': 'NO_PERMISSIONS' };

/** Reads the plugin's database (read-only) and maps it to flowgate's model. */
export async function planFor(plugin: Plugin, uri: string, o: PlanOptions): Promise<ImportPlan> {
  return (await readSource(plugin, uri))(o);
}

/** Reads the plugin's database (read-only) once; the answer makes the plan, as often as asked (again with refusals). */
export async function readSource(plugin: Plugin, uri: string): Promise<(o: PlanOptions) => ImportPlan> {
  const db = await openSourceDatabase(uri);
  try {
    if (plugin === 'mlflow-oidc-auth') {
      const state = await readOidcAuth(db);
      return (o) => planOidcAuth(state, o);
    }
    const state = await readBasicAuth(db);
    return (o) => planBasicAuth(state, o);
  } finally {
    await db.close();
  }
}
