import type { BearerConfig } from './config.js';
import { templateMatcher } from './templates.js';

/** The names only a kubernetes issuer makes, for every other way in (OIDC issuers' tokens, browser sign-in). */
export interface ClusterNames {
  /** Whether the name is of a kubernetes issuer's `username_template`. */
  isUser(name: string): boolean;
  /** Whether the group is of a kubernetes issuer's `namespace_group`. */
  isGroup(name: string): boolean;
  /** Whether any kubernetes issuer is configured. */
  readonly any: boolean;
}

/**
 * The user names and groups a kubernetes issuer makes (`username_template`, `namespace_group`) are
 * that cluster's alone: anyone else claiming one is a squatter (their user would hold the service
 * account's name before its first call, their group would carry a namespace's grants). Two
 * kubernetes issuers never share one (refused at start, config.ts).
 */
export function clusterNamesOf(config: BearerConfig | undefined): ClusterNames {
  const users: RegExp[] = [];
  const groups: RegExp[] = [];
  for (const i of config?.issuers ?? []) {
    if (i.kind !== 'kubernetes') continue;
    users.push(templateMatcher(i.username_template));
    if (i.namespace_group !== null) groups.push(templateMatcher(i.namespace_group));
  }
  return {
    isUser: (name) => users.some((r) => r.test(name)),
    isGroup: (name) => groups.some((r) => r.test(name)),
    any: users.length > 0 || groups.length > 0,
  };
}
