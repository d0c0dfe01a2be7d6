import { useState } from 'preact/hooks';
import { api, qs, seg, type AdminUserJson, type UserSearchAnswer } from '../api';
import { actionsColumn, AskButton, AskForm, SearchTable, TextField, useConfirm, usePagedSearch, type Column, type ConfirmRequest } from '../components';
import { change, removal } from '../changes';
import { IssuedTokenView, type IssuedToken } from './access-key';
import { userLink } from './users';

export const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);

/** Service accounts: create one, mint a token with an expiry (shown once, with the client's exports), revoke. */
export function ServiceAccounts() {
  const s = usePagedSearch({ q: '' }, (f, token) =>
    api<UserSearchAnswer>('GET', `permissions/ui/users${qs({ q: f.q, type: 'service_account', page_token: token })}`),
  );
  const confirm = useConfirm(s.list.reload);
  const [issued, setIssued] = useState<IssuedToken>();
  const [expiry, setExpiry] = useState(inDays(90));

  const columns: Column<AdminUserJson>[] = [
    userLink('Name'),
    { title: 'Description', cell: (u) => u.display_name },
    actionsColumn((u) => (
      <>
        <AskButton
          text="Create token"
          label={`Create token for ${u.username}`}
          ask={confirm.ask}
          request={{
            title: 'Create token',
            text: `Create a token for “${u.username}” valid until ${expiry}? Its previous token stops working at once.`,
            action: 'Create token',
            run: async () =>
              setIssued(await api<IssuedToken>('PATCH', 'permissions/users/access-token', { username: u.username, expiration: `${expiry}T00:00:00Z` })),
          }}
        />
        <AskButton
          text="Revoke tokens"
          label={`Revoke tokens of ${u.username}`}
          ask={confirm.ask}
          request={removal(
            { title: 'Revoke tokens', text: `Revoke every token of “${u.username}”? Programs using them stop working.`, action: 'Revoke' },
            `permissions/users/${seg(u.username)}/access-token`,
          )}
        />
      </>
    )),
  ];

  return (
    <section>
      <h1>Service accounts</h1>
      <div class="fg-panel">
        <h2>Create a service account</h2>
        <CreateServiceAccount ask={confirm.ask} />
      </div>
      {issued && <IssuedTokenView issued={issued} />}
      <SearchTable
        label="Service accounts"
        search="Search service accounts"
        more={<TextField label="New tokens expire on" type="date" required={false} value={expiry} onChange={setExpiry} />}
        paged={s}
        rows={(a) => a.users}
        columns={columns}
        rowKey={(u) => u.username}
      />
      {confirm.dialog}
    </section>
  );
}

function CreateServiceAccount({ ask }: { ask: (r: ConfirmRequest) => void }) {
  const [name, setName] = useState('');
  const [display, setDisplay] = useState('');
  const request = (): ConfirmRequest | undefined => {
    const username = name.trim();
    if (!username) return undefined;
    const account = { username, ...(display.trim() ? { display_name: display.trim() } : {}), is_admin: false, is_service_account: true };
    return change({ title: 'Create service account', text: `Create service account “${username}”?`, action: 'Create' }, 'POST', 'users/create', account, () => {
      setName('');
      setDisplay('');
    });
  };
  return (
    <AskForm submit="Create service account" request={request} ask={ask}>
      <TextField label="Name" value={name} onChange={setName} />
      <TextField label="Description" required={false} value={display} onChange={setDisplay} />
    </AskForm>
  );
}
