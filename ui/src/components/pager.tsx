import { useState } from 'preact/hooks';

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

export type Pages = ReturnType<typeof usePages>;

export function Pager({ pages, next }: { pages: Pages; next: string | undefined }) {
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
