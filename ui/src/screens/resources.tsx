import { useState } from 'preact/hooks';
import { api, qs, seg } from '../api';
import { ConfirmDialog, ErrorText, Pager, PERMISSIONS, SearchBox, Tag, useLoad, usePages, type ConfirmRequest } from '../components';
import { grantPath, itemName, searchItems, type Item, type Kind } from '../kinds';
import { href } from '../router';
import type { Me } from '../app';
import { ExplainPanel } from './explain-panel';

interface Mine {
  permission: string;
  source: string;
  groups: string[];
}

const PAGE = 25;
const SCAN = 100;
const MAX_SCANS = 10;

/**
 * A non-admin's page: MLflow's pages of what they may read, kept to those they manage, read on until
 * a page's worth is found (or ten pages were read); the next page starts where this one stopped, so
 * nothing is skipped or shown twice.
 */
interface ListPage {
  items: Item[];
  next?: string;
  mine?: Record<string, Mine>;
}

async function managedPage(kind: Kind, q: string, token: string | undefined): Promise<ListPage> {
  const items: Item[] = [];
  const mine: Record<string, Mine> = {};
  let next = token;
  for (let scans = 0; scans < MAX_SCANS && items.length < PAGE; scans++) {
    const page = await searchItems(kind, q, next, SCAN);
    next = page.next;
    if (page.items.length > 0) {
      const r = await api<{ permissions: Record<string, Mine> }>(
        'GET',
        `permissions/ui/my-permissions/${kind.segment}${qs({ id: page.items.map((i) => i.id) })}`,
      );
      for (const i of page.items)
        if (r.permissions[i.id]?.permission === 'MANAGE') {
          items.push(i);
          mine[i.id] = r.permissions[i.id]!;
        }
    }
    if (!next) break;
  }
  return { items, next, mine };
}

/** What the viewer may manage: admins everything, others where they hold MANAGE. Searched and paged by the server. */
export function ResourceList({ kind, me }: { kind: Kind; me: Me }) {
  const [q, setQ] = useState('');
  const pages = usePages();
  const list = useLoad<ListPage>(
    () => (me.is_admin ? searchItems(kind, q, pages.token) : managedPage(kind, q, pages.token)),
    [kind.route, q, pages.token],
  );
  const rows: Item[] = list.data?.items ?? [];

  return (
    <section>
      <h1>{kind.title}</h1>
      <p class="fg-muted">
        {me.is_admin ? `Every ${kind.one}; open one to see and change who may use it.` : `The ${kind.one}s you manage; open one to see and change who may use it.`}
      </p>
      <div class="fg-toolbar">
        <SearchBox
          label={`Search ${kind.title.toLowerCase()}`}
          value={q}
          onChange={(v) => {
            setQ(v);
            pages.reset();
          }}
        />
      </div>
      <ErrorText error={list.error} />
      <table class="fg-table">
        <thead>
          <tr>
            <th scope="col">Name</th>
            {kind.route === 'experiments' && <th scope="col">ID</th>}
            <th scope="col">Your permission</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((i) => (
            <tr key={i.id}>
              <td>
                <a href={href(kind.route, i.id)}>{i.name}</a>
              </td>
              {kind.route === 'experiments' && <td>{i.id}</td>}
              <td>{me.is_admin ? <Tag p="MANAGE" /> : <Tag p={list.data?.mine?.[i.id]?.permission ?? ''} />}</td>
            </tr>
          ))}
          {!list.loading && rows.length === 0 && (
            <tr>
              <td colSpan={3} class="fg-muted">
                {`No ${kind.title.toLowerCase()} on this page${me.is_admin ? '' : ' that you manage'}.`}
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <Pager pages={pages} next={list.data?.next} />
    </section>
  );
}

interface Grant {
  grantee_type: 'user' | 'service_account' | 'group';
  name: string;
  permission: string;
}
interface Effective {
  username: string;
  permission: string;
  source: 'admin' | 'direct' | 'group' | 'pattern' | 'default';
  groups: string[];
  is_service_account: boolean;
}

/** The manager's view of the effective permissions (src/admin/ui-resources.ts): the grants here only. */
const GRANTS_HERE = 'grants-here';

const TYPE_LABEL = { user: 'User', service_account: 'Service account', group: 'Group' } as const;
const granteeSegment = (t: Grant['grantee_type']) => (t === 'group' ? 'groups' : 'users');

export function why(e: Effective): string {
  if (e.source === 'admin') return 'administrator (may do everything)';
  if (e.source === 'direct') return 'direct grant';
  if (e.source === 'group') return `through group ${e.groups.join(', ')}`;
  if (e.source === 'pattern') return 'pattern grant (matches its name)';
  return 'default permission (no grant)';
}

/** One resource: every grant, with change and revoke, a form to grant, and each user's effective permission and why. */
export function ResourcePage({ kind, id }: { kind: Kind; id: string }) {
  const name = useLoad(() => itemName(kind, id), [kind.route, id]);
  const [q, setQ] = useState('');
  const pages = usePages();
  const base = `permissions/ui/${kind.segment}/${seg(id)}`;
  const grants = useLoad(
    () => api<{ grants: Grant[]; next_page_token?: string }>('GET', `${base}/grants${qs({ q, page_token: pages.token })}`),
    [base, q, pages.token],
  );
  const [eq, setEq] = useState('');
  const ePages = usePages();
  const effective = useLoad(
    () => api<{ users: Effective[]; next_page_token?: string; scope?: string }>('GET', `${base}/effective${qs({ q: eq, page_token: ePages.token })}`),
    [base, eq, ePages.token],
  );
  const [confirm, setConfirm] = useState<ConfirmRequest>();
  const [edits, setEdits] = useState<Record<string, string>>({});
  const label = name.data ?? id;
  const done = (changed: boolean) => {
    setConfirm(undefined);
    if (changed) {
      setEdits({});
      grants.reload();
      effective.reload();
    }
  };
  const key = (g: Grant) => `${g.grantee_type}:${g.name}`;

  return (
    <section>
      <p>
        <a href={href(kind.route)}>{kind.title}</a> ›
      </p>
      <h1>
        {label}
        {kind.route === 'experiments' && <span class="fg-muted"> (ID {id})</span>}
      </h1>
      <ErrorText error={name.error} />

      <div class="fg-panel">
        <h2>Grant access</h2>
        <GrantForm kind={kind} id={id} label={label} ask={setConfirm} />
      </div>

      <h2>Grants</h2>
      <div class="fg-toolbar">
        <SearchBox
          label="Search grants"
          value={q}
          onChange={(v) => {
            setQ(v);
            pages.reset();
          }}
        />
      </div>
      <ErrorText error={grants.error} />
      <table class="fg-table" aria-label="Grants">
        <thead>
          <tr>
            <th scope="col">Type</th>
            <th scope="col">Name</th>
            <th scope="col">Permission</th>
            <th scope="col">
              <span class="fg-sr">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(grants.data?.grants ?? []).map((g) => {
            const chosen = edits[key(g)] ?? g.permission;
            return (
              <tr key={key(g)}>
                <td>{TYPE_LABEL[g.grantee_type]}</td>
                <td>{g.name}</td>
                <td>
                  <select
                    aria-label={`Permission of ${g.name}`}
                    value={chosen}
                    onChange={(e) => setEdits({ ...edits, [key(g)]: (e.target as HTMLSelectElement).value })}
                  >
                    {PERMISSIONS.map((p) => (
                      <option value={p}>{p}</option>
                    ))}
                  </select>
                </td>
                <td>
                  <div class="fg-actions">
                    <button
                      class="fg-button"
                      type="button"
                      disabled={chosen === g.permission}
                      onClick={() =>
                        setConfirm({
                          title: 'Change permission',
                          text: `Change ${TYPE_LABEL[g.grantee_type].toLowerCase()} “${g.name}” from ${g.permission} to ${chosen} on ${kind.one} “${label}”?`,
                          action: 'Change',
                          run: () => api('PATCH', grantPath(granteeSegment(g.grantee_type), g.name, kind, id), { permission: chosen }),
                        })
                      }
                    >
                      Change
                    </button>
                    <button
                      class="fg-button fg-danger"
                      type="button"
                      aria-label={`Revoke ${g.name}`}
                      onClick={() =>
                        setConfirm({
                          title: 'Revoke permission',
                          text: `Remove the ${g.permission} grant of ${TYPE_LABEL[g.grantee_type].toLowerCase()} “${g.name}” on ${kind.one} “${label}”?`,
                          action: 'Revoke',
                          danger: true,
                          run: () => api('DELETE', grantPath(granteeSegment(g.grantee_type), g.name, kind, id)),
                        })
                      }
                    >
                      Revoke
                    </button>
                  </div>
                </td>
              </tr>
            );
          })}
          {!grants.loading && (grants.data?.grants.length ?? 0) === 0 && (
            <tr>
              <td colSpan={4} class="fg-muted">
                No grants{q ? ' match' : ''}.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <Pager pages={pages} next={grants.data?.next_page_token} />

      <h2>Effective permissions</h2>
      <p class="fg-muted">
        {effective.data?.scope === GRANTS_HERE
          ? 'Each user holding a grant here, with what it gives them. Who else may use it (through a group, a pattern grant, or as an administrator) only administrators see.'
          : 'Each user a grant here concerns, directly or through a group, with what they may do and why.'}
      </p>
      <div class="fg-toolbar">
        <SearchBox
          label="Search users"
          value={eq}
          onChange={(v) => {
            setEq(v);
            ePages.reset();
          }}
        />
      </div>
      <ErrorText error={effective.error} />
      <table class="fg-table" aria-label="Effective permissions">
        <thead>
          <tr>
            <th scope="col">User</th>
            <th scope="col">Effective permission</th>
            <th scope="col">Why</th>
          </tr>
        </thead>
        <tbody>
          {(effective.data?.users ?? []).map((u) => (
            <tr key={u.username}>
              <td>
                {u.username}
                {u.is_service_account && <span class="fg-muted"> (service account)</span>}
              </td>
              <td>
                <Tag p={u.permission} />
              </td>
              <td>{why(u)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager pages={ePages} next={effective.data?.next_page_token} />
      <CheckUser base={base} grantsOnly={effective.data?.scope === GRANTS_HERE} />
      <ExplainPanel key={`${kind.route}/${id}`} kind={kind} id={id} />
      <ConfirmDialog request={confirm} onDone={done} />
    </section>
  );
}

function GrantForm({ kind, id, label, ask }: { kind: Kind; id: string; label: string; ask: (r: ConfirmRequest) => void }) {
  const [type, setType] = useState<Grant['grantee_type']>('user');
  const [who, setWho] = useState('');
  const [permission, setPermission] = useState('READ');
  return (
    <form
      class="fg-toolbar"
      onSubmit={(e) => {
        e.preventDefault();
        const name = who.trim();
        if (!name) return;
        ask({
          title: 'Grant permission',
          text: `Give ${TYPE_LABEL[type].toLowerCase()} “${name}” ${permission} on ${kind.one} “${label}”?`,
          action: 'Grant',
          run: async () => {
            await api('POST', grantPath(granteeSegment(type), name, kind, id), { permission });
            setWho('');
          },
        });
      }}
    >
      <label class="fg-field">
        <span>Grant to</span>
        <select id="fg-grant-type" value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value as Grant['grantee_type'])}>
          <option value="user">User</option>
          <option value="service_account">Service account</option>
          <option value="group">Group</option>
        </select>
      </label>
      <label class="fg-field">
        <span>Name</span>
        <input id="fg-grant-name" value={who} required onInput={(e) => setWho((e.target as HTMLInputElement).value)} />
      </label>
      <label class="fg-field">
        <span>Permission</span>
        <select id="fg-grant-permission" value={permission} onChange={(e) => setPermission((e.target as HTMLSelectElement).value)}>
          {PERMISSIONS.map((p) => (
            <option value={p}>{p}</option>
          ))}
        </select>
      </label>
      <button class="fg-button fg-primary" type="submit">
        Grant
      </button>
    </form>
  );
}

/** Anyone's effective permission here, also without any grant (then the default), and why; a manager sees the grants here only. */
function CheckUser({ base, grantsOnly }: { base: string; grantsOnly: boolean }) {
  const [name, setName] = useState('');
  const [result, setResult] = useState<{ name: string; found?: Effective }>();
  const [error, setError] = useState<unknown>();
  return (
    <form
      class="fg-toolbar"
      onSubmit={async (e) => {
        e.preventDefault();
        const username = name.trim();
        if (!username) return;
        setError(undefined);
        try {
          const r = await api<{ users: Effective[] }>('GET', `${base}/effective${qs({ username })}`);
          setResult({ name: username, found: r.users[0] });
        } catch (err) {
          setError(err);
        }
      }}
    >
      <label class="fg-field">
        <span>Check a user</span>
        <input id="fg-check-user" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
      </label>
      <button class="fg-button" type="submit">
        Check
      </button>
      <ErrorText error={error} />
      {result && (
        <p role="status" id="fg-check-result">
          {result.found ? (
            <>
              {result.found.username}: <Tag p={result.found.permission} /> — {why(result.found)}
            </>
          ) : grantsOnly ? (
            `“${result.name}” holds no grant of their own here.`
          ) : (
            `No user named “${result.name}”.`
          )}
        </p>
      )}
    </form>
  );
}
