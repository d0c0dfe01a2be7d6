import type { ScimBackendDeps } from './backend-deps.js';
import { scimGroups } from './groups.js';
import { createRateLimiter } from '../http/rate-limit.js';
import { resourceLocks } from './one-at-a-time.js';
import { createScimRoute } from './routes.js';
import { declareScimResources } from './scimmy.js';
import { createScimToken } from './token-file.js';
import { scimUsers } from './users.js';

export interface ScimConfig {
  /** The file holding the SCIM bearer token (a mounted Secret), followed as it is rewritten. */
  readonly tokenFile: string;
  /** How long a replaced token is still accepted. */
  readonly graceSeconds: number;
  /** The sustained rate and burst of the token's requests, and of each client address's requests without it. */
  readonly ratePerSecond: number;
  readonly burst: number;
}

export interface ScimDeps extends Omit<ScimBackendDeps, 'usersBase'> {
  readonly config: ScimConfig;
  readonly basePath: string;
  readonly maxBodyBytes: number;
}

/** SCIM 2.0 provisioning (docs/machine-identity.md#scim): its own route, token and rate limit. */
export function createScim(d: ScimDeps) {
  const scimmy = declareScimResources(d.basePath);
  const token = createScimToken({
    file: d.config.tokenFile,
    graceMs: d.config.graceSeconds * 1000,
    onProblem: (message) => d.logger.warn({ file: d.config.tokenFile }, message),
  });
  const backendDeps = { ...d, usersBase: `${d.basePath}/scim/v2/Users` };
  // The same rate and burst for the identity provider (the token's requests) and for each client
  // address's requests without the token; kept apart, so neither spends the other's.
  const limit = { perSecond: d.config.ratePerSecond, burst: d.config.burst };
  const limits = { accepted: createRateLimiter(limit), refused: createRateLimiter(limit) };
  const ownRoute = createScimRoute({
    scimmy,
    backend: { users: scimUsers(backendDeps), groups: scimGroups(backendDeps) },
    oneAtATime: resourceLocks(backendDeps),
    token,
    limits,
    maxBodyBytes: d.maxBodyBytes,
    logger: d.logger,
  });
  d.logger.info({ path: `${d.basePath}/scim/v2` }, 'SCIM provisioning on');
  return { ownRoute };
}
