import { useState } from 'preact/hooks';
import { api, ApiError, mlflow, qs, type EffectiveAnswer, type EffectiveRow, type GranteeType, type Me, type MyPermission, type MyPermissionsAnswer, type Paged, type ResourceGrantRow, type ResourceGrantsAnswer } from '../api';
import { actionsColumn, AskButton, AskForm, ErrorText, optionsOf, SearchTable, SelectField, SubmitButton, Tag, TextField, ToolbarForm, useConfirm, useLoad, usePagedSearch, useRun, type Column, type ConfirmRequest } from '../components';
import { change, removal } from '../changes';
import { grantPath, isGateway, isScorer, itemName, numbered, permissionsFor, searchItems, type Item, type Kind } from '../kinds';
import { adminIdSegments } from '../../../src/resources/kinds.js';
import { inWorkspaceText } from '../pin';
import { href } from '../router';
import { ExplainPanel } from './explain-panel';
import { callFor } from './explain-rules';

const PAGE = 25;
const SCAN = 100;
const MAX_SCANS = 10;

interface ListPage extends Paged {
  readonly items: Item[];
  readonly mine?: Record<string, MyPermission>;
}

/**
 * A non-admin's page: MLflow's pages of what they may read, kept to those they manage, read on until
 * a page's worth is found (or ten pages were read); the next page starts where this one stopped, so
 * nothing is skipped or shown twice.
 */
async function managedPage(kind: Kind, q: string, token: string | undefined): Promise<ListPage> {
  const items: Item[] = [];
  const mine: Record<string, MyPermission> = {};
  let next = token;
  for (let scans = 0; scans < MAX_SCANS && items.length < PAGE; scans++) {
    const page = await searchItems(kind, q, next, SCAN);
    next = page.next_page_token;
    if (page.items.length > 0) {
      const r = await api<MyPermissionsAnswer>('GET', `permissions/ui/my-permissions/${kind.segment}${qs({ id: page.items.map((i) => i.id) })}`);
      for (const i of page.items)
        if (r.permissions[i.id]?.permission === 'MANAGE') {
          items.push(i);
          mine[i.id] = r.permissions[i.id]!;
        }
    }
    if (!next) break;
  }
  return { items, next_page_token: next, mine };
}

/** A non-admin's page of everything they may read (MLflow's search already leaves out the rest), each with their permission. */
async function accessiblePage(kind: Kind, q: string, token: string | undefined): Promise<ListPage> {
  const page = await searchItems(kind, q, token);
  if (page.items.length === 0) return { ...page, mine: {} };
  const r = await api<MyPermissionsAnswer>('GET', `permissions/ui/my-permissions/${kind.segment}${qs({ id: page.items.map((i) => i.id) })}`);
  return { ...page, mine: r.permissions };
}

/** Where the viewer's own permission comes from, in words (`why` for their own row). */
export function myWhy(p: MyPermission | undefined): string {
  if (!p || p.source === 'none') return '';
  return why({ username: '', is_service_account: false, permission: p.permission, source: p.source, groups: p.groups });
}

const SHOW_OPTIONS = [
  ['all', 'Everything you can access'],
  ['managed', 'Only what you manage'],
] as const;

/**
 * What the viewer may use: admins everything (to manage); others everything they may read, with their
 * permission and why (a direct grant, a group's, a pattern's, the default), the ones they manage opening
 * their page. Searched and paged by the server.
 */
export function ResourceList({ kind, me }: { kind: Kind; me: Me }) {
  const [show, setShow] = useState<'all' | 'managed'>('all');
  const s = usePagedSearch(
    { q: '' },
    (f, token): Promise<ListPage> => (me.is_admin ? searchItems(kind, f.q, token) : show === 'managed' ? managedPage(kind, f.q, token) : accessiblePage(kind, f.q, token)),
    [kind.route, show],
  );
  const mine = (i: Item) => s.list.data?.mine?.[i.id];
  const manages = (i: Item) => me.is_admin || mine(i)?.permission === 'MANAGE';
  const columns: Column<Item>[] = [
    { title: 'Name', cell: (i) => (manages(i) ? <a href={href(kind.route, i.id)}>{i.name}</a> : i.name) },
    ...(numbered(kind) ? [{ title: 'ID', cell: (i: Item) => i.id }] : []),
    { title: 'Your permission', cell: (i) => <Tag p={me.is_admin ? 'MANAGE' : (mine(i)?.permission ?? '')} /> },
    ...(me.is_admin ? [] : [{ title: 'Why', cell: (i: Item) => myWhy(mine(i)) }]),
  ];
  const title = kind.title.toLowerCase();
  return (
    <section>
      <h1>{kind.title}</h1>
      <p class="fg-muted">
        {me.is_admin
          ? `Every ${kind.one}; open one to see and change who may use it.`
          : `The ${kind.one}s you can access, with your permission and why; open one you manage to see and change who may use it.`}
        {isGateway(kind) && ` New ones are made on MLflow’s AI Gateway page, which takes their secret values.`}
        {isScorer(kind) && ` Each is named by its experiment’s ID and its name; MLflow’s clients register them, with their definitions.`}
      </p>
      <SearchTable
        label={kind.title}
        search={`Search ${title}`}
        more={me.is_admin ? undefined : <SelectField label="Show" id="fg-show" value={show} options={SHOW_OPTIONS} onChange={(v) => {
                setShow(v as 'all' | 'managed');
                s.pages.reset();
              }} />}
        paged={s}
        rows={(a) => a.items}
        columns={columns}
        rowKey={(i) => i.id}
        empty={me.is_admin ? `No ${title} on this page.` : show === 'managed' ? `No ${title} on this page that you manage.` : `No ${title} you can access on this page.`}
      />
    </section>
  );
}

/** The manager's view of the effective permissions (src/admin/ui-resources.ts): the grants here only. */
const GRANTS_HERE: EffectiveAnswer['scope'] = 'grants-here';

const TYPE_LABEL: Readonly<Record<GranteeType, string>> = { user: 'User', service_account: 'Service account', group: 'Group' };
const TYPE_OPTIONS = Object.entries(TYPE_LABEL);
const granteeSegment = (t: GranteeType) => (t === 'group' ? 'groups' : 'users');
const granteeText = (t: GranteeType, name: string) => `${TYPE_LABEL[t].toLowerCase()} “${name}”`;

export function why(e: EffectiveRow): string {
  if (e.source === 'admin') return 'administrator (may do everything)';
  if (e.source === 'direct') return 'direct grant';
  if (e.source === 'group') return `through group ${e.groups.join(', ')}`;
  if (e.source === 'pattern') return 'pattern grant (matches its name)';
  if (e.source === 'workspace') return 'administers this MLflow workspace';
  return 'default permission (no grant)';
}

const EFFECTIVE_COLUMNS: readonly Column<EffectiveRow>[] = [
  {
    title: 'User',
    cell: (u) => (
      <>
        {u.username}
        {u.is_service_account && <span class="fg-muted"> (service account)</span>}
      </>
    ),
  },
  { title: 'Effective permission', cell: (u) => <Tag p={u.permission} /> },
  { title: 'Why', cell: why },
];

/** One resource: every grant, with change and revoke, a form to grant, and each user's effective permission and why. */
export function ResourcePage({ kind, id, me }: { kind: Kind; id: string; me: Me }) {
  const name = useLoad(() => itemName(kind, id), [kind.route, id]);
  const found = useLoad(() => existsInMlflow(kind, id), [kind.route, id]);
  const base = `permissions/ui/${kind.segment}/${adminIdSegments(kind.kind, id)}`;
  const grants = usePagedSearch({ q: '' }, (f, token) => api<ResourceGrantsAnswer>('GET', `${base}/grants${qs({ q: f.q, page_token: token })}`), [base]);
  const effective = usePagedSearch({ q: '' }, (f, token) => api<EffectiveAnswer>('GET', `${base}/effective${qs({ q: f.q, page_token: token })}`), [base]);
  const [edits, setEdits] = useState<Record<string, string>>({});
  const confirm = useConfirm(() => {
    setEdits({});
    grants.list.reload();
    effective.list.reload();
  });
  const label = name.data ?? id;
  // Every change's confirmation names the resource: none is offered before its name is known (an
  // experiment's would otherwise be named by its ID).
  const named = !name.loading;
  const key = (g: ResourceGrantRow) => `${g.grantee_type}:${g.name}`;
  /** What a change here is on, as its confirmation says it: the resource, and (with workspaces) the workspace it is kept in. */
  const on = `${kind.one} “${label}”${inWorkspaceText(kind.kind)}`;

  const grantColumns: Column<ResourceGrantRow>[] = [
    { title: 'Type', cell: (g) => TYPE_LABEL[g.grantee_type] },
    { title: 'Name', cell: (g) => g.name },
    {
      title: 'Permission',
      cell: (g) => (
        <select aria-label={`Permission of ${g.name}`} value={edits[key(g)] ?? g.permission} onChange={(e) => setEdits({ ...edits, [key(g)]: (e.target as HTMLSelectElement).value })}>
          {permissionsFor(kind.kind).map((p) => (
            <option value={p}>{p}</option>
          ))}
        </select>
      ),
    },
    actionsColumn((g) => {
      const chosen = edits[key(g)] ?? g.permission;
      const path = grantPath(granteeSegment(g.grantee_type), g.name, kind, id);
      return (
        <>
          <AskButton
            text="Change"
            disabled={chosen === g.permission || !named}
            ask={confirm.ask}
            request={change(
              { title: 'Change permission', text: `Change ${granteeText(g.grantee_type, g.name)} from ${g.permission} to ${chosen} on ${on}?`, action: 'Change' },
              'PATCH',
              path,
              { permission: chosen },
            )}
          />
          <AskButton
            text="Revoke"
            label={`Revoke ${g.name}`}
            disabled={!named}
            ask={confirm.ask}
            request={removal({ title: 'Revoke permission', text: `Remove the ${g.permission} grant of ${granteeText(g.grantee_type, g.name)} on ${on}?`, action: 'Revoke' }, path)}
          />
        </>
      );
    }),
  ];

  return (
    <section>
      <p>
        <a href={href(kind.route)}>{kind.title}</a> ›
      </p>
      <h1>
        {label}
        {numbered(kind) && <span class="fg-muted"> (ID {id})</span>}
      </h1>
      <ErrorText error={name.error} />

      <div class="fg-panel">
        <h2>Grant access</h2>
        {found.data === false ? (
          <p role="alert" class="fg-error" id="fg-no-resource">
            MLflow has no {kind.one} “{id}”: access can be granted only on one that exists. Check the name, or create it in MLflow first.
          </p>
        ) : (
          <>
            {/* MLflow refused or did not answer the look-up: the form stays disabled, and this says why. */}
            <ErrorText error={name.error ? undefined : found.error} />
            <GrantForm kind={kind} id={id} on={on} ask={confirm.ask} ready={found.data === true && named} />
          </>
        )}
      </div>

      <h2>Grants</h2>
      <SearchTable label="Grants" search="Search grants" paged={grants} rows={(a) => a.grants} columns={grantColumns} rowKey={key} empty={`No grants${grants.filters.q ? ' match' : ''}.`} />

      <h2>Effective permissions</h2>
      <p class="fg-muted">
        {effective.list.data?.scope === GRANTS_HERE
          ? 'Each user holding a grant here, with what it gives them. Who else may use it (through a group, a pattern grant, or as an administrator) only administrators see.'
          : 'Each user a grant here concerns, directly or through a group, with what they may do and why.'}
      </p>
      <SearchTable label="Effective permissions" search="Search users" paged={effective} rows={(a) => a.users} columns={EFFECTIVE_COLUMNS} rowKey={(u) => u.username} />
      <CheckUser base={base} />
      <ExplainPanel key={`${kind.route}/${id}`} kind={kind} id={id} me={me} />
      {confirm.dialog}
    </section>
  );
}

/**
 * Whether MLflow has the resource, asked as reading it (the registry's look-up, or a gateway kind's
 * list): false only when MLflow says it has none; a refusal or an outage is no answer (an error).
 */
async function existsInMlflow(kind: Kind, id: string): Promise<boolean> {
  let call;
  try {
    call = await callFor(kind, id, 'read');
  } catch {
    // A gateway resource its list does not name: none of that name.
    return false;
  }
  try {
    await mlflow(call.method, call.target, call.body);
    return true;
  } catch (e) {
    if (e instanceof ApiError && e.status === 404 && e.code !== 'ENDPOINT_NOT_FOUND') return false;
    throw e;
  }
}

function GrantForm({ kind, id, on, ask, ready }: { kind: Kind; id: string; on: string; ask: (r: ConfirmRequest) => void; ready: boolean }) {
  const [type, setType] = useState<GranteeType>('user');
  const [who, setWho] = useState('');
  const [permission, setPermission] = useState('READ');
  const request = (): ConfirmRequest | undefined => {
    const name = who.trim();
    // Nothing is offered before MLflow has said the resource exists (and its name is known).
    if (!name || !ready) return undefined;
    const asking = { title: 'Grant permission', text: `Give ${granteeText(type, name)} ${permission} on ${on}?`, action: 'Grant' };
    return change(asking, 'POST', grantPath(granteeSegment(type), name, kind, id), { permission }, () => setWho(''));
  };
  return (
    // Disabled, not silently inert, until MLflow has answered: a click before then would do nothing.
    <AskForm submit="Grant" request={request} ask={ask} disabled={!ready}>
      <SelectField label="Grant to" id="fg-grant-type" value={type} options={TYPE_OPTIONS} onChange={(v) => setType(v as GranteeType)} />
      <TextField label="Name" id="fg-grant-name" value={who} onChange={setWho} />
      <SelectField label="Permission" id="fg-grant-permission" value={permission} options={optionsOf(permissionsFor(kind.kind))} onChange={setPermission} />
    </AskForm>
  );
}

/** Anyone's effective permission here, also without any grant (then the default), and why; a manager sees the grants here only. */
function CheckUser({ base }: { base: string }) {
  const [name, setName] = useState('');
  const [result, setResult] = useState<{ name: string; found?: EffectiveRow; grantsOnly: boolean }>();
  const { error, run } = useRun();
  // Worded by the check's own answer, not by the effective list's (loading, or reloading, when the check answers).
  const check = (username: string) =>
    run(async () => {
      const r = await api<EffectiveAnswer>('GET', `${base}/effective${qs({ username })}`);
      setResult({ name: username, found: r.users[0], grantsOnly: r.scope === GRANTS_HERE });
    });
  return (
    <ToolbarForm onSubmit={() => name.trim() && void check(name.trim())}>
      <TextField label="Check a user" id="fg-check-user" required={false} value={name} onChange={setName} />
      <SubmitButton text="Check" primary={false} />
      <ErrorText error={error} />
      {result && (
        <p role="status" id="fg-check-result">
          {result.found ? (
            <>
              {result.found.username}: <Tag p={result.found.permission} /> — {why(result.found)}
            </>
          ) : result.grantsOnly ? (
            `“${result.name}” holds no grant of their own here.`
          ) : (
            `No user named “${result.name}”.`
          )}
        </p>
      )}
    </ToolbarForm>
  );
}
