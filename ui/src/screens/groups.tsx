import { useState } from 'preact/hooks';
import { api, qs, seg, type GroupMembersAnswer, type GroupRow, type GroupSearchAnswer, type UserJson } from '../api';
import { actionsColumn, AskButton, AskForm, DataTable, ErrorText, linkColumn, SearchTable, TextField, useConfirm, useLoad, usePagedSearch, type Column, type ConfirmRequest } from '../components';
import { change, removal } from '../changes';
import { href } from '../router';
import { GrantsOf, userLink } from './users';

const GROUP_COLUMNS: readonly Column<GroupRow>[] = [linkColumn('Group', (g) => g.name, (g) => href('groups', g.name)), { title: 'Members', cell: (g) => g.members }];

/**
 * One name typed, then confirmed: `request` is the confirmation for the name (trimmed); `done` empties
 * the field once the change is made.
 */
function NameForm({ label, submit, request, ask }: { label: string; submit: string; request: (name: string, done: () => void) => ConfirmRequest; ask: (r: ConfirmRequest) => void }) {
  const [name, setName] = useState('');
  return (
    <AskForm submit={submit} ask={ask} request={() => (name.trim() ? request(name.trim(), () => setName('')) : undefined)}>
      <TextField label={label} value={name} onChange={setName} />
    </AskForm>
  );
}

export function Groups() {
  const s = usePagedSearch({ q: '' }, (f, token) => api<GroupSearchAnswer>('GET', `permissions/ui/groups${qs({ q: f.q, page_token: token })}`));
  const confirm = useConfirm(s.list.reload);
  return (
    <section>
      <h1>Groups</h1>
      <div class="fg-panel">
        <h2>Create a group</h2>
        <p class="fg-muted">Groups normally come from the identity provider's roles at sign-in; create one ahead of time here.</p>
        <NameForm
          label="Group name"
          submit="Create group"
          ask={confirm.ask}
          request={(group_name, done) => change({ title: 'Create group', text: `Create group “${group_name}”?`, action: 'Create' }, 'POST', 'permissions/groups', { group_name }, done)}
        />
      </div>
      <SearchTable label="Groups" search="Search groups" paged={s} rows={(a) => a.groups} columns={GROUP_COLUMNS} rowKey={(g) => g.name} />
      {confirm.dialog}
    </section>
  );
}

export function GroupPage({ name }: { name: string }) {
  const path = `permissions/groups/${seg(name)}`;
  const members = useLoad(() => api<GroupMembersAnswer>('GET', `${path}/users`), [name]);
  const confirm = useConfirm(members.reload);
  const columns: Column<UserJson>[] = [
    userLink('User'),
    { title: 'Display name', cell: (u) => u.display_name },
    actionsColumn((u) => (
      <AskButton
        text="Remove"
        label={`Remove ${u.username}`}
        ask={confirm.ask}
        request={removal({ title: 'Remove member', text: `Remove “${u.username}” from group “${name}”?`, action: 'Remove' }, `${path}/users/${seg(u.username)}`)}
      />
    )),
  ];
  return (
    <section>
      <p>
        <a href={href('groups')}>Groups</a> ›
      </p>
      <h1>{name}</h1>
      <h2>Members</h2>
      <NameForm
        label="User name"
        submit="Add member"
        ask={confirm.ask}
        request={(username, done) => change({ title: 'Add member', text: `Add “${username}” to group “${name}”?`, action: 'Add' }, 'POST', `${path}/users`, { username }, done)}
      />
      <ErrorText error={members.error} />
      <DataTable label="Members" columns={columns} rows={members.data?.users ?? []} rowKey={(u) => u.username} />
      <h2>Grants</h2>
      <p class="fg-muted">Grant this group access from a resource's page.</p>
      <GrantsOf who={path} />
      {confirm.dialog}
    </section>
  );
}
