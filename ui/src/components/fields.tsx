import type { ComponentChildren } from 'preact';

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

/** The same words as value and text: a choice among permissions, say. */
export const optionsOf = (values: readonly string[]) => values.map((v) => [v, v] as const);

export interface TextFieldProps {
  readonly label: string;
  readonly id?: string;
  readonly value: string;
  readonly placeholder?: string;
  /** `date` for a day; text by default. */
  readonly type?: 'text' | 'date';
  /** A date field's first day offered (`YYYY-MM-DD`). */
  readonly min?: string;
  /** A date field's last day offered (`YYYY-MM-DD`). */
  readonly max?: string;
  /** Required unless said otherwise. */
  readonly required?: boolean;
  /** Shown, not changed (then without `onChange`). */
  readonly readOnly?: boolean;
  /** Names offered as the user types (a `datalist` of this id). */
  readonly suggest?: { readonly id: string; readonly names: readonly string[] };
  readonly onChange?: (v: string) => void;
}

/** A labelled text (or date) input. */
export function TextField({ label, id, value, placeholder, type, min, max, required = true, readOnly, suggest, onChange }: TextFieldProps) {
  return (
    <label class="fg-field">
      <span>{label}</span>
      <input
        id={id}
        type={type}
        min={min}
        max={max}
        value={value}
        required={required && !readOnly}
        readOnly={readOnly}
        placeholder={placeholder}
        list={suggest?.id}
        autocomplete={suggest ? 'off' : undefined}
        onInput={onChange && ((e) => onChange((e.target as HTMLInputElement).value))}
      />
      {suggest && (
        <datalist id={suggest.id}>
          {suggest.names.map((n) => (
            <option value={n} />
          ))}
        </datalist>
      )}
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

/** A form's submit button: `primary` for the screen's main action. */
export function SubmitButton({ text, primary = true, disabled }: { text: string; primary?: boolean; disabled?: boolean }) {
  return (
    <button class={primary ? 'fg-button fg-primary' : 'fg-button'} type="submit" disabled={disabled}>
      {text}
    </button>
  );
}
