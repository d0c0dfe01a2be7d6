import { useEffect, useState } from 'preact/hooks';

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
