import type { Logger } from '../logging.js';
import type { Sql } from '../store/sql.js';
import type { TokenService } from '../tokens/token-service.js';
import type { Directory } from './directory.js';
import type { PrincipalWriter } from './principal-writer.js';

const ACTOR = 'flowgate';

export interface BootstrapAdminDeps {
  readonly sql: Sql;
  readonly directory: Directory;
  readonly principalWriter: PrincipalWriter;
  readonly tokens: TokenService;
  readonly endSessionsOf: (userId: number) => Promise<number>;
  readonly logger: Logger;
}

/**
 * At every start the configured admin exists, is an administrator and a person reached by no
 * sign-in, and holds the configured token: configuration wins over the store, so the operator is
 * never locked out and flowgate never refuses to start over the record.
 *
 * A record that had to be repaired was, until now, someone else's or reachable some other way (an
 * ordinary user or service account of that name, a demoted admin, an identity-provider account that
 * signed in under the name): the tokens and sessions it held end, so none of them becomes an
 * administrator's. Only the configured token stays, or is put in place.
 *
 * The one refusal: a configured token the store holds as revoked (rotated away, or revoked through
 * the admin API) fails the start and changes nothing, repair included. Revocation wins over
 * configuration, so an outdated Secret (a rollback, an old pod) cannot make a leaked token valid again.
 */
export async function ensureBootstrapAdmin(admin: { username: string; token: string }, expiresAt: number, deps: BootstrapAdminDeps): Promise<void> {
  const { sql, directory, principalWriter, tokens } = deps;
  let repaired: { revokedTokens: number; endedSessions: number } | undefined;
  // Replicas starting together on one store take turns: the first creates (or repairs), the others find.
  await sql.transaction(async () => {
    await sql.lock('flowgate-bootstrap-admin');
    let user = await directory.userByName(admin.username);
    if (!user) {
      user = await principalWriter.createUser(
        ACTOR,
        { username: admin.username, displayName: admin.username, isAdmin: true, isServiceAccount: false },
        { is_admin: true },
      );
    } else if (await principalWriter.repairBootstrapAdmin(ACTOR, user)) {
      repaired = { revokedTokens: await tokens.revokeAllButConfigured(ACTOR, user, admin.token), endedSessions: await deps.endSessionsOf(user.id) };
    }
    await tokens.install(ACTOR, user, admin.token, expiresAt);
  });
  if (repaired)
    deps.logger.warn(
      { user: admin.username, ...repaired },
      'bootstrap admin repaired: the store did not hold it as an administrator reached by no sign-in; configuration wins (audit action user.repair)',
    );
  deps.logger.info({ user: admin.username }, 'bootstrap admin ready');
}
