import type { Permission } from '../resources/permissions.js';
import { planBasicAuth } from './basic-auth-plan.js';
import { readBasicAuth } from './basic-auth-read.js';
import { planOidcAuth } from './oidc-auth-plan.js';
import { readOidcAuth } from './oidc-auth-read.js';
import type { ImportPlan } from './plan.js';
import { openSourceDatabase } from './source-database.js';

export const PLUGINS = ['mlflow-basic-auth', 'mlflow-oidc-auth'] as const;
export type Plugin = (typeof PLUGINS)[number];

export interface PlanOptions {
  readonly mlflowDefault: Permission;
  readonly flowgateDefault: Permission;
}

/** Each plugin's own default permission, where its configuration does not say: basic-auth's ini READ, oidc-auth's NO_PERMISSIONS (since its 7.6). */
export const PLUGIN_DEFAULT_PERMISSION: Readonly<Record<Plugin, Permission>> = { 'mlflow-basic-auth': 'READ', 'mlflow-oidc-auth': 'NO_PERMISSIONS' };

/** Reads the plugin's database (read-only) and maps it to flowgate's model. */
export async function planFor(plugin: Plugin, uri: string, o: PlanOptions): Promise<ImportPlan> {
  const db = await openSourceDatabase(uri);
  try {
    if (plugin === 'mlflow-oidc-auth') return planOidcAuth(await readOidcAuth(db), o);
    return planBasicAuth(await readBasicAuth(db), o);
  } finally {
    await db.close();
  }
}
