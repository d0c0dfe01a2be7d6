import type { ComponentChildren } from 'preact';
import { api, qs, type AuditAnswer, type AuditRow } from '../api';
import { PagedTable, SearchBox, SelectField, usePagedSearch, type Column } from '../components';
import { dateTime } from '../dates';

const ACTIONS = ['', 'grant.', 'pattern.', 'user.', 'group.', 'token.', 'session.'].map((a) => [a, a ? `${a}*` : 'Any'] as const);

/** An ISO instant inside a recorded value (a token's expiry, a user's creation), shown as a local date. */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;

/** One recorded value in words: text as it is, an instant as a local date, a list or object by its parts. */
export function valueText(v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'string') return INSTANT.test(v) ? dateTime(v) : v;
  if (typeof v === 'number' || typeof v === 'boolean') return v === true ? 'yes' : v === false ? 'no' : String(v);
  if (Array.isArray(v)) return v.map(valueText).join(', ');
  return Object.entries(v as Record<string, unknown>)
    .map(([k, x]) => `${fieldName(k)} ${valueText(x)}`)
    .join(', ');
}

/** A recorded field's name in words (`expires_at` → `expires at`). */
const fieldName = (k: string) => k.replace(/_/g, ' ');

interface ChangeLine {
  readonly field?: string;
  readonly before?: unknown;
  readonly after?: unknown;
  /** Whether a side is recorded (a creation has no before, a removal no after). */
  readonly hasBefore: boolean;
  readonly hasAfter: boolean;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The change an entry records, a line per field: an object's fields that changed (or, for a creation
 * or removal, each field it had), else the one value before and after.
 */
export function changeLines(before: unknown, after: unknown): ChangeLine[] {
  const hasBefore = before !== null && before !== undefined;
  const hasAfter = after !== null && after !== undefined;
  if ((isRecord(before) || !hasBefore) && (isRecord(after) || !hasAfter) && (hasBefore || hasAfter)) {
    const b = isRecord(before) ? before : {};
    const a = isRecord(after) ? after : {};
    const fields = [...new Set([...Object.keys(b), ...Object.keys(a)])];
    const changed = hasBefore && hasAfter ? fields.filter((f) => !same(b[f], a[f])) : fields;
    return changed.map((field) => ({ field, before: b[field], after: a[field], hasBefore: hasBefore && field in b, hasAfter: hasAfter && field in a }));
  }
  if (!hasBefore && !hasAfter) return [];
  return [{ before, after, hasBefore, hasAfter }];
}

/** One line of a change: `field: old → new`, `field: new` (created), `field: old (removed)`. */
function Line({ l }: { l: ChangeLine }) {
  const old = <del class="fg-old">{valueText(l.before)}</del>;
  const now = <ins class="fg-new">{valueText(l.after)}</ins>;
  let body: ComponentChildren;
  if (l.hasBefore && l.hasAfter) body = <>{old} <span aria-label="changed to">→</span> {now}</>;
  else if (l.hasAfter) body = now;
  else body = <>{old} <span class="fg-muted">(removed)</span></>;
  return (
    <li>
      {l.field !== undefined && <span class="fg-field-name">{fieldName(l.field)}: </span>}
      {body}
    </li>
  );
}

export function Change({ e }: { e: Pick<AuditRow, 'old_value' | 'new_value'> }) {
  const lines = changeLines(e.old_value, e.new_value);
  if (lines.length === 0) return <span class="fg-muted">—</span>;
  return (
    <ul class="fg-change">
      {lines.map((l) => (
        <Line l={l} />
      ))}
    </ul>
  );
}

/** A target (`experiment:2/group:team-a`) as its parts, each kept whole on its line. */
function Target({ t }: { t: string }) {
  const parts = t.split(/\/(?=(?:user|group):)/);
  return (
    <>
      {parts.map((p, i) => (
        <span class="fg-token">
          {i > 0 ? 'for ' : ''}
          {p.replace(/^(\w+):/, '$1 ')}
        </span>
      ))}
    </>
  );
}

const COLUMNS: readonly Column<AuditRow>[] = [
  { title: 'When', cell: (e) => <time dateTime={e.at}>{dateTime(e.at)}</time> },
  { title: 'Actor', cell: (e) => <span class="fg-token">{e.actor}</span> },
  { title: 'Action', cell: (e) => <span class="fg-token">{e.action}</span> },
  { title: 'Target', cell: (e) => <Target t={e.target} /> },
  { title: 'Change', cell: (e) => <Change e={e} /> },
];

export function Audit() {
  const s = usePagedSearch({ actor: '', action: '', target: '' }, (f, token) =>
    api<AuditAnswer>('GET', `permissions/ui/audit${qs({ ...f, page_token: token })}`),
  );
  return (
    <section>
      <h1>Audit log</h1>
      <p class="fg-muted">Every change to users, groups, grants and tokens, newest first; times are in your time zone.</p>
      <div class="fg-audit">
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
      </div>
    </section>
  );
}
