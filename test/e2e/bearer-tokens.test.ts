import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import {
  kubeconfigWithToken,
  newKey,
  serviceAccountClaims,
  signWith,
  startClientCredentialsProvider,
  type ClientCredentialsProvider,
  type IssuerKey,
} from '../helpers/jwt-issuers.js';
import { runPython, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/**
 * The real MLflow Python client through flowgate with bearer tokens instead of Basic:
 * - `MLFLOW_TRACKING_TOKEN` holding a JWT access token from the client-credentials grant of an
 *   OpenID Provider (the npm `oidc-provider`), for a machine client;
 * - `MLFLOW_TRACKING_AUTH=kubernetes` with `mlflow[kubernetes]` reading a Kubernetes service-account
 *   token from a kubeconfig (`KUBECONFIG`), signed by a local "cluster" issuer whose JWKS flowgate
 *   reads from a file.
 * Each is allowed where it was granted and refused elsewhere.
 */
const AUD = 'https://mlflow.example.com';
const K8S_ISSUER = 'https://kubernetes.default.svc.cluster.local';
const REPO = fileURLToPath(new URL('../..', import.meta.url));

let mlflow: MlflowServer;
let venv: string;
let idp: ClientCredentialsProvider;
let k8sKey: IssuerKey;
let dir: string;
let fg: TestFlowgate;
const admin = jsonCaller(() => fg.url);
let granted: string;
let other: string;

/** The pinned MLflow venv with `mlflow[kubernetes]` (scripts/mlflow-kubernetes.sh: installed once, then reused). */
const kubernetesVenv = () =>
  new Promise<string>((resolve, reject) =>
    execFile('bash', [join(REPO, 'scripts/mlflow-kubernetes.sh')], { timeout: 900_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`scripts/mlflow-kubernetes.sh: ${error.message}\n${stderr}`)) : resolve(stdout.trim().split('\n').pop()!),
    ),
  );

const OPS = `
import json, os
from mlflow import MlflowClient
c = MlflowClient()
out = {}
def attempt(label, fn):
    try:
        out[label] = {"ok": True, "value": fn()}
    except Exception as e:
        out[label] = {"ok": False, "error": getattr(e, "error_code", None) or str(e)[:300]}
A, B = os.environ["EXP_GRANTED"], os.environ["EXP_OTHER"]
attempt("get_granted", lambda: c.get_experiment(A).name)
attempt("log_granted", lambda: (lambda r: (c.log_metric(r, "loss", 0.5), c.get_run(r).data.metrics["loss"])[1])(c.create_run(A).info.run_id))
attempt("get_other", lambda: c.get_experiment(B).name)
attempt("run_other", lambda: c.create_run(B).info.run_id)
attempt("search", lambda: sorted(e.experiment_id for e in c.search_experiments()))
print("@@RESULT@@" + json.dumps(out))
`;

type Outcome = { ok: true; value: unknown } | { ok: false; error: string };
async function asClient(env: Record<string, string>): Promise<Record<string, Outcome>> {
  const r = await runPython(venv, OPS, {
    MLFLOW_TRACKING_URI: fg.url,
    MLFLOW_HTTP_REQUEST_MAX_RETRIES: '0',
    EXP_GRANTED: granted,
    EXP_OTHER: other,
    ...env,
  });
  const line = r.stdout.split('\n').find((l) => l.startsWith('@@RESULT@@'));
  if (!line) throw new Error(`python failed (${r.code}):\n${r.stderr.slice(-3000)}`);
  return JSON.parse(line.slice('@@RESULT@@'.length)) as Record<string, Outcome>;
}

beforeAll(async () => {
  [mlflow, venv] = await Promise.all([startMlflowServer(), kubernetesVenv()]);
  idp = await startClientCredentialsProvider({ clients: ['trainer', 'scorer'], audience: AUD });
  k8sKey = await newKey('cluster-key-1');
  dir = mkdtempSync(join(tmpdir(), 'flowgate-bearer-e2e-'));
  const jwksFile = join(dir, 'cluster-jwks.json');
  writeFileSync(jwksFile, JSON.stringify({ keys: [k8sKey.publicJwk] }));
  fg = await startTestFlowgate(
    {
      FLOWGATE_UPSTREAM_URL: mlflow.url,
      FLOWGATE_BEARER_ISSUERS: JSON.stringify([
        // Clients of the provider are machines: service accounts named by their client_id.
        { issuer: idp.issuer, audience: AUD, service_accounts: true, groups_claim: null },
        { kind: 'kubernetes', issuer: K8S_ISSUER, audience: AUD, jwks_file: jwksFile },
      ]),
    },
    dir,
  );
  granted = (await admin.call('POST', '/api/2.0/mlflow/experiments/create', { name: 'bearer-granted' })).experiment_id as string;
  other = (await admin.call('POST', '/api/2.0/mlflow/experiments/create', { name: 'bearer-other' })).experiment_id as string;
}, 900_000);

afterAll(async () => {
  await fg?.close();
  await idp?.close();
  await mlflow?.stop();
  if (dir) removeDir(dir);
});

describe('MLFLOW_TRACKING_TOKEN from a client-credentials grant', () => {
  it('a client is a service account on first use; allowed where granted, refused elsewhere', async () => {
    const token = await idp.token('trainer');
    const first = await asClient({ MLFLOW_TRACKING_TOKEN: token });
    // Authenticated (a principal now exists), but nothing is granted yet.
    expect(first.get_granted).toEqual({ ok: false, error: 'PERMISSION_DENIED' });
    const me = await admin.call('GET', '/api/2.0/mlflow/permissions/users/current', undefined, `Bearer ${token}`);
    expect(me.user).toMatchObject({ username: 'trainer', is_service_account: true, is_admin: false, groups: [] });

    await admin.call('POST', `/api/2.0/mlflow/permissions/users/trainer/experiments/${granted}`, { permission: 'EDIT' });
    const out = await asClient({ MLFLOW_TRACKING_TOKEN: await idp.token('trainer') });
    expect(out.get_granted).toEqual({ ok: true, value: 'bearer-granted' });
    expect(out.log_granted).toEqual({ ok: true, value: 0.5 });
    expect(out.get_other).toEqual({ ok: false, error: 'PERMISSION_DENIED' });
    expect(out.run_other).toEqual({ ok: false, error: 'PERMISSION_DENIED' });
    expect(out.search).toEqual({ ok: true, value: [granted] });
  }, 300_000);

  it("another client's token gets nothing the first was granted; a tampered token is UNAUTHENTICATED", async () => {
    const out = await asClient({ MLFLOW_TRACKING_TOKEN: await idp.token('scorer') });
    expect(out.get_granted).toEqual({ ok: false, error: 'PERMISSION_DENIED' });
    const token = await idp.token('trainer');
    const tampered = await asClient({ MLFLOW_TRACKING_TOKEN: `${token.slice(0, -4)}AAAA` });
    expect(tampered.get_granted).toEqual({ ok: false, error: 'UNAUTHENTICATED' });
  }, 300_000);
});

describe('MLFLOW_TRACKING_AUTH=kubernetes (mlflow[kubernetes], token from KUBECONFIG)', () => {
  const kubeconfig = (namespace: string, name: string, key = k8sKey) =>
    signWith(key, serviceAccountClaims(K8S_ISSUER, namespace, name, AUD)).then((token) => {
      const file = join(dir, `kubeconfig-${namespace}-${name}-${Date.now()}.json`);
      writeFileSync(file, kubeconfigWithToken(token, namespace));
      return file;
    });

  it('a service account is granted through its namespace group; others are refused', async () => {
    // Granted before the service account's first call: the grant makes the group, the first call joins it.
    await admin.call('POST', `/api/2.0/mlflow/permissions/groups/${encodeURIComponent('k8s:team-a')}/experiments/${granted}`, { permission: 'EDIT' });
    const out = await asClient({ MLFLOW_TRACKING_AUTH: 'kubernetes', KUBECONFIG: await kubeconfig('team-a', 'pipeline') });
    expect(out.get_granted).toEqual({ ok: true, value: 'bearer-granted' });
    expect(out.log_granted).toEqual({ ok: true, value: 0.5 });
    expect(out.get_other).toEqual({ ok: false, error: 'PERMISSION_DENIED' });
    expect(out.run_other).toEqual({ ok: false, error: 'PERMISSION_DENIED' });

    const me = await admin.call('GET', '/api/2.0/mlflow/permissions/users/current', undefined, `Bearer ${await signWith(k8sKey, serviceAccountClaims(K8S_ISSUER, 'team-a', 'pipeline', AUD))}`);
    expect(me.user).toMatchObject({ username: 'k8s.team-a.pipeline', is_service_account: true, groups: ['k8s:team-a'] });

    const elsewhere = await asClient({ MLFLOW_TRACKING_AUTH: 'kubernetes', KUBECONFIG: await kubeconfig('team-b', 'pipeline') });
    expect(elsewhere.get_granted).toEqual({ ok: false, error: 'PERMISSION_DENIED' });

    const forged = await asClient({ MLFLOW_TRACKING_AUTH: 'kubernetes', KUBECONFIG: await kubeconfig('team-a', 'pipeline', await newKey('cluster-key-1')) });
    expect(forged.get_granted).toEqual({ ok: false, error: 'UNAUTHENTICATED' });
  }, 300_000);
});
