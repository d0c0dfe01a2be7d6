import { useEffect, useState } from 'preact/hooks';
import { api, explain, qs, type Explanation } from '../api';
import type { Me } from '../app';
import { ErrorText, Tag, useLoad } from '../components';
import { resourceText, type Kind } from '../kinds';
import { ACTION_LABEL, ACTIONS, callFor, decidingGrant, ruleInWords, type Action } from './explain-rules';

/**
 * "Explain access": the decision flowgate would make if a user asked for one thing on this resource,
 * and why. Explain answers an administrator about anyone and anyone else about themself only, so a
 * non-admin's user field is fixed to them.
 */
export function ExplainPanel({ kind, id }: { kind: Kind; id: string }) {
  const me = useLoad(async () => (await api<{ user: Me }>('GET', 'users/current')).user, []);
  const [who, setWho] = useState('');
  const [action, setAction] = useState<Action>('read');
  const [answer, setAnswer] = useState<{ explanation: Explanation; action: Action }>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  if (!me.data) return <ErrorText error={me.error} />;
  const admin = me.data.is_admin;
  const username = admin ? who.trim() : me.data.username;

  return (
    <div class="fg-panel" id="fg-explain">
      <h2>Explain access</h2>
      <p class="fg-muted">
        {`Whether ${admin ? 'a user' : 'you'} may read, edit or manage this ${kind.one}, the rule that decides, and every grant considered.`}
      </p>
      <form
        class="fg-toolbar"
        onSubmit={async (e) => {
          e.preventDefault();
          if (!username) return;
          setBusy(true);
          setError(undefined);
          setAnswer(undefined);
          try {
            const call = callFor(kind, id, action);
            setAnswer({ explanation: await explain(username, call.method, call.target, call.body), action });
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        {admin ? (
          <UserField value={who} onChange={setWho} />
        ) : (
          <label class="fg-field">
            <span>User</span>
            <input id="fg-explain-user" value={username} readOnly />
          </label>
        )}
        <label class="fg-field">
          <span>Action</span>
          <select id="fg-explain-action" value={action} onChange={(e) => setAction((e.target as HTMLSelectElement).value as Action)}>
            {ACTIONS.map((a) => (
              <option value={a}>{ACTION_LABEL[a]}</option>
            ))}
          </select>
        </label>
        <button class="fg-button fg-primary" type="submit" disabled={busy}>
          Explain
        </button>
      </form>
      <ErrorText error={error} />
      {answer && <ExplainAnswer kind={kind} id={id} {...answer} />}
    </div>
  );
}

/** The user to explain, with suggestions from the user directory as the admin types. */
function UserField({ value, onChange }: { value: string; onChange: (v: string) => void }) {
  const [names, setNames] = useState<string[]>([]);
  useEffect(() => {
    const q = value.trim();
    let live = true;
    const t = setTimeout(() => {
      api<{ users: { username: string }[] }>('GET', `permissions/ui/users${qs({ q, type: 'all', max_results: 10 })}`).then(
        (r) => live && setNames(r.users.map((u) => u.username)),
        // Suggestions are a convenience: without them the field still takes any name.
        () => live && setNames([]),
      );
    }, 250);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [value]);
  return (
    <label class="fg-field">
      <span>User</span>
      <input
        id="fg-explain-user"
        list="fg-explain-users"
        value={value}
        required
        autocomplete="off"
        onInput={(e) => onChange((e.target as HTMLInputElement).value)}
      />
      <datalist id="fg-explain-users">
        {names.map((n) => (
          <option value={n} />
        ))}
      </datalist>
    </label>
  );
}

function ExplainAnswer({ kind, id, explanation: e, action }: { kind: Kind; id: string; explanation: Explanation; action: Action }) {
  const call = callFor(kind, id, action);
  const path = call.target.split('?')[0];
  return (
    <section class="fg-explain-answer" aria-labelledby="fg-explain-verdict">
      <div role="status">
        <h3 id="fg-explain-verdict" class={e.verdict.allow ? 'fg-ok' : 'fg-error'}>
          {e.verdict.allow ? 'Allowed' : 'Denied'}: {e.username} may {e.verdict.allow ? '' : 'not '}
          {action} this {kind.one}
        </h3>
        <p id="fg-explain-rule">{ruleInWords(e, kind)}</p>
      </div>
      <p class="fg-muted">
        Asked as MLflow’s <code>{`${call.method} ${path}`}</code>
        {e.route ? `, which needs ${e.route.need}` : ''}.
      </p>
      {e.resources.map((r) => (
        <GrantsConsidered key={`${r.kind}:${r.id}`} resource={r} username={e.username} decidedByGrants={GRANT_RULES.has(e.verdict.reason)} />
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

/** Verdicts a grant decided; others (administrator, a route open to all, a guard) were decided before any grant counted. */
const GRANT_RULES = new Set(['direct-grant', 'group-grant', 'group-deny', 'pattern-grant', 'group-pattern-grant', 'group-pattern-deny', 'default-permission']);

function GrantsConsidered({
  resource: r,
  username,
  decidedByGrants,
}: {
  resource: Explanation['resources'][number];
  username: string;
  decidedByGrants: boolean;
}) {
  const made = decidingGrant(r);
  const deciding = decidedByGrants ? made : { direct: false, groups: new Set<string>(), byDefault: false };
  const row = (key: string, source: string, permission: string | null, decides: boolean, absent = 'none') => (
    <tr key={key} class={decides ? 'fg-deciding' : undefined}>
      <td>{source}</td>
      <td>{permission ? <Tag p={permission} /> : <span class="fg-muted">{absent}</span>}</td>
      <td>{decides ? <strong>Deciding</strong> : ''}</td>
    </tr>
  );
  return (
    <table class="fg-table" aria-label="Permissions considered">
      <caption class="fg-muted">
        Grants considered on {resourceText(r.kind, r.id)}: effective{' '}
        <Tag p={r.effective} />
      </caption>
      <thead>
        <tr>
          <th scope="col">Source</th>
          <th scope="col">Permission</th>
          <th scope="col">Decides</th>
        </tr>
      </thead>
      <tbody>
        {row('direct', `Direct grant to ${username}`, r.direct, deciding.direct)}
        {r.groups.length === 0
          ? row('groups', `Groups of ${username}`, null, false)
          : r.groups.map((g) => row(`group:${g.group}`, `Group ${g.group}`, g.permission, deciding.groups.has(g.group)))}
        {(r.patterns ?? []).map((p) =>
          row(
            `pattern:${p.grantee}:${p.pattern}`,
            `Pattern “${p.pattern}” for ${p.grantee.replace(':', ' ')}`,
            p.permission,
            decidedByGrants && r.decidingPattern?.pattern === p.pattern && r.decidingPattern.grantee === p.grantee,
          ),
        )}
        {row('default', 'Default permission', made.byDefault ? r.effective : null, deciding.byDefault, 'not used: a grant applies')}
      </tbody>
    </table>
  );
}
