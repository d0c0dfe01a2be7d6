import { usernameSchema } from '../admin/validation.js';
import type { Group, User } from '../principals/types.js';
import { parseId, SCIM_ACTOR, type ScimBackendDeps } from './backend-deps.js';
import { ScimError, scimErrors } from './errors.js';
import type { ResourceHandlers, ScimRecord, ScimRequestResource } from './scimmy.js';
import { matchIgnoringCase } from './caseless-filter.js';
import { scimUser, singleEquality } from './shapes.js';
import { storableDisplayName } from '../principals/display-name.js';

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The User attributes RFC 7643 marks caseExact=false that flowgate keeps: filters on them ignore case. */
const CASELESS = ['userName', 'displayName'] as const;

/**
 * SCIM Users over flowgate's users. SCIM sees people, never service accounts (bearer and Kubernetes
 * principals, machines an administrator made) nor the bootstrap admin, and never sets the admin
 * flag: a user it creates is an ordinary person who signs in through OIDC where that is configured.
 *
 * What SCIM may change is bounded too, since its token is one secret held outside flowgate:
 * - An administrator is listed and read, and their displayName and externalId follow SCIM, but SCIM
 *   neither renames, deactivates (nor reactivates) nor deletes them: 403. Administrators are
 *   administrators' to manage (the admin API); a stolen SCIM token locks none of them out.
 * - A user an administrator disabled stays disabled whatever SCIM sends: SCIM enables only the users
 *   it disabled (the store records who did), and answers `active: false` (see keptDisabled).
 * - A person awaiting their first OIDC sign-in whom SCIM did not create (an administrator made them
 *   ahead, with grants) keeps their name: the name decides which identity-provider account binds
 *   them, so a rename would hand them to an account of SCIM's choosing: 400 `mutability`. Once bound
 *   (or if SCIM created them) they are renamed as anyone else.
 */
export function scimUsers(d: ScimBackendDeps): ResourceHandlers {
  const { directory, principalWriter: writer } = d;
  const visible = (u: User | undefined): User | undefined => (u && !u.isServiceAccount && u.username !== d.protectedAdmin ? u : undefined);
  const notFound = (id: string | undefined) => new ScimError(404, null, `Resource ${id ?? ''} not found`);

  async function find(id: string | undefined): Promise<User> {
    const n = parseId(id);
    const user = visible(n === undefined ? undefined : await directory.userById(n));
    if (!user) throw notFound(id);
    return user;
  }

  /** Each user's SCIM groups, read once for a whole list. */
  async function scimGroupsByUser(): Promise<Map<number, Group[]>> {
    const byUser = new Map<number, Group[]>();
    for (const g of await directory.groupsFrom('scim'))
      for (const m of await directory.membersOfGroup(g.id)) byUser.set(m.id, [...(byUser.get(m.id) ?? []), g]);
    return byUser;
  }
  const record = async (u: User): Promise<ScimRecord> => scimUser(u, (await directory.groupsOfUser(u.id)).filter((g) => g.origin === 'scim'));

  async function candidates(resource: ScimRequestResource): Promise<User[]> {
    const eq = singleEquality(resource.filter);
    const one = (u: User | undefined) => (u ? [u] : []);
    if (eq?.attribute === 'username') return directory.usersByNameIgnoringCase(eq.value);
    if (eq?.attribute === 'externalid') return one(await directory.userByExternalId(eq.value));
    if (eq?.attribute === 'id') return one(parseId(eq.value) === undefined ? undefined : await directory.userById(parseId(eq.value)!));
    return directory.listUsers(false);
  }

  /**
   * The userName a create or replace sends. A name a kubernetes issuer's `username_template` can make
   * (any case) is that cluster's service account's: a SCIM user holding it would lock the service
   * account out (its first call finds the name taken). Refused when SCIM would give it (create,
   * rename); a user who already holds it (made before this check) is still updated and deactivated.
   */
  function validName(instance: Record<string, unknown>, self?: User): string {
    const parsed = usernameSchema.safeParse(instance.userName);
    if (!parsed.success) throw new ScimError(400, 'invalidValue', `userName ${parsed.error.issues[0]?.message ?? 'is not valid'}`);
    if (parsed.data.toLowerCase() === d.protectedAdmin?.toLowerCase()) throw new ScimError(409, 'uniqueness', 'A user of that name already exists');
    if (parsed.data !== self?.username && d.clusterNames.isUser(parsed.data))
      throw new ScimError(
        400,
        'invalidValue',
        `userName ${JSON.stringify(parsed.data)} has the shape of a Kubernetes service account's name, which only the kubernetes issuer makes (docs/machine-identity.md#scim)`,
      );
    return parsed.data;
  }

  async function externalIdFree(externalId: string | undefined, self?: User): Promise<void> {
    if (externalId === undefined) return;
    const holder = await directory.userByExternalId(externalId);
    if (holder && holder.id !== self?.id) throw new ScimError(409, 'uniqueness', 'Another user has that externalId');
  }

  /**
   * userName is unique without regard to case (RFC 7643 §4.1.1): `Alice` is refused while `alice`
   * exists. Checked here, not by an index, so stores already holding two such names still open; the
   * rest of flowgate (Basic, grants) keeps matching names exactly, and a first sign-in makes no second
   * user of a name in another case (src/oidc/provision.ts, nameInOtherCase). Called inside the
   * writing transaction, under a lock, so two SCIM writes on two replicas cannot both pass it.
   */
  async function nameFree(username: string, self?: User): Promise<void> {
    await directory.lockUserNames();
    if ((await directory.usersByNameIgnoringCase(username)).some((u) => u.id !== self?.id))
      throw new ScimError(409, 'uniqueness', 'A user of that name already exists');
  }

  async function create(instance: Record<string, unknown>): Promise<ScimRecord> {
    const username = validName(instance);
    const externalId = text(instance.externalId);
    await externalIdFree(externalId);
    let user = await d.sql.transaction(async () => {
      await nameFree(username);
      return writer.createUser(SCIM_ACTOR, {
        username,
        displayName: storableDisplayName(text(instance.displayName), ''),
        isAdmin: false,
        isServiceAccount: false,
        signIn: d.signIn,
        origin: 'scim',
        externalId: externalId ?? null,
      });
    });
    if (instance.active === false) {
      await d.setActive(SCIM_ACTOR, user, false, 'scim');
      user = (await directory.userById(user.id))!;
    }
    return record(user);
  }

  /** Administrators are not SCIM's to rename, switch on or off, or delete. */
  function refuseForAdministrator(user: User, what: string): void {
    if (!user.isAdmin) return;
    d.logger.warn({ user: user.username, refused: what }, 'SCIM refused: the user is a flowgate administrator (docs/machine-identity.md#scim)');
    throw new ScimError(403, null, `User ${user.id} is a flowgate administrator: SCIM does not ${what} administrators (an administrator does, through flowgate's admin API)`);
  }

  async function replace(id: string | undefined, instance: Record<string, unknown>): Promise<ScimRecord> {
    const user = await find(id);
    const username = validName(instance, user);
    const renaming = username !== user.username;
    const active = user.disabledAt === null;
    const wantsActive = instance.active === undefined ? active : instance.active !== false;
    if (renaming) refuseForAdministrator(user, 'rename');
    if (wantsActive !== active) refuseForAdministrator(user, wantsActive ? 'reactivate' : 'deactivate');
    if (renaming && user.signIn === 'oidc' && user.oidcSubject === null && user.origin !== 'scim')
      throw new ScimError(
        400,
        'mutability',
        `User ${user.id} awaits their first sign-in under the name an administrator gave them: SCIM does not rename them until then (the name decides which account that sign-in binds)`,
      );
    const externalId = text(instance.externalId) ?? null;
    await externalIdFree(externalId ?? undefined, user);
    const displayName = storableDisplayName(text(instance.displayName), '');
    let renamed = false;
    await d.sql.transaction(async () => {
      // Only a new name is checked: a store from before may hold two names differing in case, and
      // either may still be updated as it is.
      if (username !== user.username) await nameFree(username, user);
      renamed = await writer.renameUser(SCIM_ACTOR, user, username);
      const now = (await directory.userById(user.id))!;
      if (displayName !== now.displayName) await writer.updateUser(SCIM_ACTOR, now, displayName, now.isAdmin);
      await writer.setExternalId(SCIM_ACTOR, now, externalId);
    });
    // Basic credentials name the user: a renamed user's verified tokens are checked afresh.
    if (renamed) d.forgetUser(user.id);
    // SCIM switches off and on again only what it switched off: an administrator's disable stays
    // (the store's condition decides, should an administrator disable them meanwhile).
    const mayEnable = !wantsActive || user.disabledBy === 'scim';
    if (wantsActive !== active && mayEnable) await d.setActive(SCIM_ACTOR, (await directory.userById(user.id))!, wantsActive, 'scim');
    else d.principalsChanged();
    const after = (await directory.userById(user.id))!;
    if (wantsActive && after.disabledAt !== null) keptDisabled(after);
    return record(after);
  }

  /**
   * SCIM asked to enable a user an administrator disabled: the rest of its change is made, the user
   * stays disabled, and the answer says `active: false` (a 200, as RFC 7644 lets a server ignore
   * what it is sent and answer the resource as it is; an error would fail the provider's whole
   * profile sync, which Okta and Entra ID send with `active: true` every time).
   */
  function keptDisabled(user: User): void {
    d.logger.warn(
      { user: user.username, id: user.id },
      'SCIM left the user disabled: an administrator disabled them, and only an administrator enables them (docs/machine-identity.md#scim)',
    );
  }

  return {
    egress: scimErrors(async (resource) => {
      if (resource.id !== undefined) return record(await find(resource.id));
      const users = (await candidates(resource)).map(visible).filter((u): u is User => u !== undefined);
      const groups = await scimGroupsByUser();
      const records = users.map((u) => scimUser(u, groups.get(u.id) ?? []));
      return resource.filter ? matchIgnoringCase(resource.filter, records, CASELESS) : records;
    }),
    ingress: scimErrors(async (resource, instance) => (resource.id === undefined ? create(instance) : replace(resource.id, instance))),
    // Deleted as the admin API deletes: tokens, sessions, memberships and grants go with the user.
    // The policy index re-reads once the deletion commits (the route's lock, one-at-a-time.ts).
    degress: scimErrors(async (resource) => {
      const user = await find(resource.id);
      refuseForAdministrator(user, 'delete');
      await writer.deleteUser(SCIM_ACTOR, user);
      await d.endSessionsOf(user.id);
      d.forgetUser(user.id);
    }),
  };
}
