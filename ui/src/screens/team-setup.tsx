import { useRef, useState } from 'preact/hooks';
import { GRANTING } from '../../../src/resources/permissions.js';
import { api, ApiError, seg, trackingUri, type UserAnswer } from '../api';
import { ErrorText, optionsOf, Secret, SelectField, SubmitButton, TextField, useRun } from '../components';
import { creatable, createItem, FIRST_ROUTE, grantPath, kindOf, KINDS, permissionsFor, type Kind } from '../kinds';
import { inWorkspaceText } from '../pin';
import { href } from '../router';
import { IssuedTokenView, type IssuedToken } from './access-key';
import { day, expirationOf } from '../dates';
import { useTokenExpiry } from '../token-limits';

/** Kubernetes names: lower case letters, digits and '-'. */
const k8sName = (s: string) => s.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 63) || 'team';

/** YAML strings are written double-quoted with JSON's escaping, which YAML reads the same way. */
const q = (s: string) => JSON.stringify(s);

export function teamYaml(namespace: string, secretName: string, t: IssuedToken): { secret: string; podDefault: string } {
  const secret = `apiVersion: v1
kind: Secret
metadata:
  name: ${secretName}
  namespace: ${namespace}
type: Opaque
stringData:
  MLFLOW_TRACKING_URI: ${q(trackingUri())}
  MLFLOW_TRACKING_USERNAME: ${q(t.username)}
  MLFLOW_TRACKING_PASSWORD: ${q(t.token)}
`;
  const podDefault = `apiVersion: kubeflow.org/v1alpha1
kind: PodDefault
metadata:
  name: ${secretName}
  namespace: ${namespace}
spec:
  desc: ${q(`MLflow access as ${t.username}`)}
  selector:
    matchLabels:
      ${secretName}: "true"
  envFrom:
    - secretRef:
        name: ${secretName}
`;
  return { secret, podDefault };
}

interface Step {
  readonly text: string;
  readonly state: 'done' | 'failed' | 'running' | 'kept';
}

/** What a run already did, so that a run that failed half-way is retried from where it stopped. */
interface Progress {
  /** Step 1: the resource made, by kind and name, and its id. */
  created?: { readonly kind: string; readonly name: string; readonly id: string };
  /** Step 2: the group's grant on it. */
  grouped?: { readonly id: string; readonly group: string; readonly permission: string };
  /** Step 3: the service account and its grant on it. */
  account?: { readonly id: string; readonly name: string };
}

/** What the screens create: not the gateway's kinds (their secrets are MLflow's AI Gateway page's to take). */
const KIND_OPTIONS = KINDS.filter(creatable).map((k) => [k.route, k.one] as const);
/** The levels a group may be given on the kind: granting ones it takes. */
const groupPermissions = (route: string) => optionsOf(GRANTING.filter((p) => permissionsFor(kindOf(route)!.kind).includes(p)));

const exists = (e: unknown) => e instanceof ApiError && (e.status === 409 || e.code === 'RESOURCE_ALREADY_EXISTS');

/** A grant made, or changed to `permission` where the grantee already holds one. */
async function setGrant(path: string, permission: string): Promise<void> {
  try {
    await api('POST', path, { permission });
  } catch (e) {
    if (!exists(e)) throw e;
    await api('PATCH', path, { permission });
  }
}

/** Why the form cannot run as filled in, before anything is applied; undefined when it can. */
function formProblem(f: { group: string; name: string; account: string }, expiryProblem: string | undefined): string | undefined {
  if (!f.group.trim()) return 'Name the team’s group.';
  if (!f.name.trim()) return 'Name the shared resource.';
  if (!f.account.trim()) return 'Name the service account.';
  return expiryProblem;
}

/** The spec's shared-team setup, steps 1-4 in one go; steps 5-6 as YAML to apply. */
export function TeamSetup() {
  const [f, setF] = useState({ group: '', kind: FIRST_ROUTE, name: '', groupPermission: 'EDIT', account: '' });
  const expiry = useTokenExpiry();
  const [steps, setSteps] = useState<Step[]>([]);
  const [result, setResult] = useState<{ issued: IssuedToken; kind: Kind; id: string; namespace: string }>();
  const progress = useRef<Progress>({});
  const { busy, error, run } = useRun();
  /** A field of the form: its value, and its change. */
  const field = (k: keyof typeof f) => ({ value: f[k], onChange: (v: string) => setF({ ...f, [k]: v }) });

  async function setUp() {
    setResult(undefined);
    // Nothing is applied while the form is wrong (a past expiry above all: the token would be refused after steps 1–3).
    const problem = formProblem(f, expiry.problem);
    if (problem) {
      setSteps([]);
      throw new Error(problem);
    }
    const log: Step[] = [];
    const step = async <T,>(text: string, work: () => Promise<T>): Promise<T> => {
      log.push({ text, state: 'running' });
      setSteps([...log]);
      try {
        const out = await work();
        log[log.length - 1] = { text, state: 'done' };
        return out;
      } catch (e) {
        log[log.length - 1] = { text, state: 'failed' };
        throw e;
      } finally {
        setSteps([...log]);
      }
    };
    /** A step an earlier run did: shown as done, not done again. */
    const kept = (text: string) => {
      log.push({ text: `${text} (done by the earlier run)`, state: 'kept' });
      setSteps([...log]);
    };
    const done = progress.current;
    const group = f.group.trim();
    const account = f.account.trim();
    const name = f.name.trim();
    const kind = kindOf(f.kind)!;

    const first = `1. Create ${kind.one} “${name}”${inWorkspaceText(kind.kind)}`;
    let sharedId: string;
    if (done.created && done.created.kind === kind.route && done.created.name === name) {
      sharedId = done.created.id;
      kept(first);
    } else {
      progress.current = {};
      sharedId = await step(first, async () => {
        try {
          return await createItem(kind, name);
        } catch (e) {
          if (exists(e)) throw new Error(`A ${kind.one} named “${name}” already exists: choose another name, or grant access to it on its own page.`);
          throw e;
        }
      });
      progress.current = { created: { kind: kind.route, name, id: sharedId } };
    }

    const second = `2. Grant group “${group}” ${f.groupPermission} on it`;
    const g = progress.current.grouped;
    if (g && g.id === sharedId && g.group === group && g.permission === f.groupPermission) kept(second);
    else {
      await step(second, async () => {
        try {
          await api('POST', 'permissions/groups', { group_name: group });
        } catch (e) {
          if (!exists(e)) throw e;
        }
        await setGrant(grantPath('groups', group, kind, sharedId), f.groupPermission);
      });
      progress.current = { ...progress.current, grouped: { id: sharedId, group, permission: f.groupPermission } };
    }

    const third = `3. Create service account “${account}” with EDIT on the ${kind.one}`;
    const a = progress.current.account;
    if (a && a.id === sharedId && a.name === account) kept(third);
    else {
      await step(third, async () => {
        try {
          await api('POST', 'users/create', { username: account, display_name: `${group} pipelines`, is_service_account: true });
        } catch (e) {
          if (!exists(e)) throw e;
          // One made by an earlier team setup of this team (here or by the CLI) is taken as it is; a person's
          // name is not the team's service account, and another team's account is not this team's to re-key.
          const { user } = await api<UserAnswer>('GET', `permissions/users/${seg(account)}`);
          if (!user.is_service_account) throw new Error(`“${account}” is a person, not a service account: choose another name for the team’s service account.`);
          if (user.display_name !== `${group} pipelines` && user.display_name !== `${group} service account`)
            throw new Error(
              `Service account “${account}” exists and is not this team’s (its display name is “${user.display_name}”): a new token would cut off whoever uses it. Choose another name.`,
            );
        }
        await setGrant(grantPath('users', account, kind, sharedId), 'EDIT');
      });
      progress.current = { ...progress.current, account: { id: sharedId, name: account } };
    }

    const issued = await step(`4. Create its access token, valid until ${day(expirationOf(expiry.expiry))}`, () =>
      api<IssuedToken>('PATCH', 'permissions/users/access-token', { username: account, expiration: expirationOf(expiry.expiry) }),
    );
    progress.current = {};
    setResult({ issued, kind, id: sharedId, namespace: k8sName(group) });
  }

  const yaml = result && teamYaml(result.namespace, `mlflow-${result.namespace}`, result.issued);
  return (
    <section>
      <h1>Team setup</h1>
      <p class="fg-muted">
        A shared experiment, registered model or prompt for a team: the team's group may use it, and a service account gets a token for the team's pipelines and
        notebooks.
      </p>
      <form
        class="fg-panel"
        // Checked by `formProblem`, whose words say what to correct (a past expiry, a missing name).
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          void run(setUp);
        }}
      >
        <div class="fg-toolbar">
          <TextField label="Team group" {...field('group')} />
          <SelectField label="Shared resource" options={KIND_OPTIONS} {...field('kind')} />
          <TextField label="Its name" {...field('name')} />
          <SelectField label="Group permission" options={groupPermissions(f.kind)} {...field('groupPermission')} />
          <TextField label="Service account" {...field('account')} />
          <TextField label="Token expires on" type="date" min={expiry.min} max={expiry.max} value={expiry.expiry} onChange={expiry.setExpiry} />
        </div>
        <SubmitButton text="Set up the team" disabled={busy || !expiry.ready} />
      </form>
      {steps.length > 0 && (
        <ol class="fg-steps" aria-label="Progress">
          {steps.map((s) => (
            <li class={s.state === 'failed' ? 'fg-error' : s.state === 'running' ? '' : 'fg-ok'}>
              {s.state === 'failed' ? '✗ ' : s.state === 'running' ? '… ' : '✓ '}
              {s.text}
            </li>
          ))}
        </ol>
      )}
      <ErrorText error={error} />
      {error !== undefined && steps.some((s) => s.state === 'done' || s.state === 'kept') && (
        <p class="fg-muted" id="fg-retry-hint">
          The steps marked ✓ are done. Correct what failed and press “Set up the team” again: it goes on from the step that failed.
        </p>
      )}
      {result && yaml && (
        <>
          <p>
            Done: <a href={href(result.kind.route, result.id)}>see the {result.kind.one}'s grants</a>.
          </p>
          <IssuedTokenView issued={result.issued} />
          <h2>5. The token as a Secret in the team's namespace</h2>
          <Secret label="Secret" value={yaml.secret} id="fg-secret-yaml" />
          <h2>6. A PodDefault that hands it to notebooks</h2>
          <p class="fg-muted">Create the Secret first; then pick this configuration under “Advanced Options” when creating a notebook.</p>
          <Secret label="PodDefault" value={yaml.podDefault} id="fg-poddefault-yaml" />
        </>
      )}
    </section>
  );
}
