import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { Paged } from '../../../src/admin/api-types.js';
import { DataTable, type DataTableProps } from './data-table';
import { ErrorText } from './feedback';
import { useLoad } from './load';
import { Pager, usePages } from './pager';
import { SearchBox } from './search-box';

/**
 * What the server searches by (`filters`, each one string) and its pages of the answer, loaded again
 * when either changes (or `deps` do): a changed filter starts again at page one.
 */
export function usePagedSearch<F extends Record<string, string>, T extends Paged>(initial: F, load: (filters: F, pageToken: string | undefined) => Promise<T>, deps: readonly unknown[] = []) {
  const [filters, setFilters] = useState<F>(initial);
  const pages = usePages();
  const list = useLoad(() => load(filters, pages.token), [...deps, ...Object.values(filters), pages.token]);
  const set = (key: keyof F) => (value: string) => {
    setFilters((f) => ({ ...f, [key]: value }));
    pages.reset();
  };
  return { filters, set, pages, list };
}

export type PagedSearch<F extends Record<string, string>, T extends Paged> = ReturnType<typeof usePagedSearch<F, T>>;

export interface PagedTableProps<F extends Record<string, string>, T extends Paged, R> extends Omit<DataTableProps<R>, 'rows'> {
  /** The search fields above the table. */
  readonly toolbar?: ComponentChildren;
  readonly paged: PagedSearch<F, T>;
  /** The rows of a page of the answer. */
  readonly rows: (answer: T) => readonly R[];
}

/** One page of a server-searched list: its search fields, the error if loading failed, the rows (`empty` said once loaded), the pager. */
export function PagedTable<F extends Record<string, string>, T extends Paged, R>({ toolbar, paged, rows, empty, ...table }: PagedTableProps<F, T, R>) {
  const { list, pages } = paged;
  return (
    <>
      {toolbar !== undefined && <div class="fg-toolbar">{toolbar}</div>}
      <ErrorText error={list.error} />
      <DataTable {...table} rows={list.data ? rows(list.data) : []} empty={list.loading ? undefined : empty} />
      <Pager pages={pages} next={list.data?.next_page_token} />
    </>
  );
}

/** A list searched by one text (`q`), with a search box named `search` (and any further fields, `more`). */
export function SearchTable<T extends Paged, R>({ search, more, ...table }: Omit<PagedTableProps<{ q: string }, T, R>, 'toolbar'> & { search: string; more?: ComponentChildren }) {
  const { filters, set } = table.paged;
  return (
    <PagedTable
      {...table}
      toolbar={
        <>
          <SearchBox label={search} value={filters.q} onChange={set('q')} />
          {more}
        </>
      }
    />
  );
}
