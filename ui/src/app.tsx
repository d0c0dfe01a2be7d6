import './app.css';
import { render } from 'preact';
import { api, BASE, type CurrentUserAnswer, type Me } from './api';
import { ErrorText, useLoad } from './components';
import { FIRST_ROUTE, kindOf, KINDS } from './kinds';
import { href, useRoute } from './router';
import { AccessKey } from './screens/access-key';
import { Audit } from './screens/audit';
import { GroupPage, Groups } from './screens/groups';
import { Patterns } from './screens/patterns';
import { ResourceList, ResourcePage } from './screens/resources';
import { ServiceAccounts } from './screens/service-accounts';
import { TeamSetup } from './screens/team-setup';
import { UserPage, Users } from './screens/users';

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

function App() {
  const parts = useRoute();
  const me = useLoad(async () => (await api<CurrentUserAnswer>('GET', 'users/current')).user, []);
  return (
    <div class="fg-shell">
      <header class="fg-top">
        <a class="fg-logo" href={`${BASE}/`}>
          ml<span>flow</span>
        </a>
        <span>Permissions</span>
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
      {me.data && <Nav me={me.data} at={parts[0] ?? FIRST_ROUTE} />}
      <main class="fg-main">
        <ErrorText error={me.error} />
        {/* Keyed by the route: a screen's state (an open confirmation above all) never outlives the page it belongs to. */}
        {me.data && <Screen key={parts.join('/')} me={me.data} parts={parts} />}
      </main>
    </div>
  );
}

render(<App />, document.getElementById('app')!);
