import { useEffect, useState } from 'preact/hooks';
import { REASON_SPECS, type Reason } from '../../../src/resources/reasons.js';
import { api, explain, qs, type ExplainedResource, type Explanation, type Me, type UserSearchAnswer } from '../api';
import { DataTable, ErrorText, SelectField, SubmitButton, Tag, TextField, ToolbarForm, useRun, type Column } from '../components';
import { resourceText, type Kind } from '../kinds';
import { ACTION_LABEL, actionsOf, callFor, decidingGrant, ruleInWords, type Action, type Call } from './explain-rules';

/** The actions offered on the kind, in words. */
const actionOptions = (kind: Kind) => actionsOf(kind).map((a) => [a, ACTION_LABEL[a]] as const);

/** `read, edit or manage`. */
const orList = (words: readonly string[]) => (words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`);

/**
 * "Explain access": the decision flowgate would make if a user asked for one thing on this resource,
 * and why. Explain answers an administrator about anyone and anyone else about themself only, so a
 * non-admin's user field is fixed to them.
 */
export function ExplainPanel({ kind, id, me }: { kind: Kind; id: string; me: Me }) {
  const [who, setWho] = useState('');
  const [action, setAction] = useState<Action>('read');
  const [answer, setAnswer] = useState<{ explanation: Explanation; action: Action; call: Call }>();
  const { busy, error, run } = useRun();
  const suggested = useUserNames(me.is_admin ? who : undefined);
  const admin = me.is_admin;
  const username = admin ? who.trim() : me.username;

  return (
    <div class="fg-panel" id="fg-explain">
      <h2>Explain access</h2>
      <p class="fg-muted">
        {`Whether ${admin ? 'a user' : 'you'} may ${orList(actionsOf(kind))} this ${kind.one}, the rule that decides, and every grant considered.`}
      </p>
      <ToolbarForm
        onSubmit={() => {
          if (!username) return;
          setAnswer(undefined);
          void run(async () => {
            const call = await callFor(kind, id, action);
            setAnswer({ explanation: await explain(username, call.method, call.target, call.body), action, call });
          });
        }}
      >
        {admin ? (
          <TextField label="User" id="fg-explain-user" value={who} onChange={setWho} suggest={{ id: 'fg-explain-users', names: suggested }} />
        ) : (
          <TextField label="User" id="fg-explain-user" value={username} readOnly />
        )}
        <SelectField label="Action" id="fg-explain-action" value={action} options={actionOptions(kind)} onChange={(v) => setAction(v as Action)} />
        <SubmitButton text="Explain" disabled={busy} />
      </ToolbarForm>
      <ErrorText error={error} />
      {answer && <ExplainAnswer kind={kind} {...answer} />}
    </div>
  );
}

/** Names from the user directory matching what an admin types (none for `undefined`). */
function useUserNames(typed: string | undefined): string[] {
  const [names, setNames] = useState<string[]>([]);
  useEffect(() => {
    if (typed === undefined) return;
    const q = typed.trim();
    let live = true;
    const t = setTimeout(() => {
      api<UserSearchAnswer>('GET', `permissions/ui/users${qs({ q, type: 'all', max_results: 10 })}`).then(
        (r) => live && setNames(r.users.map((u) => u.username)),
        // Suggestions are a convenience: without them the field still takes any name.
        () => live && setNames([]),
      );
    }, 250);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [typed]);
  return names;
}

function ExplainAnswer({ kind, explanation: e, action, call }: { kind: Kind; explanation: Explanation; action: Action; call: Call }) {
  const path = call.target.split('?')[0];
  return (
    <section class="fg-explain-answer" aria-labelledby="fg-explain-verdict">
      <div role="status">
        <h3 id="fg-explain-verdict" class={e.verdict.allow ? 'fg-ok' : 'fg-error'}>
          {e.verdict.allow ? 'Allowed' : 'Denied'}: {e.username} may {e.verdict.allow ? '' : 'not '}
          {action} this {kind.one}
        </h3>
        <p id="fg-explain-rule">{ruleInWords(e, kind, action)}</p>
      </div>
      <p class="fg-muted">
        Asked as MLflow’s <code>{`${call.method} ${path}`}</code>
        {e.route ? `, which needs ${e.route.need}` : ''}.
      </p>
      {e.resources.map((r) => (
        <GrantsConsidered key={`${r.kind}:${r.id}`} resource={r} username={e.username} decidedByGrants={decidedByGrant(e.verdict.reason)} />
      ))}
      {e.verdict.checks.length > 1 && (
        <ul class="fg-steps" aria-label="Checks">
          {e.verdict.checks.map((c) => (
            <li>
              {c.check} check: {c.allow ? 'allowed' : 'denied'} ({c.reason})
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** Whether a grant decided (src/resources/reasons.ts); else an administrator, a route open to all or a guard decided before any grant counted. */
const decidedByGrant = (reason: Reason): boolean => REASON_SPECS[reason]?.where === 'grant';

interface Considered {
  readonly key: string;
  readonly source: string;
  readonly permission: string | null;
  readonly decides: boolean;
  /** Said when it gives no permission. */
  readonly absent?: string;
}

const CONSIDERED_COLUMNS: readonly Column<Considered>[] = [
  { title: 'Source', cell: (c) => c.source },
  { title: 'Permission', cell: (c) => (c.permission ? <Tag p={c.permission} /> : <span class="fg-muted">{c.absent ?? 'none'}</span>) },
  { title: 'Decides', cell: (c) => (c.decides ? <strong>Deciding</strong> : '') },
];

/** Every grant explain weighed on one resource, the deciding one marked. */
function consideredRows(r: ExplainedResource, username: string, decidedByGrants: boolean): Considered[] {
  const made = decidingGrant(r);
  const deciding = decidedByGrants ? made : { direct: false, groups: new Set<string>(), byDefault: false };
  const groups: Considered[] =
    r.groups.length === 0
      ? [{ key: 'groups', source: `Groups of ${username}`, permission: null, decides: false }]
      : r.groups.map((g) => ({ key: `group:${g.group}`, source: `Group ${g.group}`, permission: g.permission, decides: deciding.groups.has(g.group) }));
  const patterns = (r.patterns ?? []).map((p) => ({
    key: `pattern:${p.grantee}:${p.pattern}`,
    source: `Pattern “${p.pattern}” for ${p.grantee.replace(':', ' ')}`,
    permission: p.permission,
    decides: decidedByGrants && r.decidingPattern?.pattern === p.pattern && r.decidingPattern.grantee === p.grantee,
  }));
  return [
    { key: 'direct', source: `Direct grant to ${username}`, permission: r.direct, decides: deciding.direct },
    ...groups,
    ...patterns,
    { key: 'default', source: 'Default permission', permission: made.byDefault ? r.effective : null, decides: deciding.byDefault, absent: 'not used: a grant applies' },
  ];
}

function GrantsConsidered({ resource: r, username, decidedByGrants }: { resource: ExplainedResource; username: string; decidedByGrants: boolean }) {
  return (
    <DataTable
      label="Permissions considered"
      caption={
        <>
          Grants considered on {resourceText(r.kind, r.id)}: effective <Tag p={r.effective} />
        </>
      }
      columns={CONSIDERED_COLUMNS}
      rows={consideredRows(r, username, decidedByGrants)}
      rowKey={(c) => c.key}
      rowClass={(c) => (c.decides ? 'fg-deciding' : undefined)}
    />
  );
}
