import './app.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, BASE, type CurrentUserAnswer, type Me } from './api';
import { ErrorText, useLoad } from './components';
import { FIRST_ROUTE, kindOf, KINDS } from './kinds';
import { showWorkspaces, PINNED, WORKSPACE, workspacesShown } from './pin';
import { href, keepWorkspaceInRoute, useRoute } from './router';
import { AccessKey } from './screens/access-key';
import { Audit } from './screens/audit';
import { GroupPage, Groups } from './screens/groups';
import { Patterns } from './screens/patterns';
import { ResourceList, ResourcePage } from './screens/resources';
import { ServiceAccounts } from './screens/service-accounts';
import { TeamSetup } from './screens/team-setup';
import { UserPage, Users } from './screens/users';
import { ACTIVE_WORKSPACE_KEY, activeWorkspace, DEFAULT_WORKSPACE, withWorkspace } from './workspace';

const ADMIN_SCREENS = [
  ['users', 'Users'],
  ['service-accounts', 'Service accounts'],
  ['groups', 'Groups'],
  ['patterns', 'Pattern grants'],
  ['team-setup', 'Team setup'],
  ['audit', 'Audit log'],
] as const;

function Nav({ me, at }: { me: Me; at: string }) {
  const link = (route: string, text: string) => (
    <a href={href(route)} aria-current={at === route ? 'page' : undefined}>
      {text}
    </a>
  );
  return (
    <nav class="fg-side" aria-label="Permissions">
      <h2>Manage</h2>
      {KINDS.map((k) => link(k.route, k.title))}
      <h2>Me</h2>
      {link('access-key', 'My access key')}
      {me.is_admin && (
        <>
          <h2>Administration</h2>
          {ADMIN_SCREENS.map(([r, t]) => link(r, t))}
        </>
      )}
    </nav>
  );
}

function Screen({ me, parts }: { me: Me; parts: string[] }) {
  const [first = FIRST_ROUTE, second] = parts;
  const kind = kindOf(first);
  if (kind) return second !== undefined ? <ResourcePage kind={kind} id={second} me={me} /> : <ResourceList key={kind.route} kind={kind} me={me} />;
  if (first === 'access-key') return <AccessKey username={me.username} />;
  if (!me.is_admin) return <p role="alert">This screen is for administrators.</p>;
  switch (first) {
    case 'users':
      return second !== undefined ? <UserPage name={second} /> : <Users />;
    case 'service-accounts':
      return <ServiceAccounts />;
    case 'groups':
      return second !== undefined ? <GroupPage name={second} /> : <Groups />;
    case 'patterns':
      return <Patterns />;
    case 'team-setup':
      return <TeamSetup />;
    case 'audit':
      return <Audit />;
  }
  return <p role="alert">No such screen.</p>;
}

/**
 * Whether MLflow runs with workspaces (its `server-info`, asked without a workspace: one MLflow does not
 * have must not hide it). An MLflow without the call has none; an answer not had shows the workspace
 * when the screens name one.
 */
async function askWorkspaces(): Promise<boolean> {
  try {
    const r = await fetch(`${BASE}/ajax-api/3.0/mlflow/server-info`, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
    if (r.status === 404) return false;
    if (r.ok) return ((await r.json()) as { workspaces_enabled?: unknown }).workspaces_enabled === true;
  } catch {
    // No answer: as below.
  }
  return PINNED !== null;
}

/**
 * MLflow's workspace choice changing while these screens are open (its picker, or a link carrying
 * `?workspace=` opened in another tab): said, with a link to open the screens there, and never
 * followed: the screens go on acting in the workspace they show.
 */
function WorkspaceSwitched({ at }: { at: string }) {
  const [switched, setSwitched] = useState<string | null>(null);
  useEffect(() => {
    const on = (e: StorageEvent) => {
      if (e.key !== ACTIVE_WORKSPACE_KEY && e.key !== null) return;
      const now = activeWorkspace() ?? DEFAULT_WORKSPACE;
      setSwitched(now === WORKSPACE ? null : now);
    };
    addEventListener('storage', on);
    return () => removeEventListener('storage', on);
  }, []);
  if (switched === null) return null;
  return (
    <div class="fg-banner" role="status" id="fg-workspace-switched">
      <span>
        MLflow switched to workspace “{switched}”. These screens still act in workspace “{WORKSPACE}”.{' '}
        <a href={withWorkspace(`#/${at}`, switched)}>Open the Manage screens in workspace “{switched}”</a>
      </span>
      <button class="fg-button" type="button" onClick={() => setSwitched(null)}>
        Dismiss
      </button>
    </div>
  );
}

function App() {
  const parts = useRoute();
  const me = useLoad(async () => (await api<CurrentUserAnswer>('GET', 'users/current')).user, []);
  // Known before any screen renders: their links and confirmations name the workspace with workspaces.
  const workspaces = useLoad(async () => {
    showWorkspaces(await askWorkspaces());
    keepWorkspaceInRoute();
    return workspacesShown();
  }, []);
  const ready = me.data && !workspaces.loading ? me.data : undefined;
  return (
    <div class="fg-shell">
      <header class="fg-top">
        <a class="fg-logo" href={`${BASE}/`}>
          ml<span>flow</span>
        </a>
        <span>Permissions</span>
        {workspaces.data && (
          <span class="fg-workspace">
            Workspace <strong id="fg-workspace">{WORKSPACE}</strong>
          </span>
        )}
        <span class="fg-spacer" />
        {me.data && (
          <span class="fg-who">
            Signed in as <strong id="fg-username">{me.data.username}</strong>
            {me.data.is_admin ? ' (admin)' : ''}
          </span>
        )}
        <a href={`${BASE}/`}>Back to MLflow</a>
        <form method="post" action={`${BASE}/flowgate/logout`}>
          <button class="fg-button" type="submit">
            Sign out
          </button>
        </form>
      </header>
      {ready && <Nav me={ready} at={parts[0] ?? FIRST_ROUTE} />}
      <main class="fg-main">
        {workspaces.data && <WorkspaceSwitched at={parts[0] ?? FIRST_ROUTE} />}
        <ErrorText error={me.error} />
        {/* Keyed by the route: a screen's state (an open confirmation above all) never outlives the page it belongs to. */}
        {ready && <Screen key={parts.join('/')} me={ready} parts={parts} />}
      </main>
    </div>
  );
}

render(<App />, document.getElementById('app')!);
