import { useState } from 'preact/hooks';
import { GRANTING } from '../../../src/resources/permissions.js';
import { api, ApiError, trackingUri } from '../api';
import { ErrorText, optionsOf, Secret, SelectField, SubmitButton, TextField, useRun } from '../components';
import { creatable, createItem, FIRST_ROUTE, grantPath, kindOf, KINDS, permissionsFor, type Kind } from '../kinds';
import { href } from '../router';
import { IssuedTokenView, type IssuedToken } from './access-key';
import { inDays } from './service-accounts';

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
  readonly state: 'done' | 'failed' | 'running';
}

/** What the screens create: not the gateway's kinds (their secrets are MLflow's AI Gateway page's to take). */
const KIND_OPTIONS = KINDS.filter(creatable).map((k) => [k.route, k.one] as const);
/** The levels a group may be given on the kind: granting ones it takes. */
const groupPermissions = (route: string) => optionsOf(GRANTING.filter((p) => permissionsFor(kindOf(route)!.kind).includes(p)));

/** The spec's shared-team setup, steps 1-4 in one go; steps 5-6 as YAML to apply. */
export function TeamSetup() {
  const [f, setF] = useState({ group: '', kind: FIRST_ROUTE, name: '', groupPermission: 'EDIT', account: '', expiry: inDays(90) });
  const [steps, setSteps] = useState<Step[]>([]);
  const [result, setResult] = useState<{ issued: IssuedToken; kind: Kind; id: string; namespace: string }>();
  const { busy, error, run } = useRun();
  /** A field of the form: its value, and its change. */
  const field = (k: keyof typeof f) => ({ value: f[k], onChange: (v: string) => setF({ ...f, [k]: v }) });

  async function setUp() {
    setResult(undefined);
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
    const group = f.group.trim();
    const account = f.account.trim();
    const kind = kindOf(f.kind)!;
    const sharedId = await step(`1. Create ${kind.one} “${f.name.trim()}”`, () => createItem(kind, f.name.trim()));
    await step(`2. Grant group “${group}” ${f.groupPermission} on it`, async () => {
      try {
        await api('POST', 'permissions/groups', { group_name: group });
      } catch (e) {
        if (!(e instanceof ApiError && e.status === 409)) throw e;
      }
      await api('POST', grantPath('groups', group, kind, sharedId), { permission: f.groupPermission });
    });
    await step(`3. Create service account “${account}” with EDIT on the ${kind.one}`, async () => {
      await api('POST', 'users/create', { username: account, display_name: `${group} pipelines`, is_service_account: true });
      await api('POST', grantPath('users', account, kind, sharedId), { permission: 'EDIT' });
    });
    const issued = await step(`4. Create its access token, valid until ${f.expiry}`, () =>
      api<IssuedToken>('PATCH', 'permissions/users/access-token', { username: account, expiration: `${f.expiry}T00:00:00Z` }),
    );
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
          <TextField label="Token expires on" type="date" {...field('expiry')} />
        </div>
        <SubmitButton text="Set up the team" disabled={busy} />
      </form>
      {steps.length > 0 && (
        <ol class="fg-steps" aria-label="Progress">
          {steps.map((s) => (
            <li class={s.state === 'failed' ? 'fg-error' : s.state === 'done' ? 'fg-ok' : ''}>
              {s.state === 'done' ? '✓ ' : s.state === 'failed' ? '✗ ' : '… '}
              {s.text}
            </li>
          ))}
        </ol>
      )}
      <ErrorText error={error} />
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
