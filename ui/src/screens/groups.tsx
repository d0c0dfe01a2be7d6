import { useState } from 'preact/hooks';
import { api, qs, seg } from '../api';
import { ConfirmDialog, ErrorText, Pager, SearchBox, useLoad, usePages, type ConfirmRequest } from '../components';
import { href } from '../router';
import { GrantsOf, type UserRow } from './users';

export function Groups() {
  const [q, setQ] = useState('');
  const pages = usePages();
  const list = useLoad(
    () =>
      api<{ groups: { name: string; members: number }[]; next_page_token?: string }>('GET', `permissions/ui/groups${qs({ q, page_token: pages.token })}`),
    [q, pages.token],
  );
  const [confirm, setConfirm] = useState<ConfirmRequest>();
  const [name, setName] = useState('');
  return (
    <section>
      <h1>Groups</h1>
      <div class="fg-panel">
        <h2>Create a group</h2>
        <p class="fg-muted">Groups normally come from the identity provider's roles at sign-in; create one ahead of time here.</p>
        <form
          class="fg-toolbar"
          onSubmit={(e) => {
            e.preventDefault();
            const group_name = name.trim();
            if (!group_name) return;
            setConfirm({
              title: 'Create group',
              text: `Create group “${group_name}”?`,
              action: 'Create',
              run: async () => {
                await api('POST', 'permissions/groups', { group_name });
                setName('');
              },
            });
          }}
        >
          <label class="fg-field">
            <span>Group name</span>
            <input value={name} required onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          </label>
          <button class="fg-button fg-primary" type="submit">
            Create group
          </button>
        </form>
      </div>
      <div class="fg-toolbar">
        <SearchBox label="Search groups" value={q} onChange={(v) => (setQ(v), pages.reset())} />
      </div>
      <ErrorText error={list.error} />
      <table class="fg-table">
        <thead>
          <tr>
            <th scope="col">Group</th>
            <th scope="col">Members</th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.groups ?? []).map((g) => (
            <tr key={g.name}>
              <td>
                <a href={href('groups', g.name)}>{g.name}</a>
              </td>
              <td>{g.members}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager pages={pages} next={list.data?.next_page_token} />
      <ConfirmDialog request={confirm} onDone={(c) => (setConfirm(undefined), c && list.reload())} />
    </section>
  );
}

export function GroupPage({ name }: { name: string }) {
  const path = `permissions/groups/${seg(name)}`;
  const members = useLoad(() => api<{ users: UserRow[] }>('GET', `${path}/users`), [name]);
  const [confirm, setConfirm] = useState<ConfirmRequest>();
  const [who, setWho] = useState('');
  return (
    <section>
      <p>
        <a href={href('groups')}>Groups</a> ›
      </p>
      <h1>{name}</h1>
      <h2>Members</h2>
      <form
        class="fg-toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          const username = who.trim();
          if (!username) return;
          setConfirm({
            title: 'Add member',
            text: `Add “${username}” to group “${name}”?`,
            action: 'Add',
            run: async () => {
              await api('POST', `${path}/users`, { username });
              setWho('');
            },
          });
        }}
      >
        <label class="fg-field">
          <span>User name</span>
          <input value={who} required onInput={(e) => setWho((e.target as HTMLInputElement).value)} />
        </label>
        <button class="fg-button fg-primary" type="submit">
          Add member
        </button>
      </form>
      <ErrorText error={members.error} />
      <table class="fg-table" aria-label="Members">
        <thead>
          <tr>
            <th scope="col">User</th>
            <th scope="col">Display name</th>
            <th scope="col">
              <span class="fg-sr">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(members.data?.users ?? []).map((u) => (
            <tr key={u.username}>
              <td>
                <a href={href('users', u.username)}>{u.username}</a>
              </td>
              <td>{u.display_name}</td>
              <td>
                <div class="fg-actions">
                  <button
                    class="fg-button fg-danger"
                    type="button"
                    aria-label={`Remove ${u.username}`}
                    onClick={() =>
                      setConfirm({
                        title: 'Remove member',
                        text: `Remove “${u.username}” from group “${name}”?`,
                        action: 'Remove',
                        danger: true,
                        run: () => api('DELETE', `${path}/users/${seg(u.username)}`),
                      })
                    }
                  >
                    Remove
                  </button>
                </div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Grants</h2>
      <p class="fg-muted">Grant this group access from a resource's page.</p>
      <GrantsOf who={path} />
      <ConfirmDialog request={confirm} onDone={(c) => (setConfirm(undefined), c && members.reload())} />
    </section>
  );
}
