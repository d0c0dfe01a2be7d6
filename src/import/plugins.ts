import type { Permission } from '../resources/permissions.js';
import { planBasicAuth } from './basic-auth-plan.js';
import { readBasicAuth } from './basic-auth-read.js';
import type { ImportPlan } from './plan.js';
import { openSourceDatabase } from './source-database.js';

export const PLUGINS = ['mlflow-basic-auth', 'mlflow-oidc-auth'] as const;
export type Plugin = (typeof PLUGINS)[number];

export interface PlanOptions {
  readonly mlflowDefault: Permission;
  readonly flowgateDefault: Permission;
}

/** Reads the plugin's database (read-only) and maps it to flowgate's model. */
export async function planFor(plugin: Plugin, uri: string, o: PlanOptions): Promise<ImportPlan> {
  // mlflow-oidc-auth's resolution (sources in PERMISSION_SOURCE_ORDER, regex rules by priority) is not mapped yet.
  if (plugin === 'mlflow-oidc-auth') throw new Error('importing mlflow-oidc-auth databases is not available in this build yet');
  const db = await openSourceDatabase(uri);
  try {
    return planBasicAuth(await readBasicAuth(db), o);
  } finally {
    await db.close();
  }
}
