import type { ComponentChildren } from 'preact';

export interface Column<T> {
  readonly title: string;
  /** Read by screen readers only (an actions column needs a header, not a visible one). */
  readonly hiddenTitle?: boolean;
  readonly cell: (row: T) => ComponentChildren;
}

export interface DataTableProps<T> {
  /** The table's accessible name. */
  readonly label: string;
  readonly columns: readonly Column<T>[];
  readonly rows: readonly T[];
  readonly rowKey: (row: T) => string;
  /** Said in one cell when there are no rows; none while loading (`undefined`). */
  readonly empty?: string;
  readonly caption?: ComponentChildren;
  /** A row's class, to make one stand out. */
  readonly rowClass?: (row: T) => string | undefined;
}

/** Rows as a table, one cell a column. */
export function DataTable<T>({ label, columns, rows, rowKey, empty, caption, rowClass }: DataTableProps<T>) {
  return (
    <table class="fg-table" aria-label={label}>
      {caption !== undefined && <caption class="fg-muted">{caption}</caption>}
      <thead>
        <tr>
          {columns.map((c) => (
            <th scope="col">{c.hiddenTitle ? <span class="fg-sr">{c.title}</span> : c.title}</th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={rowKey(r)} class={rowClass?.(r)}>
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

/** A column of links: each row's text opening its page. */
export const linkColumn = <T,>(title: string, text: (row: T) => string, to: (row: T) => string): Column<T> => ({
  title,
  cell: (r) => <a href={to(r)}>{text(r)}</a>,
});

/** The actions column: its buttons at the row's end, its header for screen readers only. */
export const actionsColumn = <T,>(buttons: (row: T) => ComponentChildren): Column<T> => ({
  title: 'Actions',
  hiddenTitle: true,
  cell: (r) => <div class="fg-actions">{buttons(r)}</div>,
});
