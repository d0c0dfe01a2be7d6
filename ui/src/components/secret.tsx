import { useState } from 'preact/hooks';

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
