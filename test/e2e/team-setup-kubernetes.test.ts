import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { ADMIN, removeDir } from '../helpers/flowgate.js';
import { startFlowgateProcess, type FlowgateProcess } from '../helpers/flowgate-process.js';
import { newKey, serviceAccountClaims, signWith, type IssuerKey } from '../helpers/jwt-issuers.js';
import { validateAgainstKubernetes, type K8sObject } from '../helpers/kustomize.js';
import { runPython, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/**
 * `flowgate team-setup --kubernetes-service-account NS:NAME`: the secret-free variant. Its manifests
 * are checked against Kubernetes' schemas (the PodDefault's pod parts in a Pod, as
 * test/e2e/deploy-render.test.ts does), its paths and variables against the installed MLflow's
 * Kubernetes auth provider, and the principal it names against what flowgate makes of a
 * service-account token of that namespace and name, signed by a local "cluster" issuer.
 */
const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const ISSUER = 'https://kubernetes.default.svc.cluster.local';
const AUDIENCE = 'https://mlflow.example.com';
const suffix = Date.now().toString(36);

let mlflow: MlflowServer;
let fg: FlowgateProcess;
let key: IssuerKey;
let dir: string;
const admin = jsonCaller(() => fg.url);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'flowgate-team-k8s-'));
  key = await newKey('cluster-key-1');
  const jwks = join(dir, 'cluster-jwks.json');
  writeFileSync(jwks, JSON.stringify({ keys: [key.publicJwk] }));
  mlflow = await startMlflowServer();
  fg = await startFlowgateProcess({
    env: {
      FLOWGATE_UPSTREAM_URL: mlflow.url,
      FLOWGATE_BEARER_ISSUERS: JSON.stringify([{ kind: 'kubernetes', issuer: ISSUER, audience: AUDIENCE, jwks_file: jwks }]),
    },
  });
}, 600_000);

afterAll(async () => {
  await fg?.stop();
  await mlflow?.stop();
  if (dir) removeDir(dir);
});

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { PATH: process.env.PATH ?? '', MLFLOW_TRACKING_URI: fg.url, MLFLOW_TRACKING_USERNAME: ADMIN.username, MLFLOW_TRACKING_PASSWORD: ADMIN.token };
  return new Promise((resolve) =>
    execFile(process.execPath, [CLI, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

/** Kubeflow's PodDefault spec fields (kubeflow/kubeflow components/admission-webhook CRD), as deploy-render.test.ts lists them. */
const POD_DEFAULT_FIELDS = ['selector', 'desc', 'serviceAccountName', 'automountServiceAccountToken', 'env', 'envFrom', 'volumes', 'volumeMounts', 'initContainers', 'sidecars', 'tolerations', 'annotations', 'labels', 'args', 'command', 'imagePullSecrets'];

/** The pod the PodDefault makes of a bare one: Kubernetes' own schema judges every part it injects. */
function podOf(pd: K8sObject): K8sObject {
  const { env, volumeMounts, volumes, serviceAccountName, automountServiceAccountToken } = pd.spec;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: pd.metadata.name, namespace: pd.metadata.namespace },
    spec: { serviceAccountName, automountServiceAccountToken, volumes, containers: [{ name: 'notebook', image: 'jupyter', env, volumeMounts }] },
  };
}

/** Where the installed MLflow's Kubernetes providers read the pod's token and namespace, and the names they answer to. */
async function mlflowKubernetesProvider(): Promise<{ token: string; namespace: string; names: string[] }> {
  const r = await runPython(
    mlflow.venv,
    `
import json
from mlflow.tracking.request_auth import kubernetes_request_auth_provider as k
print("@@RESULT@@" + json.dumps({"token": str(k._SERVICE_ACCOUNT_TOKEN_PATH), "namespace": str(k._SERVICE_ACCOUNT_NAMESPACE_PATH),
  "names": [k.KubernetesRequestAuthProvider().get_name(), k.KubernetesNamespacedRequestAuthProvider().get_name()]}))
`,
  );
  const line = r.stdout.split('\n').find((l) => l.startsWith('@@RESULT@@'));
  if (!line) throw new Error(`python failed (${r.code}):\n${r.stderr.slice(-2000)}`);
  return JSON.parse(line.slice('@@RESULT@@'.length));
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: string };
/** The real MLflow Python client with a bearer token (what MLflow's kubernetes provider sends from the mounted file). */
async function asToken(token: string, experiments: Record<string, string>): Promise<Record<string, Outcome>> {
  const r = await runPython(
    mlflow.venv,
    `
import json, os
from mlflow import MlflowClient
c = MlflowClient()
out = {}
for label, eid in json.loads(os.environ["EXPERIMENTS"]).items():
    try:
        out[label] = {"ok": True, "value": c.get_experiment(eid).name}
    except Exception as e:
        out[label] = {"ok": False, "error": getattr(e, "error_code", None) or str(e)[:300]}
print("@@RESULT@@" + json.dumps(out))
`,
    { MLFLOW_TRACKING_URI: fg.url, MLFLOW_TRACKING_TOKEN: token, MLFLOW_HTTP_REQUEST_MAX_RETRIES: '0', EXPERIMENTS: JSON.stringify(experiments) },
  );
  const line = r.stdout.split('\n').find((l) => l.startsWith('@@RESULT@@'));
  if (!line) throw new Error(`python failed (${r.code}):\n${r.stderr.slice(-2000)}`);
  return JSON.parse(line.slice('@@RESULT@@'.length));
}

describe('flowgate team-setup --kubernetes-service-account (no token, no Secret)', () => {
  it('grants the namespace group, and prints a ServiceAccount and PodDefault that validate and mount a token for flowgate’s audience where MLflow reads it', async () => {
    const experiment = `team-k8s-shared-${suffix}`;
    const r = await cli([
      'team-setup', '--team', 'team-k', '--experiment', experiment, '--kubernetes-service-account', 'ns-k:pipeline-runner',
      '--audience', AUDIENCE, '--permission', 'EDIT', '--label', 'mlflow-team-k-access', '--tracking-uri', 'https://ml.example.com/mlflow/',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const docs = parseAllDocuments(r.stdout).map((d) => d.toJSON() as K8sObject);
    expect(docs.map((d) => d.kind)).toEqual(['ServiceAccount', 'PodDefault']);
    const [account, pd] = docs as [K8sObject, K8sObject];
    expect(r.stdout).not.toMatch(/fgt_|kind: Secret|secretRef/);

    // The ServiceAccount: no API-server token mounted by itself, so the projected one can sit where MLflow reads.
    expect(account).toEqual({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'pipeline-runner', namespace: 'ns-k' }, automountServiceAccountToken: false });

    // The PodDefault: Kubeflow's fields only, selecting the label, running pods as that service account.
    expect(pd.apiVersion).toBe('kubeflow.org/v1alpha1');
    expect(pd.metadata).toEqual({ name: 'mlflow-team-k', namespace: 'ns-k' });
    expect(Object.keys(pd.spec).filter((f) => !POD_DEFAULT_FIELDS.includes(f))).toEqual([]);
    expect(pd.spec.selector).toEqual({ matchLabels: { 'mlflow-team-k-access': 'true' } });
    expect(pd.spec).toMatchObject({ serviceAccountName: 'pipeline-runner', automountServiceAccountToken: false });
    expect(pd.spec.env).toEqual([
      { name: 'MLFLOW_TRACKING_URI', value: 'https://ml.example.com/mlflow/' },
      { name: 'MLFLOW_TRACKING_AUTH', value: 'kubernetes' },
    ]);
    const [mount] = pd.spec.volumeMounts as Array<{ name: string; mountPath: string; readOnly: boolean }>;
    const volume = (pd.spec.volumes as Array<{ name: string; projected: { sources: any[] } }>).find((v) => v.name === mount!.name)!;
    const tokenSource = volume.projected.sources.find((s) => s.serviceAccountToken).serviceAccountToken;
    expect(tokenSource).toEqual({ path: 'token', audience: AUDIENCE, expirationSeconds: 3600 });
    const namespaceSource = volume.projected.sources.find((s) => s.downwardAPI).downwardAPI.items[0];

    // Both objects valid for Kubernetes (strict: unknown fields refused), the PodDefault's parts inside a Pod.
    const verdicts = validateAgainstKubernetes([account, podOf(pd)]);
    expect(verdicts.map((v) => v.result), JSON.stringify(verdicts)).toEqual(['valid', 'valid']);

    // The paths and the provider name are the installed MLflow's own.
    const provider = await mlflowKubernetesProvider();
    expect(`${mount!.mountPath}/${tokenSource.path}`).toBe(provider.token);
    expect(`${mount!.mountPath}/${namespaceSource.path}`).toBe(provider.namespace);
    expect(provider.names).toContain(pd.spec.env[1].value);

    // Granted: the team group and the namespace's group; no flowgate user or token was made.
    const grants = async (group: string) =>
      ((await admin.call('GET', `/api/2.0/mlflow/permissions/groups/${encodeURIComponent(group)}/experiments`)).permissions as Array<{ experiment_id: string; permission: string }>);
    const [teamGrant] = await grants('team-k');
    expect(await grants('k8s:ns-k')).toEqual([expect.objectContaining({ experiment_id: teamGrant!.experiment_id, permission: 'EDIT' })]);
    const accounts = JSON.stringify(await admin.call('GET', '/api/2.0/mlflow/permissions/service-accounts'));
    expect(accounts).not.toContain('pipeline-runner');
    expect(r.stderr).toContain('system:serviceaccount:ns-k:pipeline-runner calls as k8s.ns-k.pipeline-runner, a member of k8s:ns-k');

    // The principal named is the one a real token of that service account, for the PodDefault's audience, becomes.
    const other = (await admin.call('POST', '/api/2.0/mlflow/experiments/create', { name: `team-k8s-other-${suffix}` })).experiment_id as string;
    const experiments = { granted: teamGrant!.experiment_id, other };
    const token = await signWith(key, serviceAccountClaims(ISSUER, 'ns-k', 'pipeline-runner', tokenSource.audience, tokenSource.expirationSeconds));
    const out = await asToken(token, experiments);
    expect(out.granted).toEqual({ ok: true, value: experiment });
    expect(out.other).toEqual({ ok: false, error: 'PERMISSION_DENIED' });
    const me = await admin.call('GET', '/api/2.0/mlflow/permissions/users/current', undefined, `Bearer ${token}`);
    expect(me.user).toMatchObject({ username: 'k8s.ns-k.pipeline-runner', is_service_account: true, groups: ['k8s:ns-k'] });

    // Another namespace's service account of the same name gets nothing; a token for another audience is no caller.
    const elsewhere = await signWith(key, serviceAccountClaims(ISSUER, 'ns-other', 'pipeline-runner', AUDIENCE));
    expect((await asToken(elsewhere, experiments)).granted).toEqual({ ok: false, error: 'PERMISSION_DENIED' });
    const apiServer = await signWith(key, serviceAccountClaims(ISSUER, 'ns-k', 'pipeline-runner', ISSUER));
    expect((await asToken(apiServer, experiments)).granted).toEqual({ ok: false, error: 'UNAUTHENTICATED' });
  }, 300_000);

  it('kubernetes-namespaced sends the namespace too; a group other than the default is granted when named', async () => {
    const r = await cli([
      'team-setup', '--team', 'team-n', '--experiment', `team-n-${suffix}`, '--kubernetes-service-account', 'ns-n:runner',
      '--audience', AUDIENCE, '--tracking-auth', 'kubernetes-namespaced', '--kubernetes-group', 'cluster-a:ns-n',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const pd = parseAllDocuments(r.stdout).map((d) => d.toJSON() as K8sObject)[1]!;
    expect(pd.spec.env).toContainEqual({ name: 'MLFLOW_TRACKING_AUTH', value: 'kubernetes-namespaced' });
    expect(pd.spec.selector).toEqual({ matchLabels: { 'mlflow-team-n': 'true' } });
    const granted = (await admin.call('GET', `/api/2.0/mlflow/permissions/groups/${encodeURIComponent('cluster-a:ns-n')}/experiments`)).permissions as unknown[];
    expect(granted).toHaveLength(1);
  }, 120_000);

  it.each([
    ['both variants at once', ['--service-account', 'bot', '--kubernetes-service-account', 'ns:sa', '--audience', AUDIENCE], /not both/],
    ['no audience', ['--kubernetes-service-account', 'ns:sa'], /--audience is required/],
    ['no name', ['--kubernetes-service-account', 'ns-only', '--audience', AUDIENCE], /NAMESPACE:NAME/],
    ['a namespace Kubernetes cannot have', ['--kubernetes-service-account', 'Team_A:sa', '--audience', AUDIENCE], /namespace name/],
    ['an expiry, which only a token has', ['--kubernetes-service-account', 'ns:sa', '--audience', AUDIENCE, '--expires', '2030-01-01T00:00:00Z'], /--expires does not go/],
    ['an audience for a Secret', ['--service-account', 'bot', '--audience', AUDIENCE], /--audience does not go/],
    ['an auth MLflow does not have', ['--kubernetes-service-account', 'ns:sa', '--audience', AUDIENCE, '--tracking-auth', 'oidc'], /--tracking-auth/],
  ])('%s: a usage error, nothing changed', async (_, args, message) => {
    const r = await cli(['team-setup', '--team', `team-bad-${suffix}`, '--experiment', `bad-${suffix}`, ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe('');
    const search = await admin.call('POST', '/api/2.0/mlflow/experiments/search', { filter: `name = 'bad-${suffix}'`, max_results: 10 });
    expect(search.experiments ?? []).toEqual([]);
  }, 60_000);
});
