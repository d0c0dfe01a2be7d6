import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { kustomizeBuild } from '../helpers/kustomize.js';

const DEPLOY = fileURLToPath(new URL('../../deploy/', import.meta.url));

/**
 * Every Kubernetes object under deploy/ (YAML documents with a `kind`), with the file it is in. The
 * Helm chart's templates become manifests only when helm renders them: test/e2e/helm-chart.test.ts.
 */
const everyObject = () =>
  (readdirSync(DEPLOY, { recursive: true }) as string[])
    .filter((f) => /\.ya?ml$/.test(f) && !f.startsWith('helm/'))
    .flatMap((file) =>
      parseAllDocuments(readFileSync(join(DEPLOY, file), 'utf8')).map((d) => {
        expect(d.errors, file).toEqual([]);
        return { file, object: d.toJS() as Record<string, any> | null };
      }),
    )
    .filter((o): o is { file: string; object: Record<string, any> } => typeof o.object?.kind === 'string');

type Reference = { kind: 'Secret' | 'ConfigMap'; namespace: string; name: string; key?: string; where: string };

/** The Secrets and ConfigMaps a manifest uses: env keys, envFrom, volumes (projected ones included). */
function referencesIn(node: unknown, namespace: string, where: string, out: Reference[] = []): Reference[] {
  if (Array.isArray(node)) node.forEach((n) => referencesIn(n, namespace, where, out));
  if (typeof node !== 'object' || node === null) return out;
  for (const [field, value] of Object.entries(node as Record<string, any>)) {
    if (field === 'secretKeyRef' || field === 'configMapKeyRef')
      out.push({ kind: field === 'secretKeyRef' ? 'Secret' : 'ConfigMap', namespace, name: value.name, key: value.key, where });
    else if (field === 'secretRef' || field === 'configMapRef')
      out.push({ kind: field === 'secretRef' ? 'Secret' : 'ConfigMap', namespace, name: value.name, where });
    else if (field === 'secret' && typeof value?.secretName === 'string') out.push({ kind: 'Secret', namespace, name: value.secretName, where });
    else if (field === 'secret' && typeof value?.name === 'string') out.push({ kind: 'Secret', namespace, name: value.name, where });
    else if (field === 'configMap' && typeof value?.name === 'string') out.push({ kind: 'ConfigMap', namespace, name: value.name, where });
    referencesIn(value, namespace, where, out);
  }
  return out;
}

const OVERLAYS = { sidecar: `${DEPLOY}overlays/sidecar`, ingress: `${DEPLOY}overlays/ingress` };
const rendered = new Map<string, Array<Record<string, any>>>();
/** The objects an overlay renders to (kustomize build), built once per run. */
const docs = (overlay: keyof typeof OVERLAYS) => {
  if (!rendered.has(overlay)) rendered.set(overlay, kustomizeBuild(OVERLAYS[overlay]));
  return rendered.get(overlay)!;
};
/** The Deployment holding the named container. */
const deploymentWith = (all: Array<Record<string, any>>, container: string) =>
  all.find((d) => d.kind === 'Deployment' && d.spec.template.spec.containers.some((c: { name: string }) => c.name === container))!;

describe('deploy/ (kustomize base + overlays)', () => {
  it('runs flowgate as a sidecar whose probes and ports match the server', () => {
    const all = docs('sidecar');
    const deployment = all.find((d) => d.kind === 'Deployment')!;
    const containers = deployment.spec.template.spec.containers as Array<Record<string, any>>;
    const mlflow = containers.find((c) => c.name === 'mlflow')!;
    const fg = containers.find((c) => c.name === 'flowgate')!;
    expect(mlflow.args).toContain('--host=127.0.0.1');
    const env = Object.fromEntries((fg.env as Array<{ name: string; value?: string }>).map((e) => [e.name, e.value]));
    expect(env.FLOWGATE_UPSTREAM_URL).toBe('http://127.0.0.1:5000');
    expect(env.FLOWGATE_BASE_PATH).toBe('/mlflow');
    expect(mlflow.args).toContain(`--static-prefix=${env.FLOWGATE_UPSTREAM_STATIC_PREFIX}`);
    expect(fg.readinessProbe.httpGet.path).toBe(`${env.FLOWGATE_BASE_PATH}/readyz`);
    expect(fg.livenessProbe.httpGet.path).toBe(`${env.FLOWGATE_BASE_PATH}/healthz`);
    const service = all.find((d) => d.kind === 'Service')!;
    expect(service.spec.ports.map((p: { targetPort: string }) => p.targetPort)).toEqual(['http']);
    expect(env.FLOWGATE_OIDC_REDIRECT_URL).toMatch(new RegExp(`${env.FLOWGATE_BASE_PATH}/flowgate/callback$`));
  });

  it("exposes a team's service-account token through a PodDefault, as the spec's steps 5-6 describe", () => {
    const [secret, podDefault] = kustomizeBuild(`${DEPLOY}team-access`);
    expect(Object.keys(secret!.stringData).sort()).toEqual(['MLFLOW_TRACKING_PASSWORD', 'MLFLOW_TRACKING_URI', 'MLFLOW_TRACKING_USERNAME']);
    expect(podDefault!.apiVersion).toBe('kubeflow.org/v1alpha1');
    expect(Object.values(podDefault!.spec.selector.matchLabels)).toEqual(['true']);
    expect(podDefault!.spec.desc).toBeTruthy();
    expect(podDefault!.spec.envFrom[0].secretRef.name).toBe(secret!.metadata.name);
  });

  it('defines every Secret and ConfigMap a manifest references, with the keys it reads', () => {
    const objects = everyObject();
    const defined = new Map(
      objects
        .filter(({ object }) => object.kind === 'Secret' || object.kind === 'ConfigMap')
        .map(({ object }) => [
          `${object.kind}/${object.metadata.namespace}/${object.metadata.name}`,
          new Set([...Object.keys(object.data ?? {}), ...Object.keys(object.stringData ?? {})]),
        ]),
    );
    const references = objects.flatMap(({ file, object }) =>
      referencesIn(object.spec, object.metadata?.namespace, `${file} ${object.kind}/${object.metadata?.name}`),
    );
    // The sidecar's OIDC client secret, its admin token and MLflow's store credentials at least.
    expect(references.map((r) => r.name)).toEqual(expect.arrayContaining(['flowgate-oidc', 'flowgate-admin', 'mlflow-backend', 'mlflow-team-a']));
    for (const r of references) {
      const keys = defined.get(`${r.kind}/${r.namespace}/${r.name}`);
      expect(keys, `${r.where} uses ${r.kind} ${r.namespace}/${r.name}, defined nowhere under deploy/`).toBeDefined();
      if (r.key !== undefined) expect([...keys!], `${r.where} reads key ${r.key} of ${r.kind} ${r.name}`).toContain(r.key);
    }
  });

  it.each(['sidecar', 'ingress'] as const)("%s: gives MLflow the drivers its store URIs need, and accepts the Host flowgate sends it", (overlay) => {
    const all = docs(overlay);
    const pod = deploymentWith(all, 'mlflow').spec.template.spec;
    const mlflow = (pod.containers as Array<Record<string, any>>).find((c) => c.name === 'mlflow')!;
    const fg = (deploymentWith(all, 'flowgate').spec.template.spec.containers as Array<Record<string, any>>).find((c) => c.name === 'flowgate')!;
    const secrets = Object.fromEntries(all.filter((d) => d.kind === 'Secret').map((d) => [d.metadata.name, d.stringData]));
    const envOf = (c: Record<string, any>) =>
      Object.fromEntries(
        (c.env as Array<{ name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }>).map((e) => [
          e.name,
          e.value ?? secrets[e.valueFrom!.secretKeyRef.name]?.[e.valueFrom!.secretKeyRef.key],
        ]),
      );
    const mlflowEnv = envOf(mlflow);
    const arg = (name: string) => (mlflow.args as string[]).find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
    const uris = [arg('backend-store-uri') ?? mlflowEnv.MLFLOW_BACKEND_STORE_URI, arg('artifacts-destination')].join(' ');

    // What each URI scheme makes MLflow import, and where the image would have to get it from.
    const needed = [...(/postgresql:/.test(uris) ? ['psycopg2-binary'] : []), ...(/s3:/.test(uris) ? ['boto3'] : [])];
    expect(needed).toEqual(['psycopg2-binary', 'boto3']);
    const installer = (pod.initContainers as Array<Record<string, any>>).find((c) => c.image === mlflow.image)!;
    const installed = (installer.command as string[]).filter((a) => /==/.test(a)).map((a) => a.split('==')[0]);
    expect(installed).toEqual(expect.arrayContaining(needed));
    const target = (installer.command as string[]).find((a) => a.startsWith('--target='))!.slice('--target='.length);
    const volume = (installer.volumeMounts as Array<{ name: string; mountPath: string }>).find((m) => m.mountPath === target)!.name;
    expect((mlflow.volumeMounts as Array<{ name: string; mountPath: string }>).find((m) => m.name === volume)?.mountPath).toBe(target);
    expect(mlflowEnv.PYTHONPATH).toBe(target);
    if (/s3:/.test(uris)) expect(Object.keys(mlflowEnv)).toEqual(expect.arrayContaining(['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']));

    // flowgate sends MLflow the upstream URL's host[:port] whatever host the client called.
    const upstreamHost = new URL(envOf(fg).FLOWGATE_UPSTREAM_URL).host;
    expect(arg('allowed-hosts')?.split(',')).toContain(upstreamHost);
  });
});
