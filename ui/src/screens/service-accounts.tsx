import { useState } from 'preact/hooks';
import { api, qs, seg } from '../api';
import { ConfirmDialog, ErrorText, Pager, SearchBox, useLoad, usePages, type ConfirmRequest } from '../components';
import { href } from '../router';
import { IssuedTokenView, type IssuedToken } from './access-key';
import type { UserRow } from './users';

export const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);

/** Service accounts: create one, mint a token with an expiry (shown once, with the client's exports), revoke. */
export function ServiceAccounts() {
  const [q, setQ] = useState('');
  const pages = usePages();
  const list = useLoad(
    () =>
      api<{ users: UserRow[]; next_page_token?: string }>('GET', `permissions/ui/users${qs({ q, type: 'service_account', page_token: pages.token })}`),
    [q, pages.token],
  );
  const [confirm, setConfirm] = useState<ConfirmRequest>();
  const [issued, setIssued] = useState<IssuedToken>();
  const [name, setName] = useState('');
  const [display, setDisplay] = useState('');
  const [expiry, setExpiry] = useState(inDays(90));

  return (
    <section>
      <h1>Service accounts</h1>
      <div class="fg-panel">
        <h2>Create a service account</h2>
        <form
          class="fg-toolbar"
          onSubmit={(e) => {
            e.preventDefault();
            const username = name.trim();
            if (!username) return;
            setConfirm({
              title: 'Create service account',
              text: `Create service account “${username}”?`,
              action: 'Create',
              run: async () => {
                await api('POST', 'users/create', {
                  username,
                  ...(display.trim() ? { display_name: display.trim() } : {}),
                  is_admin: false,
                  is_service_account: true,
                });
                setName('');
                setDisplay('');
              },
            });
          }}
        >
          <label class="fg-field">
            <span>Name</span>
            <input value={name} required onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          </label>
          <label class="fg-field">
            <span>Description</span>
            <input value={display} onInput={(e) => setDisplay((e.target as HTMLInputElement).value)} />
          </label>
          <button class="fg-button fg-primary" type="submit">
            Create service account
          </button>
        </form>
      </div>
      {issued && <IssuedTokenView issued={issued} />}
      <div class="fg-toolbar">
        <SearchBox label="Search service accounts" value={q} onChange={(v) => (setQ(v), pages.reset())} />
        <label class="fg-field">
          <span>New tokens expire on</span>
          <input type="date" value={expiry} onInput={(e) => setExpiry((e.target as HTMLInputElement).value)} />
        </label>
      </div>
      <ErrorText error={list.error} />
      <table class="fg-table">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Description</th>
            <th scope="col">
              <span class="fg-sr">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.users ?? []).map((u) => (
            <tr key={u.username}>
              <td>
                <a href={href('users', u.username)}>{u.username}</a>
              </td>
              <td>{u.display_name}</td>
              <td>
                <div class="fg-actions">
                  <button
                    class="fg-button"
                    type="button"
                    aria-label={`Create token for ${u.username}`}
                    onClick={() =>
                      setConfirm({
                        title: 'Create token',
                        text: `Create a token for “${u.username}” valid until ${expiry}? Its previous token stops working at once.`,
                        action: 'Create token',
                        run: async () =>
                          setIssued(
                            await api<IssuedToken>('PATCH', 'permissions/users/access-token', {
                              username: u.username,
                              expiration: `${expiry}T00:00:00Z`,
                            }),
                          ),
                      })
                    }
                  >
                    Create token
                  </button>
                  <button
                    class="fg-button fg-danger"
                    type="button"
                    aria-label={`Revoke tokens of ${u.username}`}
                    onClick={() =>
                      setConfirm({
                        title: 'Revoke tokens',
                        text: `Revoke every token of “${u.username}”? Programs using them stop working.`,
                        action: 'Revoke',
                        danger: true,
                        run: () => api('DELETE', `permissions/users/${seg(u.username)}/access-token`),
                      })
                    }
                  >
                    Revoke tokens
                  </button>
                </div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager pages={pages} next={list.data?.next_page_token} />
      <ConfirmDialog request={confirm} onDone={(c) => (setConfirm(undefined), c && list.reload())} />
    </section>
  );
}
