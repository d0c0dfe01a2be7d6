import type { PrincipalWriter } from './principal-writer.js';
import type { DisabledBy, User } from './types.js';

export interface UserSwitchDeps {
  readonly principalWriter: PrincipalWriter;
  /** Revokes every access token the user holds (their sessions opened with one end with it, by trigger). */
  readonly revokeTokens: (actor: string, user: User) => Promise<number>;
  /** Ends every browser session of the user (logged for every flowgate on the store). */
  readonly endSessionsOf: (userId: number) => Promise<number>;
  /** This process's caches: the user's verified tokens and cached principals. */
  readonly forgetUser: (userId: number) => void;
  readonly principalsChanged: () => void | Promise<void>;
}

/**
 * Disabling a user (the admin API, SCIM's `active: false` or DELETE) ends what they hold at once:
 * the disabled flag itself refuses every credential on every flowgate on the store (a users UPDATE
 * moves the policy generation, which they all follow), and their tokens are revoked and sessions
 * ended, so an enabled-again user starts with no credential from before. Enabling gives nothing back.
 */
export function createUserSwitch(d: UserSwitchDeps) {
  /**
   * `by` is who asks: `scim` enables only a user SCIM disabled (false, nothing changed, for one an
   * administrator disabled), `admin` enables either and takes over a disable SCIM made.
   */
  return async function setActive(actor: string, user: User, active: boolean, by: DisabledBy): Promise<boolean> {
    const changed = await d.principalWriter.setDisabled(actor, user, !active, by);
    if (!active) {
      // Also when it already was disabled: a token minted in between must not outlive the flag.
      await d.revokeTokens(actor, user);
      await d.endSessionsOf(user.id);
    }
    d.forgetUser(user.id);
    await d.principalsChanged();
    return changed;
  };
}

export type SetUserActive = ReturnType<typeof createUserSwitch>;
