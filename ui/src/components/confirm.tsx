import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ErrorText } from './feedback';
import { SubmitButton, ToolbarForm } from './fields';
import { useRun } from './run';

export interface ConfirmRequest {
  readonly title: string;
  readonly text: ComponentChildren;
  readonly action: string;
  readonly danger?: boolean;
  readonly run: () => Promise<unknown>;
}

/** Every change is confirmed first: what will happen, in words, with the names shown as text. */
export function ConfirmDialog({ request, onDone }: { request: ConfirmRequest | undefined; onDone: (changed: boolean) => void }) {
  const { busy, error, run, clear } = useRun();
  const ok = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    clear();
    if (request) ok.current?.focus();
  }, [request]);
  if (!request) return null;
  const confirm = async () => {
    if (await run(request.run)) onDone(true);
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

/**
 * A screen's confirmations: `ask` shows one, `dialog` is where it shows; once a change is made,
 * `changed` runs (to load again what it changed).
 */
export function useConfirm(changed?: () => void) {
  const [request, setRequest] = useState<ConfirmRequest>();
  const dialog = (
    <ConfirmDialog
      request={request}
      onDone={(done) => {
        setRequest(undefined);
        if (done) changed?.();
      }}
    />
  );
  return { ask: setRequest, dialog };
}

/** A button that asks before it acts, as `request` says (`label` when its text alone would not say on what). */
export function AskButton(p: { text: string; label?: string; primary?: boolean; disabled?: boolean; request: ConfirmRequest; ask: (r: ConfirmRequest) => void }) {
  const { text, label, disabled, request, ask } = p;
  return (
    <button class={request.danger ? 'fg-button fg-danger' : p.primary ? 'fg-button fg-primary' : 'fg-button'} type="button" aria-label={label} disabled={disabled} onClick={() => ask(request)}>
      {text}
    </button>
  );
}

/**
 * A row of fields whose submit asks first: `request` is the confirmation for what was typed, or
 * `undefined` while something needed is missing (then nothing is asked).
 */
export function AskForm({
  submit,
  request,
  ask,
  disabled,
  children,
}: {
  submit: string;
  request: () => ConfirmRequest | undefined;
  ask: (r: ConfirmRequest) => void;
  disabled?: boolean;
  children: ComponentChildren;
}) {
  return (
    <ToolbarForm
      onSubmit={() => {
        const r = request();
        if (r) ask(r);
      }}
    >
      {children}
      <SubmitButton text={submit} disabled={disabled} />
    </ToolbarForm>
  );
}
