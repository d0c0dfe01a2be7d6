import { useRef, useState } from 'preact/hooks';
import { api, qs, seg, type AdminUserJson, type SignIn, type KindGrantsAnswer, type UserAnswer, type UserSearchAnswer } from '../api';
import { AskButton, AskForm, DataTable, ErrorText, linkColumn, SearchTable, SelectField, Tag, TextField, useConfirm, useLoad, usePagedSearch, type Column, type ConfirmRequest } from '../components';
import { change, removal } from '../changes';
import { grantIdOf, KINDS, type Kind } from '../kinds';
import { href } from '../router';
import { day } from '../dates';
import { IssuedTokenView, type IssuedToken } from './access-key';

/** How the person signs in, and for the identity provider whether their account is bound yet. */
export function signInText(u: AdminUserJson): string {
  if (u.sign_in === 'local') return 'Access tokens only';
  return u.oidc_linked ? 'Identity provider (linked)' : 'Identity provider (awaiting first sign-in)';
}

const ORIGIN_TEXT: Record<AdminUserJson['origin'], string> = {
  local: 'Local',
  oidc: 'OIDC sign-in',
  bearer: 'Bearer token',
  kubernetes: 'Kubernetes',
  scim: 'SCIM',
};

/** Where the principal comes from (what created it), and whether it is disabled. */
export function originText(u: AdminUserJson): string {
  return ORIGIN_TEXT[u.origin] ?? u.origin;
}

/** The origin as a badge, with a second one when the user is disabled. */
export const originColumn = <T extends AdminUserJson>(): Column<T> => ({
  title: 'Origin',
  cell: (u) => (
    <>
      <span class={`fg-origin fg-origin-${u.origin}`}>{originText(u)}</span>
      {u.disabled && <span class="fg-origin fg-disabled"> disabled</span>}
    </>
  ),
});

/** A user's name, opening their page. */
export const userLink = <T extends { username: string }>(title: string): Column<T> => linkColumn(title, (u) => u.username, (u) => href('users', u.username));

const USER_COLUMNS: readonly Column<AdminUserJson>[] = [
  userLink('User name'),
  { title: 'Display name', cell: (u) => u.display_name },
  { title: 'Role', cell: (u) => (u.bootstrap ? 'Administrator (configured)' : u.is_admin ? 'Administrator' : 'User') },
  { title: 'Signs in', cell: signInText },
  originColumn(),
  { title: 'Created', cell: (u) => day(u.created_at) },
];

const YES_NO = [
  ['no', 'No'],
  ['yes', 'Yes'],
] as const;

const SIGN_IN_CHOICES = [
  ['oidc', 'With the identity provider'],
  ['local', 'With access tokens only'],
] as const;

export function Users() {
  const s = usePagedSearch({ q: '' }, (f, token) => api<UserSearchAnswer>('GET', `permissions/ui/users${qs({ q: f.q, type: 'user', page_token: token })}`));
  const confirm = useConfirm(s.list.reload);
  // Where people sign in through the identity provider, that is the default and the other way is a choice.
  // Kept from the first answer on: a reload (a search, a page, a user created) empties the list for a
  // moment, and the choice made must not vanish with it (nor a creation then go without it).
  const known = useRef<SignIn | undefined>(undefined);
  if (s.list.data) known.current = s.list.data.sign_in_default;
  const signInDefault = known.current;
  const withProvider = signInDefault === 'oidc';
  return (
    <section>
      <h1>Users</h1>
      <div class="fg-panel">
        <h2>Create a user</h2>
        <p class="fg-muted">
          {withProvider
            ? 'People appear here when they first sign in. Create one ahead of time to grant them things first: their first sign-in through the identity provider under this name becomes theirs. Or create someone who signs in with access tokens only.'
            : 'Create a user who signs in with an access key.'}
        </p>
        {/* Disabled until the server has said how people sign in: created earlier, a person would go without the choice. */}
        <CreateUser withProvider={withProvider} ready={signInDefault !== undefined} ask={confirm.ask} />
      </div>
      <SearchTable label="Users" search="Search users" paged={s} rows={(a) => a.users} columns={USER_COLUMNS} rowKey={(u) => u.username} />
      {confirm.dialog}
    </section>
  );
}

function CreateUser({ withProvider, ready, ask }: { withProvider: boolean; ready: boolean; ask: (r: ConfirmRequest) => void }) {
  const [name, setName] = useState('');
  const [admin, setAdmin] = useState(false);
  const [tokensOnly, setTokensOnly] = useState(false);
  const request = (): ConfirmRequest | undefined => {
    const username = name.trim();
    if (!username || !ready) return undefined;
    // Without the choice shown, flowgate's default (access tokens only where OIDC is not configured).
    const signIn = withProvider ? (tokensOnly ? 'local' : 'oidc') : undefined;
    const how = signIn === 'oidc' ? ', who signs in with the identity provider?' : signIn === 'local' ? ', who signs in with access tokens only?' : '?';
    const asking = { title: 'Create user', text: `Create user “${username}”${admin ? ' as an administrator' : ''}${how}`, action: 'Create' };
    const user = { username, is_admin: admin, is_service_account: false, ...(signIn ? { sign_in: signIn } : {}) };
    return change(asking, 'POST', 'users/create', user, () => setName(''));
  };
  return (
    <AskForm submit="Create user" request={request} ask={ask} disabled={!ready}>
      <TextField label="User name" value={name} onChange={setName} />
      <SelectField label="Administrator" value={admin ? 'yes' : 'no'} options={YES_NO} onChange={(v) => setAdmin(v === 'yes')} />
      {withProvider && (
        <SelectField label="Signs in" value={tokensOnly ? 'local' : 'oidc'} options={SIGN_IN_CHOICES} onChange={(v) => setTokensOnly(v === 'local')} />
      )}
    </AskForm>
  );
}

interface HeldGrant {
  readonly k: Kind;
  readonly id: string;
  readonly permission: string;
}

const GRANT_COLUMNS: readonly Column<HeldGrant>[] = [
  { title: 'Kind', cell: (g) => g.k.title },
  linkColumn('Resource', (g) => g.id, (g) => href(g.k.route, g.id)),
  { title: 'Permission', cell: (g) => <Tag p={g.permission} /> },
];

/** The grants a user or group holds directly, per kind, linking to each resource's page. */
export function GrantsOf({ who }: { who: string }) {
  const all = useLoad(
    async () =>
      (
        await Promise.all(
          KINDS.map(async (k) => (await api<KindGrantsAnswer>('GET', `${who}/${k.segment}`)).permissions.map((g) => ({ k, id: grantIdOf(k, g), permission: g.permission }))),
        )
      ).flat(),
    [who],
  );
  return (
    <>
      <ErrorText error={all.error} />
      <DataTable label="Direct grants" columns={GRANT_COLUMNS} rows={all.data ?? []} rowKey={(g) => `${g.k.route}:${g.id}`} />
    </>
  );
}

export function UserPage({ name }: { name: string }) {
  const user = useLoad(() => api<UserAnswer>('GET', `permissions/users/${seg(name)}`), [name]);
  const confirm = useConfirm();
  const [issued, setIssued] = useState<IssuedToken>();
  const u = user.data?.user;
  return (
    <section>
      <p>
        <a href={href(u?.is_service_account ? 'service-accounts' : 'users')}>{u?.is_service_account ? 'Service accounts' : 'Users'}</a> ›
      </p>
      <h1>{name}</h1>
      <ErrorText error={user.error} />
      {u && (
        <div class="fg-panel">
          <p>
            {u.display_name} · {u.is_service_account ? 'service account' : u.is_admin ? 'administrator' : 'user'}
            {u.is_service_account ? '' : ` · signs in: ${signInText(u).toLowerCase()}`} · origin: {originText(u)}
            {u.disabled ? ' · disabled' : ''} · groups:{' '}
            {u.groups.length ? u.groups.map((g, i) => [i ? ', ' : '', <a href={href('groups', g)}>{g}</a>]) : 'none'}
          </p>
          <div class="fg-toolbar">
            <AskButton
              text="Create access key"
              ask={confirm.ask}
              request={{
                title: 'Create access key',
                text: `Create a new access key for “${name}”? Their previous key stops working at once.`,
                action: 'Create access key',
                run: async () => setIssued(await api<IssuedToken>('PATCH', 'permissions/users/access-token', { username: name })),
              }}
            />
            <AskButton
              text="Revoke access keys"
              ask={confirm.ask}
              request={removal({ title: 'Revoke access keys', text: `Revoke every access key of “${name}”?`, action: 'Revoke' }, `permissions/users/${seg(name)}/access-token`)}
            />
            {!u.bootstrap && (
              <AskButton
                text={u.disabled ? 'Enable' : 'Disable'}
                ask={confirm.ask}
                request={{
                  title: u.disabled ? 'Enable user' : 'Disable user',
                  text: u.disabled
                    ? `Enable “${name}”? Their ended tokens and sessions stay ended.`
                    : `Disable “${name}”? Their tokens and sessions end at once, and nothing of theirs works until enabled.`,
                  action: u.disabled ? 'Enable' : 'Disable',
                  run: async () => {
                    await api('POST', `permissions/users/${seg(name)}/${u.disabled ? 'enable' : 'disable'}`);
                    user.reload();
                  },
                }}
              />
            )}
          </div>
          {issued && <IssuedTokenView issued={issued} />}
        </div>
      )}
      <h2>Direct grants</h2>
      <GrantsOf who={`permissions/users/${seg(name)}`} />
      {confirm.dialog}
    </section>
  );
}
