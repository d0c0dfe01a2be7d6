import { useState } from 'preact/hooks';
import { api, qs, seg, type TokenStateJson, type UserSearchAnswer } from '../api';
import { actionsColumn, AskButton, AskForm, ErrorText, SearchTable, TextField, useConfirm, usePagedSearch, type Column, type ConfirmRequest } from '../components';
import { day, expirationOf } from '../dates';
import { useTokenExpiry } from '../token-limits';
import { change, removal } from '../changes';
import { IssuedTokenView, type IssuedToken } from './access-key';
import { originColumn, userLink } from './users';

type ServiceAccountRow = UserSearchAnswer['users'][number];

/** A service account's tokens in words: whether one works, and until when (or since when not). */
export function tokenStateText(t: TokenStateJson): string {
  switch (t.state) {
    case 'active':
      return `Active, expires ${day(t.expires_at)}`;
    case 'expired':
      return `Expired on ${day(t.expires_at)}`;
    case 'revoked':
      return `Revoked on ${day(t.revoked_at)}`;
    case 'none':
      return 'No token';
  }
}

/** Service accounts: create one, mint a token with an expiry (shown once, with the client's exports), revoke. */
export function ServiceAccounts() {
  const s = usePagedSearch({ q: '' }, (f, token) =>
    api<UserSearchAnswer>('GET', `permissions/ui/users${qs({ q: f.q, type: 'service_account', page_token: token })}`),
  );
  const confirm = useConfirm(s.list.reload);
  const [issued, setIssued] = useState<IssuedToken>();
  const { expiry, setExpiry, problem, ready, min, max } = useTokenExpiry();
  const columns: Column<ServiceAccountRow>[] = [
    userLink('Name'),
    { title: 'Description', cell: (u) => u.display_name },
    originColumn(),
    { title: 'Token', cell: (u) => <span class={`fg-token-state fg-token-${u.token.state}`}>{tokenStateText(u.token)}</span> },
    actionsColumn((u) => (
      <>
        <AskButton
          text="Create token"
          label={`Create token for ${u.username}`}
          disabled={problem !== undefined || !ready}
          ask={confirm.ask}
          request={{
            title: 'Create token',
            text: `Create a token for “${u.username}” valid until ${problem ? expiry : day(expirationOf(expiry))}? Its previous token stops working at once.`,
            action: 'Create token',
            run: async () =>
              setIssued(await api<IssuedToken>('PATCH', 'permissions/users/access-token', { username: u.username, expiration: expirationOf(expiry) })),
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
        more={
          <>
            <TextField label="New tokens expire on" type="date" min={min} max={max} required={false} value={expiry} onChange={setExpiry} />
            <ErrorText error={problem} />
          </>
        }
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
