import { api, qs, type AuditAnswer, type AuditRow } from '../api';
import { PagedTable, SearchBox, SelectField, usePagedSearch, type Column } from '../components';

const ACTIONS = ['', 'grant.', 'user.', 'group.', 'token.', 'session.'].map((a) => [a, a ? `${a}*` : 'Any'] as const);
const show = (v: unknown) => (v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v));

const COLUMNS: readonly Column<AuditRow>[] = [
  { title: 'When (UTC)', cell: (e) => e.at.replace('T', ' ').slice(0, 19) },
  { title: 'Actor', cell: (e) => e.actor },
  { title: 'Action', cell: (e) => e.action },
  { title: 'Target', cell: (e) => e.target },
  { title: 'Before', cell: (e) => show(e.old_value) },
  { title: 'After', cell: (e) => show(e.new_value) },
];

export function Audit() {
  const s = usePagedSearch({ actor: '', action: '', target: '' }, (f, token) =>
    api<AuditAnswer>('GET', `permissions/ui/audit${qs({ ...f, page_token: token })}`),
  );
  return (
    <section>
      <h1>Audit log</h1>
      <PagedTable
        label="Audit log"
        toolbar={
          <>
            <SearchBox label="Actor (exact)" value={s.filters.actor} onChange={s.set('actor')} />
            <SelectField label="Action" value={s.filters.action} options={ACTIONS} onChange={s.set('action')} />
            <SearchBox label="Target contains" value={s.filters.target} onChange={s.set('target')} />
          </>
        }
        paged={s}
        columns={COLUMNS}
        rows={(a) => a.entries}
        rowKey={(e) => String(e.id)}
      />
    </section>
  );
}
