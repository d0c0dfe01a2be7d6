import { useState } from 'preact/hooks';
import { api, qs, seg } from '../api';
import { ConfirmDialog, ErrorText, Pager, SearchBox, Tag, useLoad, usePages, type ConfirmRequest } from '../components';
import { KINDS } from '../kinds';
import { href } from '../router';
import { IssuedTokenView, type IssuedToken } from './access-key';

export interface UserRow {
  username: string;
  display_name: string;
  is_admin: boolean;
  is_service_account: boolean;
  created_at: string;
  sign_in: 'local' | 'oidc';
  oidc_linked: boolean;
  /** The bootstrap admin (FLOWGATE_ADMIN_USERNAME), which configuration owns. */
  bootstrap?: boolean;
}

/** How the person signs in, and for the identity provider whether their account is bound yet. */
export function signInText(u: UserRow): string {
  if (u.sign_in === 'local') return 'Access tokens only';
  return u.oidc_linked ? 'Identity provider (linked)' : 'Identity provider (awaiting first sign-in)';
}

export function Users() {
  const [q, setQ] = useState('');
  const pages = usePages();
  const list = useLoad(
    () =>
      api<{ users: UserRow[]; sign_in_default: UserRow['sign_in']; next_page_token?: string }>(
        'GET',
        `permissions/ui/users${qs({ q, type: 'user', page_token: pages.token })}`,
      ),
    [q, pages.token],
  );
  const [confirm, setConfirm] = useState<ConfirmRequest>();
  const [name, setName] = useState('');
  const [admin, setAdmin] = useState(false);
  // Where people sign in through the identity provider, that is the default and the other way is a choice.
  const withProvider = list.data?.sign_in_default === 'oidc';
  const [tokensOnly, setTokensOnly] = useState(false);
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
        <form
          class="fg-toolbar"
          onSubmit={(e) => {
            e.preventDefault();
            const username = name.trim();
            if (!username) return;
            // Without the choice shown, flowgate's default (access tokens only where OIDC is not configured).
            const signIn = withProvider ? (tokensOnly ? 'local' : 'oidc') : undefined;
            setConfirm({
              title: 'Create user',
              text:
                `Create user “${username}”${admin ? ' as an administrator' : ''}` +
                (signIn === 'oidc' ? ', who signs in with the identity provider?' : signIn === 'local' ? ', who signs in with access tokens only?' : '?'),
              action: 'Create',
              run: async () => {
                await api('POST', 'users/create', { username, is_admin: admin, is_service_account: false, ...(signIn ? { sign_in: signIn } : {}) });
                setName('');
              },
            });
          }}
        >
          <label class="fg-field">
            <span>User name</span>
            <input value={name} required onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          </label>
          <label class="fg-field">
            <span>Administrator</span>
            <select value={admin ? 'yes' : 'no'} onChange={(e) => setAdmin((e.target as HTMLSelectElement).value === 'yes')}>
              <option value="no">No</option>
              <option value="yes">Yes</option>
            </select>
          </label>
          {withProvider && (
            <label class="fg-field">
              <span>Signs in</span>
              <select value={tokensOnly ? 'local' : 'oidc'} onChange={(e) => setTokensOnly((e.target as HTMLSelectElement).value === 'local')}>
                <option value="oidc">With the identity provider</option>
                <option value="local">With access tokens only</option>
              </select>
            </label>
          )}
          <button class="fg-button fg-primary" type="submit">
            Create user
          </button>
        </form>
      </div>
      <div class="fg-toolbar">
        <SearchBox label="Search users" value={q} onChange={(v) => (setQ(v), pages.reset())} />
      </div>
      <ErrorText error={list.error} />
      <table class="fg-table">
        <thead>
          <tr>
            <th scope="col">User name</th>
            <th scope="col">Display name</th>
            <th scope="col">Role</th>
            <th scope="col">Signs in</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.users ?? []).map((u) => (
            <tr key={u.username}>
              <td>
                <a href={href('users', u.username)}>{u.username}</a>
              </td>
              <td>{u.display_name}</td>
              <td>{u.bootstrap ? 'Administrator (configured)' : u.is_admin ? 'Administrator' : 'User'}</td>
              <td>{signInText(u)}</td>
              <td>{u.created_at.slice(0, 10)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager pages={pages} next={list.data?.next_page_token} />
      <ConfirmDialog request={confirm} onDone={(c) => (setConfirm(undefined), c && list.reload())} />
    </section>
  );
}

interface KindGrant {
  permission: string;
  experiment_id?: string;
  name?: string;
}

/** The grants a user or group holds directly, per kind, linking to each resource's page. */
export function GrantsOf({ who }: { who: string }) {
  const all = useLoad(
    () =>
      Promise.all(
        KINDS.map(async (k) => ({ k, rows: (await api<{ permissions: KindGrant[] }>('GET', `${who}/${k.segment}`)).permissions })),
      ),
    [who],
  );
  return (
    <>
      <ErrorText error={all.error} />
      <table class="fg-table" aria-label="Direct grants">
        <thead>
          <tr>
            <th scope="col">Kind</th>
            <th scope="col">Resource</th>
            <th scope="col">Permission</th>
          </tr>
        </thead>
        <tbody>
          {(all.data ?? []).flatMap(({ k, rows }) =>
            rows.map((r) => {
              const id = r.experiment_id ?? r.name ?? '';
              return (
                <tr key={`${k.route}:${id}`}>
                  <td>{k.title}</td>
                  <td>
                    <a href={href(k.route, id)}>{id}</a>
                  </td>
                  <td>
                    <Tag p={r.permission} />
                  </td>
                </tr>
              );
            }),
          )}
        </tbody>
      </table>
    </>
  );
}

export function UserPage({ name }: { name: string }) {
  const user = useLoad(() => api<{ user: UserRow & { groups: string[] } }>('GET', `permissions/users/${seg(name)}`), [name]);
  const [confirm, setConfirm] = useState<ConfirmRequest>();
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
            {u.is_service_account ? '' : ` · signs in: ${signInText(u).toLowerCase()}`} · groups:{' '}
            {u.groups.length ? u.groups.map((g, i) => [i ? ', ' : '', <a href={href('groups', g)}>{g}</a>]) : 'none'}
          </p>
          <div class="fg-toolbar">
            <button
              class="fg-button"
              type="button"
              onClick={() =>
                setConfirm({
                  title: 'Create access key',
                  text: `Create a new access key for “${name}”? Their previous key stops working at once.`,
                  action: 'Create access key',
                  run: async () => setIssued(await api<IssuedToken>('PATCH', 'permissions/users/access-token', { username: name })),
                })
              }
            >
              Create access key
            </button>
            <button
              class="fg-button fg-danger"
              type="button"
              onClick={() =>
                setConfirm({
                  title: 'Revoke access keys',
                  text: `Revoke every access key of “${name}”?`,
                  action: 'Revoke',
                  danger: true,
                  run: () => api('DELETE', `permissions/users/${seg(name)}/access-token`),
                })
              }
            >
              Revoke access keys
            </button>
          </div>
          {issued && <IssuedTokenView issued={issued} />}
        </div>
      )}
      <h2>Direct grants</h2>
      <GrantsOf who={`permissions/users/${seg(name)}`} />
      <ConfirmDialog request={confirm} onDone={() => setConfirm(undefined)} />
    </section>
  );
}
