import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

export { PERMISSIONS, type Permission } from '../../src/resources/permissions.js';

export const Tag = ({ p }: { p: string }) => <span class={`fg-tag fg-${p}`}>{p}</span>;

export function ErrorText({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p class="fg-error" role="alert">
      {error instanceof Error ? error.message : String(error)}
    </p>
  );
}

/** A search box whose value is sent to the server (after a short pause in typing). */
export function SearchBox({ label, value, onChange }: { label: string; value: string; onChange: (v: string) => void }) {
  const [text, setText] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => text !== value && onChange(text), 250);
    return () => clearTimeout(t);
  }, [text]);
  return (
    <label class="fg-field">
      <span>{label}</span>
      <input type="search" value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
    </label>
  );
}

/** Server-side pages: a stack of the tokens that led here, so Previous works too. */
export function usePages() {
  const [tokens, setTokens] = useState<(string | undefined)[]>([undefined]);
  return {
    token: tokens[tokens.length - 1],
    page: tokens.length,
    next: (t: string) => setTokens([...tokens, t]),
    prev: () => setTokens(tokens.slice(0, -1)),
    reset: () => setTokens([undefined]),
  };
}

export function Pager({ pages, next }: { pages: ReturnType<typeof usePages>; next: string | undefined }) {
  return (
    <nav class="fg-pager" aria-label="Pages">
      <button class="fg-button" type="button" disabled={pages.page <= 1} onClick={pages.prev}>
        Previous
      </button>
      <span class="fg-muted">Page {pages.page}</span>
      <button class="fg-button" type="button" disabled={!next} onClick={() => next && pages.next(next)}>
        Next
      </button>
    </nav>
  );
}

/** Loads with `load` whenever `deps` change; `reload` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    // What was shown belongs to the old inputs: never left on screen beside the new ones.
    setState({ loading: true });
    load().then(
      (data) => live && setState({ data, loading: false }),
      (error: unknown) => live && setState({ error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

export interface ConfirmRequest {
  readonly title: string;
  readonly text: ComponentChildren;
  readonly action: string;
  readonly danger?: boolean;
  readonly run: () => Promise<unknown>;
}

/** Every change is confirmed first: what will happen, in words, with the names shown as text. */
export function ConfirmDialog({ request, onDone }: { request: ConfirmRequest | undefined; onDone: (changed: boolean) => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const ok = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    setError(undefined);
    if (request) ok.current?.focus();
  }, [request]);
  if (!request) return null;
  const confirm = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await request.run();
      onDone(true);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="fg-backdrop" onKeyDown={(e) => e.key === 'Escape' && onDone(false)}>
      <div class="fg-dialog" role="dialog" aria-modal="true" aria-labelledby="fg-confirm-title">
        <h2 id="fg-confirm-title">{request.title}</h2>
        <p>{request.text}</p>
        <ErrorText error={error} />
        <div class="fg-actions">
          <button class="fg-button" type="button" onClick={() => onDone(false)}>
            Cancel
          </button>
          <button ref={ok} class={`fg-button ${request.danger ? 'fg-danger' : 'fg-primary'}`} type="button" disabled={busy} onClick={confirm}>
            {request.action}
          </button>
        </div>
      </div>
    </div>
  );
}

/** A secret shown once, with a copy button. */
export function Secret({ label, value, id }: { label: string; value: string; id?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div>
      <strong>{label}</strong>
      <pre id={id}>{value}</pre>
      <button
        class="fg-button"
        type="button"
        onClick={() => navigator.clipboard?.writeText(value).then(() => setCopied(true), () => setCopied(false))}
      >
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
}

export interface Column<T> {
  readonly title: string;
  /** Read by screen readers only (an actions column needs a header, not a visible one). */
  readonly hiddenTitle?: boolean;
  readonly cell: (row: T) => ComponentChildren;
}

/** Rows as a table, one cell a column; `empty` is said when there are no rows (once loaded). */
export function DataTable<T>({ label, columns, rows, rowKey, empty }: { label: string; columns: readonly Column<T>[]; rows: readonly T[]; rowKey: (row: T) => string; empty?: string }) {
  return (
    <table class="fg-table" aria-label={label}>
      <thead>
        <tr>
          {columns.map((c) => (
            <th scope="col">{c.hiddenTitle ? <span class="fg-sr">{c.title}</span> : c.title}</th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={rowKey(r)}>
            {columns.map((c) => (
              <td>{c.cell(r)}</td>
            ))}
          </tr>
        ))}
        {empty !== undefined && rows.length === 0 && (
          <tr>
            <td colSpan={columns.length} class="fg-muted">
              {empty}
            </td>
          </tr>
        )}
      </tbody>
    </table>
  );
}

/** A labelled choice among `options` ([value, text] pairs); named by `label` alone, not by the option chosen too. */
export function SelectField({ label, id, value, options, onChange }: { label: string; id?: string; value: string; options: readonly (readonly [string, string])[]; onChange: (v: string) => void }) {
  return (
    <label class="fg-field">
      <span>{label}</span>
      <select id={id} aria-label={label} value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value)}>
        {options.map(([v, text]) => (
          <option value={v}>{text}</option>
        ))}
      </select>
    </label>
  );
}

/** A labelled, required text input. */
export function TextField({ label, id, value, placeholder, onChange }: { label: string; id?: string; value: string; placeholder?: string; onChange: (v: string) => void }) {
  return (
    <label class="fg-field">
      <span>{label}</span>
      <input id={id} value={value} required placeholder={placeholder} onInput={(e) => onChange((e.target as HTMLInputElement).value)} />
    </label>
  );
}

/** A row of fields that submits without leaving the page. */
export function ToolbarForm({ onSubmit, children }: { onSubmit: () => void; children: ComponentChildren }) {
  return (
    <form
      class="fg-toolbar"
      onSubmit={(e) => {
        e.preventDefault();
        onSubmit();
      }}
    >
      {children}
    </form>
  );
}
