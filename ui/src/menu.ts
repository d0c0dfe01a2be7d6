import type { CurrentUserAnswer } from '../../src/admin/api-types.js';
import './menu.css';
import { basePathFromScript, loginUrl, watchForSignOut } from './session';
import { mlflowPageWorkspace, withWorkspace } from './workspace';

/**
 * flowgate's "Permissions" entry, added to MLflow's own page: who is signed in, Manage, My access
 * key, Sign out. Built with DOM calls only (names go in as text, never as HTML).
 */
const base = basePathFromScript(document.currentScript, 'menu.js');

function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Partial<HTMLElementTagNameMap[K]> = {}, ...children: (Node | string)[]) {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...children);
  return e;
}

type Current = CurrentUserAnswer;

async function current(): Promise<Current | undefined> {
  const r = await fetch(`${base}/ajax-api/2.0/mlflow/users/current`, { credentials: 'same-origin' });
  return r.ok ? ((await r.json()) as Current) : undefined;
}

/**
 * A Manage screen's address, naming the workspace MLflow's page is in (its URL's, else MLflow's last
 * choice): the screens fix their workspace from it as they load, whatever MLflow chooses later.
 */
function manageHref(route: string): string {
  const workspace = mlflowPageWorkspace();
  return `${base}/flowgate/ui/${workspace ? withWorkspace(`#/${route}`, workspace) : `#/${route}`}`;
}

function mount(me: Current | undefined): void {
  let links = () => {};
  const panel = el('div', { className: 'fg-menu-panel', id: 'fg-menu-panel', hidden: true });
  panel.setAttribute('role', 'menu');
  const button = el('button', { className: 'fg-menu-button', type: 'button', id: 'fg-menu-button' }, 'Permissions');
  button.setAttribute('aria-haspopup', 'true');
  button.setAttribute('aria-expanded', 'false');
  button.setAttribute('aria-controls', 'fg-menu-panel');

  const item = (node: HTMLElement) => {
    node.setAttribute('role', 'menuitem');
    return node;
  };
  if (me) {
    const who = el('div', { className: 'fg-menu-who' }, 'Signed in as', el('strong', { id: 'fg-menu-user' }, me.user.username));
    if (me.user.is_admin) who.append(el('span', { className: 'fg-badge' }, 'admin'));
    const signOut = el('form', { method: 'post', action: `${base}/flowgate/logout` }, item(el('button', { type: 'submit' }, 'Sign out')));
    const manage = item(el('a', { href: manageHref('experiments') }, 'Manage'));
    const accessKey = item(el('a', { href: manageHref('access-key') }, 'My access key'));
    // The screens act in the workspace their link names: the one MLflow's page is in when it is followed.
    links = () => {
      manage.setAttribute('href', manageHref('experiments'));
      accessKey.setAttribute('href', manageHref('access-key'));
    };
    for (const a of [manage, accessKey]) for (const event of ['focus', 'pointerdown']) a.addEventListener(event, links);
    panel.append(who, manage, accessKey, signOut);
  } else {
    panel.append(item(el('a', { href: loginUrl(base) }, 'Sign in')));
  }

  const toggle = (open: boolean) => {
    if (open) links();
    panel.hidden = !open;
    button.setAttribute('aria-expanded', String(open));
  };
  button.addEventListener('click', () => toggle(panel.hidden));
  document.addEventListener('click', (e) => {
    if (!root.contains(e.target as Node)) toggle(false);
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && !panel.hidden) {
      toggle(false);
      button.focus();
    }
  });
  const root = el('nav', { className: 'fg-menu' }, button, panel);
  root.setAttribute('aria-label', 'Permissions');
  document.body.append(root);
}

watchForSignOut(base);
current().then(mount, () => mount(undefined));
