import { describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { provisionBearer } from '../../src/bearer/provision.js';
import { provisionLogin, type ProvisionOptions } from '../../src/oidc/provision.js';
import { createDirectory } from '../../src/principals/directory.js';
import { createPrincipalCache } from '../../src/principals/principal-cache.js';
import { createPrincipalWriter } from '../../src/principals/principal-writer.js';
import { openSqliteStore } from '../../src/store/database.js';

/**
 * Where principals come from and the one rule for groups: sign-ins and bearer tokens record their
 * origin; a disabled user is refused by OIDC sign-in, bearer provisioning and the principal cache
 * (so every credential); claims fill every group but SCIM's, which they neither join nor leave.
 */
const ISSUER = 'https://idp.example';
const OPTIONS: ProvisionOptions = { usernameClaim: 'preferred_username', displayNameClaim: 'name', groupsClaim: 'groups', adminRole: undefined, allowedRoles: undefined, protectedAdmin: 'admin' };

function world() {
  const sql = openSqliteStore(':memory:');
  const directory = createDirectory(sql);
  const writer = createPrincipalWriter({ sql, directory, audit: createAuditLog(sql), bootstrapAdmin: 'admin' });
  const signIn = (sub: string, name: string, groups: string[] = []) => provisionLogin(sql, directory, writer, OPTIONS, { iss: ISSUER, sub, preferred_username: name, name, groups });
  const bearer = (subject: string, username: string, groups: string[] | undefined, serviceAccount = true) =>
    provisionBearer(sql, directory, writer, { protectedAdmin: 'admin', signInIssuer: undefined }, { issuer: 'https://ci.example', subject, username, displayName: username, groups, serviceAccount, expiresAt: Date.now() + 60_000 });
  return { sql, directory, writer, signIn, bearer };
}

describe('origins', () => {
  it('an OIDC sign-in, a bearer token and a Kubernetes token record theirs, and the groups they create too', async () => {
    const w = world();
    const person = await w.signIn('p-sub', 'pat', ['team-p']);
    expect(person).toMatchObject({ ok: true, user: { origin: 'oidc' } });
    expect((await w.directory.groupByName('team-p'))?.origin).toBe('oidc');
    expect(await w.bearer('ci-client', 'ci-bot', ['ci'])).toMatchObject({ ok: true, user: { origin: 'bearer' } });
    expect(await w.bearer('system:serviceaccount:team-a:runner', 'k8s.team-a.runner', ['k8s:team-a'])).toMatchObject({ ok: true, user: { origin: 'kubernetes' } });
    expect((await w.directory.groupByName('k8s:team-a'))?.origin).toBe('kubernetes');
    const local = await w.writer.createUser('admin', { username: 'lou', displayName: 'lou', isAdmin: false, isServiceAccount: false });
    expect(local.origin).toBe('local');
  });
});

describe('a disabled user', () => {
  it('is refused by OIDC sign-in, bearer provisioning and the principal cache; enabled, all work again', async () => {
    const w = world();
    const signedIn = await w.signIn('d-sub', 'dora');
    const bot = await w.bearer('bot-sub', 'bot', undefined);
    if (!signedIn.ok || !bot.ok) throw new Error('set-up failed');
    const cache = createPrincipalCache(w.directory, 100);
    expect(await cache.principal(signedIn.user.id, 'session')).toBeDefined();
    for (const user of [signedIn.user, bot.user]) expect(await w.writer.setDisabled('admin', user, true, 'admin')).toBe(true);
    cache.invalidate();
    expect(await w.signIn('d-sub', 'dora')).toEqual({ ok: false, reason: 'disabled', username: 'dora' });
    expect(await w.bearer('bot-sub', 'bot', undefined)).toEqual({ ok: false, holder: 'disabled' });
    expect(await cache.principal(signedIn.user.id, 'session')).toBeUndefined();
    expect(await cache.principal(bot.user.id, 'bearer')).toBeUndefined();
    await w.writer.setDisabled('admin', signedIn.user, false, 'admin');
    cache.invalidate();
    expect(await w.signIn('d-sub', 'dora')).toMatchObject({ ok: true });
    expect(await cache.principal(signedIn.user.id, 'session')).toBeDefined();
  });

  it('the bootstrap admin cannot be disabled', async () => {
    const w = world();
    const admin = await w.writer.createUser('flowgate', { username: 'admin', displayName: 'admin', isAdmin: true, isServiceAccount: false });
    await expect(w.writer.setDisabled('someone', admin, true, 'admin')).rejects.toThrow(/bootstrap administrator/);
    expect((await w.directory.userById(admin.id))?.disabledAt).toBeNull();
  });
});

describe('groups: claims and SCIM', () => {
  it('a sign-in’s claims neither join a SCIM group nor leave one, and still fill every other group', async () => {
    const w = world();
    const first = await w.signIn('s-sub', 'sam', ['claimed', 'pushed']);
    if (!first.ok) throw new Error('set-up failed');
    // `pushed` existed as a claim group before SCIM made its own: SCIM's is a different group.
    const scimGroup = await w.writer.createGroup('scim', 'scim-team', 'scim', 'ext-1');
    await w.writer.addMember('scim', scimGroup, first.user);
    const names = async () => (await w.directory.groupsOfUser(first.user.id)).map((g) => g.name).sort();
    expect(await names()).toEqual(['claimed', 'pushed', 'scim-team']);
    // The next sign-in claims another set, naming the SCIM group too: only non-SCIM memberships follow.
    expect(await w.signIn('s-sub', 'sam', ['other', 'scim-team'])).toMatchObject({ ok: true });
    expect(await names()).toEqual(['other', 'scim-team']);
    expect(await w.signIn('s-sub', 'sam', [])).toMatchObject({ ok: true });
    expect(await names()).toEqual(['scim-team']);
    // A claim naming a SCIM group a user is not in does not join them.
    const other = await w.signIn('o-sub', 'olga', ['scim-team']);
    if (!other.ok) throw new Error('set-up failed');
    expect((await w.directory.groupsOfUser(other.user.id)).map((g) => g.name)).toEqual([]);
  });
});
