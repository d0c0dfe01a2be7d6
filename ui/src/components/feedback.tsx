/** A permission as a coloured tag (its class says which: `fg-READ`, `fg-MANAGE`, …). */
export const Tag = ({ p }: { p: string }) => <span class={`fg-tag fg-${p}`}>{p}</span>;

/** What went wrong, said to screen readers as it appears; nothing when nothing did. */
export function ErrorText({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p class="fg-error" role="alert">
      {error instanceof Error ? error.message : String(error)}
    </p>
  );
}
