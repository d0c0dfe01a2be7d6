import { stringify } from 'yaml';
import type { Action, ActionContext } from './admin-cli/action.js';
import { ApiError, type AdminClient } from './admin-cli/client.js';
import { UsageError } from './admin-cli/connection.js';
import { setGrant } from './admin-cli/grants.js';
import { createExperiment, experimentNamed, isDigits, registeredModelExists } from './admin-cli/mlflow-lookups.js';
import type { Io } from './admin-cli/output.js';
import { kindShape, permissionNamed, type Kind, type Permission } from './admin-cli/resources.js';
import { EXPERIMENT, modelKind } from '../resources/kinds.js';
import { runAction } from './admin-cli/run.js';
import { FlowgateError } from '../errors.js';
import { resolveExpiration } from '../tokens/expiration.js';
import type { AccessTokenLimits } from '../admin/api-types.js';
import {
  kubernetesUsername,
  namespaceGroup,
  parseServiceAccount,
  projectedTokenYaml,
  trackingAuthNamed,
  type KubernetesServiceAccount,
  type TrackingAuth,
} from './team-setup-kubernetes.js';

const EXPERIMENT_SHAPE = kindShape(EXPERIMENT);
const MODEL_SHAPE = kindShape(modelKind(false));
const PROMPT_SHAPE = kindShape(modelKind(true));

interface Resource {
  readonly kind: Kind;
  readonly id: string;
}

/** A resource to grant on: one MLflow has, or one step 1 creates (after every name was looked up, so a refusal changes nothing). */
type Wanted = Resource | { readonly create: 'experiment' | 'model'; readonly name: string };

async function experimentFor(client: AdminClient, idOrName: string): Promise<Wanted> {
  // Digits are looked up as an id and as a name; when they are two experiments, experimentNamed refuses.
  const found = await experimentNamed(client, idOrName);
  if (found) return { kind: EXPERIMENT_SHAPE, id: found.id };
  if (isDigits(idOrName)) throw new UsageError(`MLflow has no experiment with id ${idOrName} nor one named '${idOrName}'`);
  return { create: 'experiment', name: idOrName };
}

async function modelFor(client: AdminClient, name: string): Promise<Wanted> {
  return (await registeredModelExists(client, name)) ? { kind: MODEL_SHAPE, id: name } : { create: 'model', name };
}

async function promptFor(client: AdminClient, name: string): Promise<Resource> {
  // A prompt needs its first template, which only its author can give: it must exist already.
  if (!(await registeredModelExists(client, name))) throw new UsageError(`MLflow has no prompt named '${name}': register it first`);
  return { kind: PROMPT_SHAPE, id: name };
}

/** Step 1: what is not there yet is created. */
async function created(client: AdminClient, w: Wanted, io: Io): Promise<Resource> {
  if (!('create' in w)) return w;
  if (w.create === 'model') {
    await client.call('POST', 'registered-models/create', { name: w.name });
    io.err(`1. created registered model '${w.name}'\n`);
    return { kind: MODEL_SHAPE, id: w.name };
  }
  const id = await createExperiment(client, w.name);
  io.err(`1. created experiment '${w.name}' (id ${id})\n`);
  return { kind: EXPERIMENT_SHAPE, id };
}

/** The display name team-setup gives the service account it creates: how a later run knows the account is this team's. */
export const serviceAccountDisplayName = (team: string) => `${team} service account`;
/** The display names of a team's service account made by a team setup: this command's, and the console's Team setup screen's (ui/src/screens/team-setup.tsx). */
const teamDisplayNames = (team: string) => [serviceAccountDisplayName(team), `${team} pipelines`];

interface AccountUser {
  readonly is_service_account: boolean;
  readonly display_name: string;
}

/**
 * Whether `username` may become (or stay) this team's service account, asked before anything is changed:
 * 'absent' (it is created in step 3), 'ours' (an earlier run for this team made it) or 'reused'
 * (`--reuse-service-account`). An account of that name made for anything else is refused: its token is
 * revoked and replaced by one this team's Secret holds, and this team's grants are added to whatever it
 * holds already, so another team's pods would break and this team's would act with the other team's grants.
 */
async function serviceAccountFor(client: AdminClient, username: string, team: string, reuse: boolean): Promise<'absent' | 'ours' | 'reused'> {
  let user: AccountUser;
  try {
    ({ user } = await client.call<{ user: AccountUser }>('GET', `permissions/users/${encodeURIComponent(username)}`));
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return 'absent';
    throw e;
  }
  if (!user.is_service_account) throw new UsageError(`'${username}' exists and is a person, not a service account`);
  if (teamDisplayNames(team).includes(user.display_name)) return 'ours';
  if (reuse) return 'reused';
  throw new UsageError(
    `service account '${username}' exists and was not made by team-setup for team ${team} (its display name is '${user.display_name}', ` +
      `not '${serviceAccountDisplayName(team)}'): using it would revoke its token and give it this team's grants on top of its own. ` +
      'Nothing was changed. Name a new --service-account, or pass --reuse-service-account if this account is meant to be the team\'s',
  );
}

async function ensureServiceAccount(client: AdminClient, username: string, team: string, reuse: boolean, io: Io): Promise<void> {
  let found = await serviceAccountFor(client, username, team, reuse);
  if (found === 'absent') {
    try {
      await client.call('POST', 'users/create', { username, display_name: serviceAccountDisplayName(team), is_admin: false, is_service_account: true });
      io.err(`3. created service account ${username}\n`);
      return;
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 409)) throw e;
      // Made since it was checked: judged as any existing account.
      found = await serviceAccountFor(client, username, team, reuse);
    }
  }
  io.err(
    found === 'reused'
      ? `3. service account ${username} exists; reused (--reuse-service-account): its grants stay, its token is replaced below\n`
      : `3. service account ${username} exists (team ${team}'s)\n`,
  );
}

interface Manifest {
  readonly team: string;
  readonly namespace: string;
  readonly name: string;
  readonly label: string;
  readonly trackingUri: string;
  readonly username: string;
  readonly token: string;
}

/** Steps 5 and 6: the token as a Secret, exposed to notebooks by a Kubeflow PodDefault. */
export function teamAccessYaml(m: Manifest): string {
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: m.name, namespace: m.namespace },
    type: 'Opaque',
    stringData: { MLFLOW_TRACKING_URI: m.trackingUri, MLFLOW_TRACKING_USERNAME: m.username, MLFLOW_TRACKING_PASSWORD: m.token },
  };
  const podDefault = {
    apiVersion: 'kubeflow.org/v1alpha1',
    kind: 'PodDefault',
    metadata: { name: m.name, namespace: m.namespace },
    spec: {
      desc: `MLflow access as ${m.username}`,
      selector: { matchLabels: { [m.label]: 'true' } },
      envFrom: [{ secretRef: { name: m.name } }],
    },
  };
  return `${stringify(secret)}---\n${stringify(podDefault)}`;
}

const list = (v: unknown): string[] => (Array.isArray(v) ? (v as string[]) : v === undefined ? [] : [v as string]);

/** Which access the team's pods get: a flowgate service account's token in a Secret, or a projected Kubernetes token. */
type Access =
  | { readonly kind: 'secret'; readonly serviceAccount: string; readonly reuse: boolean }
  | { readonly kind: 'projected'; readonly account: KubernetesServiceAccount; readonly audience: string; readonly trackingAuth: TrackingAuth };

function accessOf(values: ActionContext['values']): Access {
  const sa = values['service-account'] as string | undefined;
  const k8s = values['kubernetes-service-account'] as string | undefined;
  if (sa && k8s) throw new UsageError('give --service-account (a token in a Secret) or --kubernetes-service-account (a projected token), not both');
  if (!sa && !k8s) throw new UsageError('--service-account or --kubernetes-service-account is required');
  const misplaced = (k8s ? ['expires', 'namespace', 'reuse-service-account'] : ['audience', 'kubernetes-group', 'tracking-auth']).filter((o) => values[o] !== undefined);
  if (misplaced.length > 0) throw new UsageError(`--${misplaced[0]} does not go with ${k8s ? '--kubernetes-service-account' : '--service-account'}`);
  if (sa) {
    expiresProblem(values.expires as string | undefined);
    return { kind: 'secret', serviceAccount: sa, reuse: values['reuse-service-account'] === true };
  }
  const audience = values.audience as string | undefined;
  if (!audience) throw new UsageError("--audience is required with --kubernetes-service-account: the audience of flowgate's kubernetes issuer (FLOWGATE_BEARER_ISSUERS)");
  return { kind: 'projected', account: parseServiceAccount(k8s!), audience, trackingAuth: trackingAuthNamed(values['tracking-auth'] as string | undefined) };
}

/**
 * `--expires` checked as the token call (step 4) will check it, before step 1 changes anything: an ISO
 * 8601 instant in the future, and (once the server has told it) within its FLOWGATE_TOKEN_MAX_DAYS.
 */
function expiresProblem(expires: string | undefined, maxDays = Number.POSITIVE_INFINITY): void {
  if (expires === undefined) return;
  try {
    resolveExpiration(expires, Date.now(), maxDays);
  } catch (e) {
    if (e instanceof FlowgateError) throw new UsageError(`--expires: ${e.message}; nothing was changed`);
    throw e;
  }
}

/** The server's FLOWGATE_TOKEN_MAX_DAYS; a flowgate from before the route existed (404) tells none. */
async function maxTokenDays(client: AdminClient): Promise<number> {
  try {
    return (await client.call<AccessTokenLimits>('GET', 'permissions/access-token-limits')).max_expiration_days;
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return Number.POSITIVE_INFINITY;
    throw e;
  }
}

export const TEAM_SETUP: Action = {
  usage:
    'flowgate team-setup --team TEAM --service-account NAME [--reuse-service-account] --expires ISO-8601 (--experiment NAME|ID | --model NAME | --prompt NAME)… ' +
    '[--permission EDIT] [--namespace NS] [--label KEY] [--tracking-uri URL]\n' +
    '   or: flowgate team-setup --team TEAM --kubernetes-service-account NS:NAME --audience AUD (--experiment … | --model … | --prompt …)… ' +
    '[--permission EDIT] [--kubernetes-group GROUP] [--tracking-auth kubernetes|kubernetes-namespaced] [--label KEY] [--tracking-uri URL]   (no token, no Secret)',
  options: {
    team: { type: 'string' },
    experiment: { type: 'string', multiple: true },
    model: { type: 'string', multiple: true },
    prompt: { type: 'string', multiple: true },
    'service-account': { type: 'string' },
    'reuse-service-account': { type: 'boolean' },
    permission: { type: 'string' },
    expires: { type: 'string' },
    namespace: { type: 'string' },
    label: { type: 'string' },
    'tracking-uri': { type: 'string' },
    'kubernetes-service-account': { type: 'string' },
    audience: { type: 'string' },
    'kubernetes-group': { type: 'string' },
    'tracking-auth': { type: 'string' },
  },
  async run({ client, io, values }) {
    const team = values.team as string | undefined;
    if (!team) throw new UsageError('--team is required');
    const how = accessOf(values);
    const v = values as Record<string, unknown>;
    const wanted = [...list(v.experiment), ...list(v.model), ...list(v.prompt)];
    if (wanted.length === 0) throw new UsageError('name at least one --experiment, --model or --prompt');
    // One level for every resource named: one each of their kinds takes.
    const word = (values.permission as string | undefined) ?? 'EDIT';
    const named: Array<[unknown, Kind]> = [[v.experiment, EXPERIMENT_SHAPE], [v.model, MODEL_SHAPE], [v.prompt, PROMPT_SHAPE]];
    let permission: Permission = permissionNamed(word);
    for (const [given, kind] of named) if (list(given).length > 0) permission = permissionNamed(word, kind);
    if (how.kind === 'secret') {
      expiresProblem(values.expires as string | undefined, await maxTokenDays(client));
      // Another team's (or anyone's) service account is refused before anything is created or granted.
      await serviceAccountFor(client, how.serviceAccount, team, how.reuse);
    }

    // Every name is looked up before anything is created: a refused one (a missing prompt, digits naming two experiments) changes nothing.
    const once = (given: unknown) => [...new Set(list(given))];
    const planned: Wanted[] = [];
    for (const e of once(v.experiment)) planned.push(await experimentFor(client, e));
    for (const m of once(v.model)) planned.push(await modelFor(client, m));
    for (const p of once(v.prompt)) planned.push(await promptFor(client, p));
    const resources: Resource[] = [];
    for (const w of planned) resources.push(await created(client, w, io));

    for (const r of resources) {
      await setGrant(client, { segment: 'groups', name: team }, r.kind, r.id, permission);
      io.err(`2. group ${team}: ${permission} on ${r.kind.kind} ${r.id}\n`);
    }
    const name = `mlflow-${team}`;
    const label = (values.label as string | undefined) ?? name;
    const trackingUri = (values['tracking-uri'] as string | undefined) ?? `${client.url}/`;
    if (how.kind === 'projected') {
      const { account, audience, trackingAuth } = how;
      // The service account's principal exists only after its first call; its namespace's group can be granted now.
      const group = (values['kubernetes-group'] as string | undefined) ?? namespaceGroup(account.namespace);
      for (const r of resources) await setGrant(client, { segment: 'groups', name: group }, r.kind, r.id, permission);
      io.err(
        `3. group ${group}: ${permission} on the same ${resources.length === 1 ? 'resource' : 'resources'}; ` +
          `system:serviceaccount:${account.namespace}:${account.name} calls as ${kubernetesUsername(account.namespace, account.name)}, ` +
          `a member of ${group} (as is every service account of namespace ${account.namespace})\n`,
      );
      io.err(`4. no token and no Secret: pods labelled ${label}=true get a projected token for audience ${audience}\n`);
      io.out(projectedTokenYaml({ account, name, label, trackingUri, trackingAuth, audience }));
      return;
    }
    const sa = how.serviceAccount;
    await ensureServiceAccount(client, sa, team, how.reuse, io);
    // Service accounts cannot join groups: without a direct grant the account could read nothing.
    for (const r of resources) await setGrant(client, { segment: 'users', name: sa }, r.kind, r.id, permission);
    io.err(`   ${sa}: ${permission} on the same ${resources.length === 1 ? 'resource' : 'resources'}\n`);
    const issued = await client.call<{ token: string; expiration: string }>('PATCH', 'permissions/users/access-token', {
      username: sa,
      ...(values.expires !== undefined ? { expiration: values.expires } : {}),
    });
    io.err(`4. token for ${sa}, expires ${issued.expiration} (shown once, below; any earlier token is revoked)\n`);
    io.out(
      teamAccessYaml({
        team,
        namespace: (values.namespace as string | undefined) ?? team,
        name,
        label,
        trackingUri,
        username: sa,
        token: issued.token,
      }),
    );
  },
};

export const runTeamSetup = (argv: string[], io: Io) => runAction(TEAM_SETUP, argv, io);
