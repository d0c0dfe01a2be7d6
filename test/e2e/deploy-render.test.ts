import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config.js';
import { parseInferenceConfig } from '../../src/inference/config.js';
import { parseKeyFile, parseKeyList } from '../../src/inference/key-file.js';
import {
  KUBERNETES_VERSION,
  hasPublishedCrdSchema,
  kustomizeBuild,
  validateAgainstCrd,
  validateAgainstKubernetes,
  type K8sObject,
  type Verdict,
} from '../helpers/kustomize.js';

const DEPLOY = fileURLToPath(new URL('../../deploy/', import.meta.url));
/** The Helm chart's templates are not manifests until helm renders them: test/e2e/helm-chart.test.ts does. */
const files = (readdirSync(DEPLOY, { recursive: true }) as string[]).filter((f) => /\.ya?ml$/.test(f) && !f.startsWith('helm/'));
/** Every kustomization under deploy/: the base, both overlays, the team and KServe examples. */
const KUSTOMIZATIONS = files.filter((f) => /(^|\/)kustomization\.yaml$/.test(f)).map((f) => dirname(f));
/** CRDs no registry package publishes a schema for: checked field by field below. */
const BY_HAND = new Set(['kubeflow.org/v1alpha1/PodDefault', 'serving.kserve.io/v1beta1/InferenceService']);

let rendered: Record<string, K8sObject[]>;
beforeAll(() => {
  rendered = Object.fromEntries(KUSTOMIZATIONS.map((dir) => [dir, kustomizeBuild(join(DEPLOY, dir))]));
}, 600_000);

const everyObject = () => Object.values(rendered).flat();
const unique = (objects: K8sObject[]) => [...new Map(objects.map((o) => [JSON.stringify(o), o])).values()];
const tally = (verdicts: Verdict[]) =>
  Object.entries(verdicts.reduce<Record<string, number>>((n, v) => ({ ...n, [v.kind]: (n[v.kind] ?? 0) + 1 }), {}))
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');

/** A Pod whose one container carries these fields: lets Kubernetes' own schema judge the pod parts a CRD embeds. */
const podWith = (name: string, container: Record<string, unknown>, pod: Record<string, unknown> = {}): K8sObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: { ...pod, containers: [{ name: 'c', image: 'i', ...container }] },
});

describe('deploy/ renders with kustomize and validates', () => {
  it('has the base, the sidecar and ingress overlays, and puts every manifest file in a kustomization', () => {
    expect(KUSTOMIZATIONS).toEqual(expect.arrayContaining(['base', 'overlays/sidecar', 'overlays/ingress']));
    const used = new Set(
      KUSTOMIZATIONS.flatMap((dir) => {
        const k = parse(readFileSync(join(DEPLOY, dir, 'kustomization.yaml'), 'utf8')) as { resources?: string[]; patches?: Array<{ path: string }> };
        return [...(k.resources ?? []), ...(k.patches ?? []).map((p) => p.path)].map((r) => relative(DEPLOY, join(DEPLOY, dir, r)));
      }),
    );
    const manifests = files.filter((f) => parseAllDocuments(readFileSync(join(DEPLOY, f), 'utf8')).some((d) => typeof (d.toJS() as { kind?: unknown })?.kind === 'string'));
    const orphans = manifests.filter((f) => !f.endsWith('kustomization.yaml') && !used.has(f));
    expect(orphans, 'manifests no kustomization renders').toEqual([]);
    // A base in each overlay, each overlay with the pieces it is named for.
    expect(rendered['overlays/sidecar']!.map((o) => o.kind)).toEqual(expect.arrayContaining(['Deployment', 'Service', 'PersistentVolumeClaim', 'Secret', 'PodMonitor']));
    expect(rendered['overlays/ingress']!.map((o) => o.kind)).toEqual(
      expect.arrayContaining(['Deployment', 'Service', 'Ingress', 'PodDisruptionBudget', 'NetworkPolicy', 'Secret', 'PodMonitor']),
    );
  });

  it(`every built-in object is valid against Kubernetes ${KUBERNETES_VERSION}'s schemas (strict: unknown fields refused)`, () => {
    for (const dir of KUSTOMIZATIONS) {
      const verdicts = validateAgainstKubernetes(rendered[dir]!);
      const builtIn = verdicts.filter((v) => v.result !== 'no-schema');
      console.log(`kubernetes-validate ${KUBERNETES_VERSION} deploy/${dir}: ${builtIn.length} valid of ${builtIn.length} (${tally(builtIn)})`);
      expect(verdicts.filter((v) => v.result === 'invalid')).toEqual([]);
      // Only custom resources may lack a Kubernetes schema.
      const withoutSchema = rendered[dir]!.filter((_, i) => verdicts[i]!.result === 'no-schema');
      for (const o of withoutSchema) expect(hasPublishedCrdSchema(o) || BY_HAND.has(`${o.apiVersion}/${o.kind}`), `${o.apiVersion}/${o.kind}`).toBe(true);
    }
    // The validator is not a rubber stamp: a wrong type, and an unknown (misspelt) field.
    const flowgate = rendered['overlays/ingress']!.find((o) => o.kind === 'Deployment' && o.metadata.name === 'flowgate')!;
    const wrongType = structuredClone(flowgate);
    wrongType.spec.replicas = 'three';
    const misspelt = structuredClone(flowgate);
    misspelt.spec.template.spec.containers[0].readinessProbe = { httpGett: { path: '/readyz', port: 'http' } };
    expect(validateAgainstKubernetes([wrongType, misspelt]).map((v) => v.result)).toEqual(['invalid', 'invalid']);
  });

  it('PodMonitor (and any EnvoyFilter) are valid against the schemas of their published CRDs', async () => {
    const crs = unique(everyObject().filter(hasPublishedCrdSchema));
    expect(crs.map((o) => o.kind)).toContain('PodMonitor');
    const verdicts = await Promise.all(crs.map(validateAgainstCrd));
    console.log(`published CRD schemas: ${verdicts.filter((v) => v.result === 'valid').length} valid of ${verdicts.length} (${tally(verdicts)})`);
    expect(verdicts.filter((v) => v.result !== 'valid')).toEqual([]);
    const wrong = structuredClone(crs.find((o) => o.kind === 'PodMonitor')!);
    wrong.spec.podMetricsEndpoints[0].port = 9090; // the CRD wants the port's name
    expect((await validateAgainstCrd(wrong)).result).toBe('invalid');
  });

  it('PodDefault: kubeflow.org/v1alpha1 fields only, its pod parts valid for Kubernetes', () => {
    const podDefaults = unique(everyObject().filter((o) => o.kind === 'PodDefault'));
    expect(podDefaults.length).toBeGreaterThan(0);
    // admission-webhook's PodDefault CRD (kubeflow/kubeflow components/admission-webhook): spec fields.
    const fields = ['selector', 'desc', 'serviceAccountName', 'automountServiceAccountToken', 'env', 'envFrom', 'volumes', 'volumeMounts', 'initContainers', 'sidecars', 'tolerations', 'annotations', 'labels', 'args', 'command', 'imagePullSecrets'];
    const verdicts = podDefaults.map((pd): Verdict => {
      expect(pd.apiVersion).toBe('kubeflow.org/v1alpha1');
      expect(pd.metadata.namespace, 'a PodDefault acts in its own namespace').toBeTruthy();
      expect(Object.keys(pd.spec).filter((f) => !fields.includes(f))).toEqual([]);
      expect(pd.spec.selector.matchLabels ?? pd.spec.selector.matchExpressions).toBeTruthy();
      expect(typeof pd.spec.desc).toBe('string');
      const { env, envFrom, volumeMounts, volumes, tolerations } = pd.spec;
      return validateAgainstKubernetes([podWith(pd.metadata.name, { env, envFrom, volumeMounts }, { volumes, tolerations })])[0]!;
    });
    console.log(`PodDefault checked field by field: ${verdicts.filter((v) => v.result === 'valid').length} of ${verdicts.length}`);
    expect(verdicts.map((v) => v.result)).toEqual(podDefaults.map(() => 'valid'));
  });

  it('InferenceService: serving.kserve.io/v1beta1 predictor fields only, its resources and nodeSelector valid for Kubernetes', () => {
    const services = unique(everyObject().filter((o) => o.kind === 'InferenceService'));
    expect(services.length).toBeGreaterThan(0);
    const verdicts = services.map((isvc): Verdict => {
      expect(isvc.apiVersion).toBe('serving.kserve.io/v1beta1');
      expect(Object.keys(isvc.spec).filter((f) => !['predictor', 'transformer', 'explainer'].includes(f))).toEqual([]);
      const { predictor } = isvc.spec;
      const predictorFields = ['model', 'annotations', 'labels', 'nodeSelector', 'minReplicas', 'maxReplicas', 'scaleTarget', 'scaleMetric', 'containerConcurrency', 'timeout', 'canaryTrafficPercent', 'serviceAccountName', 'tolerations', 'affinity', 'volumes', 'containers', 'imagePullSecrets', 'logger', 'batcher', 'deploymentStrategy'];
      expect(Object.keys(predictor).filter((f) => !predictorFields.includes(f))).toEqual([]);
      expect(Number.isInteger(predictor.minReplicas ?? 0) && (predictor.minReplicas ?? 0) >= 0).toBe(true);
      for (const v of Object.values(predictor.annotations ?? {})) expect(typeof v).toBe('string');
      const { model } = predictor;
      expect(Object.keys(model).filter((f) => !['modelFormat', 'protocolVersion', 'storageUri', 'runtime', 'resources', 'env', 'args'].includes(f))).toEqual([]);
      expect(typeof model.modelFormat.name).toBe('string');
      expect(['v1', 'v2', 'grpc-v1', 'grpc-v2']).toContain(model.protocolVersion);
      expect(model.storageUri).toMatch(/^(s3|gs|https?|pvc|hdfs|oci):\/\//);
      return validateAgainstKubernetes([podWith(isvc.metadata.name, { resources: model.resources, env: model.env }, { nodeSelector: predictor.nodeSelector, tolerations: predictor.tolerations })])[0]!;
    });
    console.log(`InferenceService checked field by field: ${verdicts.filter((v) => v.result === 'valid').length} of ${verdicts.length}`);
    expect(verdicts.map((v) => v.result)).toEqual(services.map(() => 'valid'));
  });

  it.each(['overlays/sidecar', 'overlays/ingress'])('%s: the PodMonitor scrapes flowgate’s metrics port, under a job name the alert rules match', (overlay) => {
    const objects = rendered[overlay]!;
    const [monitor, ...others] = objects.filter((o) => o.kind === 'PodMonitor');
    expect(others).toEqual([]);
    const pods = objects.filter((o) => o.kind === 'Deployment' && Object.entries(monitor!.spec.selector.matchLabels).every(([k, v]) => o.spec.template.metadata.labels[k] === v));
    expect(pods).toHaveLength(1);
    const flowgate = pods[0]!.spec.template.spec.containers.find((c: { name: string }) => c.name === 'flowgate');
    const port = flowgate.ports.find((p: { name: string }) => p.name === monitor!.spec.podMetricsEndpoints[0].port);
    expect(port.containerPort).toBe(9090);
    const env = Object.fromEntries(flowgate.env.map((e: { name: string; value?: string }) => [e.name, e.value]));
    expect(env.FLOWGATE_METRICS_PORT ?? '9090').toBe(String(port.containerPort));
    const rules = readFileSync(join(DEPLOY, 'prometheus/flowgate-rules.yml'), 'utf8');
    const jobPattern = /up\{job=~"([^"]+)"\}/.exec(rules)![1]!;
    expect(new RegExp(`^(?:${jobPattern})$`).test(`${monitor!.metadata.namespace}/${monitor!.metadata.name}`)).toBe(true);
  });

  it('every Secret an overlay references is defined in it, or issued by cert-manager for its Ingress', () => {
    for (const overlay of ['overlays/sidecar', 'overlays/ingress']) {
      const objects = rendered[overlay]!;
      const secrets = new Set(objects.filter((o) => o.kind === 'Secret').map((o) => o.metadata.name));
      const text = JSON.stringify(objects.filter((o) => o.kind === 'Deployment'));
      const used = [...text.matchAll(/"(?:secretName|secretKeyRef":\{"key":"[^"]*","name)":"([^"]+)"/g)].map((m) => m[1]!);
      expect(used.length).toBeGreaterThan(0);
      for (const name of used) expect(secrets, `${overlay} uses Secret ${name}`).toContain(name);
      for (const ing of objects.filter((o) => o.kind === 'Ingress'))
        for (const tls of ing.spec.tls ?? [])
          expect(secrets.has(tls.secretName) || Object.keys(ing.metadata.annotations ?? {}).some((a) => a.startsWith('cert-manager.io/')), tls.secretName).toBe(true);
    }
  });
});

/** The Secret and key a `*_FILE` setting reads: a read-only directory mount (no subPath) of one Secret key. */
function secretFileOf(deployment: K8sObject, container: any, setting: string): { secret: string; key: string } {
  const path: string | undefined = container.env.find((e: { name: string }) => e.name === setting)?.value;
  expect(path, setting).toBeTruthy();
  const mount = container.volumeMounts.find((m: { mountPath: string }) => dirname(path!) === m.mountPath);
  expect(mount, path).toMatchObject({ readOnly: true });
  expect(mount.subPath, path).toBeUndefined();
  const volume = deployment.spec.template.spec.volumes.find((v: { name: string }) => v.name === mount.name);
  expect(volume.secret.defaultMode, mount.name).toBe(0o400);
  const item = volume.secret.items.find((i: { path: string }) => `${mount.mountPath}/${i.path}` === path);
  expect(item, path).toBeTruthy();
  return { secret: volume.secret.secretName, key: item.key };
}

describe('overlays: flowgate’s own secrets are files, never variables', () => {
  it.each(['overlays/sidecar', 'overlays/ingress'])('%s: the OIDC client secret (and the database URL) from read-only Secret mounts', (overlay) => {
    const objects = rendered[overlay]!;
    const deployment = objects.find((o) => o.kind === 'Deployment' && o.spec.template.spec.containers.some((c: { name: string }) => c.name === 'flowgate'))!;
    const container = deployment.spec.template.spec.containers.find((c: { name: string }) => c.name === 'flowgate');
    const names = container.env.map((e: { name: string }) => e.name);
    // In a variable, a secret shows in /proc/<pid>/environ and `kubectl exec … env`.
    for (const name of ['FLOWGATE_DATABASE_URL', 'FLOWGATE_OIDC_CLIENT_SECRET', 'FLOWGATE_ADMIN_TOKEN']) expect(names).not.toContain(name);
    const files = ['FLOWGATE_OIDC_CLIENT_SECRET_FILE', 'FLOWGATE_ADMIN_TOKEN_FILE', ...(overlay === 'overlays/ingress' ? ['FLOWGATE_DATABASE_URL_FILE'] : [])];
    for (const setting of files) {
      const { secret, key } = secretFileOf(deployment, container, setting);
      const defined = objects.find((o) => o.kind === 'Secret' && o.metadata.name === secret);
      expect(Object.keys(defined?.stringData ?? {}), `${overlay}: ${secret}/${key}`).toContain(key);
    }
    // What flowgate reads from those files, with a stand-in for each placeholder, starts.
    const env = Object.fromEntries(container.env.filter((e: { value?: string }) => e.value !== undefined).map((e: { name: string; value: string }) => [e.name, e.value]));
    const config = loadConfig(env, (path) => {
      if (path === env.FLOWGATE_DATABASE_URL_FILE) return 'postgres://flowgate:pw@db:5432/flowgate\n';
      if (path === env.FLOWGATE_OIDC_CLIENT_SECRET_FILE) return 'client-secret-stand-in\n';
      if (path === env.FLOWGATE_ADMIN_TOKEN_FILE) return 'fgt_' + 'a'.repeat(43);
      throw new Error(`no file ${path}`);
    });
    expect(config.oidc?.clientSecret).toBe('client-secret-stand-in');
    expect(config.databaseUrl).toBe(overlay === 'overlays/ingress' ? 'postgres://flowgate:pw@db:5432/flowgate' : undefined);
  });
});

describe('overlays/ingress: flowgate in front of MLflow', () => {
  const of = (kind: string, name: string) => rendered['overlays/ingress']!.find((o) => o.kind === kind && o.metadata.name === name)!;
  const selects = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);

  it('runs 3 flowgate replicas spread across nodes, at most one disrupted at a time', () => {
    const fg = of('Deployment', 'flowgate');
    const labels = fg.spec.template.metadata.labels;
    expect(fg.spec.replicas).toBe(3);
    const spread = fg.spec.template.spec.topologySpreadConstraints.find((c: { topologyKey: string }) => c.topologyKey === 'kubernetes.io/hostname');
    expect(spread).toMatchObject({ maxSkew: 1, whenUnsatisfiable: 'DoNotSchedule' });
    expect(selects(spread.labelSelector.matchLabels, labels)).toBe(true);
    const anti = fg.spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm;
    expect(anti.topologyKey).toBe('kubernetes.io/hostname');
    expect(selects(anti.labelSelector.matchLabels, labels)).toBe(true);
    const pdb = of('PodDisruptionBudget', 'flowgate');
    expect(selects(pdb.spec.selector.matchLabels, labels)).toBe(true);
    expect(fg.spec.replicas - pdb.spec.minAvailable).toBe(1);
    // A replica that is not ready never holds up a drain.
    expect(pdb.spec.unhealthyPodEvictionPolicy).toBe('AlwaysAllow');
  });

  it('routes the public host through the Ingress and Service to flowgate, and flowgate to MLflow’s Service', () => {
    const fg = of('Deployment', 'flowgate');
    const container = fg.spec.template.spec.containers.find((c: { name: string }) => c.name === 'flowgate');
    const env = Object.fromEntries(container.env.map((e: { name: string; value?: string }) => [e.name, e.value]));
    const ingress = of('Ingress', 'flowgate');
    const rule = ingress.spec.rules[0];
    expect(new URL(env.FLOWGATE_OIDC_REDIRECT_URL).host).toBe(rule.host);
    expect(ingress.spec.tls[0].hosts).toContain(rule.host);
    const path = rule.http.paths[0];
    expect(path.path).toBe(env.FLOWGATE_BASE_PATH);
    const service = of('Service', path.backend.service.name);
    expect(selects(service.spec.selector, fg.spec.template.metadata.labels)).toBe(true);
    const port = service.spec.ports.find((p: { name: string }) => p.name === path.backend.service.port.name);
    expect(container.ports.map((p: { name: string }) => p.name)).toContain(port.targetPort);

    const upstream = new URL(env.FLOWGATE_UPSTREAM_URL);
    const [svcName, namespace] = upstream.hostname.split('.');
    const mlflowService = of('Service', svcName!);
    expect(mlflowService.metadata.namespace).toBe(namespace);
    const mlflowPort = mlflowService.spec.ports.find((p: { port: number }) => p.port === Number(upstream.port));
    const mlflowPod = of('Deployment', 'mlflow').spec.template;
    const mlflow = mlflowPod.spec.containers.find((c: { name: string }) => c.name === 'mlflow');
    expect(mlflow.ports.find((p: { name: string }) => p.name === mlflowPort.targetPort).containerPort).toBe(5000);
    expect(mlflow.args).toContain('--host=0.0.0.0');
    expect(mlflow.args).toContain(`--allowed-hosts=${upstream.host}`);
    expect(selects(mlflowService.spec.selector, mlflowPod.metadata.labels)).toBe(true);
  });

  it('lets only flowgate reach MLflow', () => {
    const mlflowLabels = of('Deployment', 'mlflow').spec.template.metadata.labels;
    const fgLabels = of('Deployment', 'flowgate').spec.template.metadata.labels;
    const policies = rendered['overlays/ingress']!.filter((o) => o.kind === 'NetworkPolicy' && selects(o.spec.podSelector.matchLabels, mlflowLabels));
    expect(policies).toHaveLength(1);
    const [policy] = policies;
    expect(policy!.spec.policyTypes).toContain('Ingress');
    const peers = policy!.spec.ingress.flatMap((r: { from?: unknown[] }) => r.from ?? [{ everyone: true }]);
    expect(peers).toHaveLength(1);
    expect(Object.keys(peers[0])).toEqual(['podSelector']); // same namespace, no ipBlock or namespaceSelector
    expect(selects(peers[0].podSelector.matchLabels, fgLabels)).toBe(true);
    expect(selects(peers[0].podSelector.matchLabels, mlflowLabels)).toBe(false);
  });

  it('gives every replica the shared PostgreSQL store from a Secret (a mounted file, not a variable), and no store of its own', () => {
    const fg = of('Deployment', 'flowgate');
    const container = fg.spec.template.spec.containers.find((c: { name: string }) => c.name === 'flowgate');
    const names = container.env.map((e: { name: string }) => e.name);
    expect(names).not.toContain('FLOWGATE_DATABASE_URL');
    const { secret, key } = secretFileOf(fg, container, 'FLOWGATE_DATABASE_URL_FILE');
    expect(of('Secret', secret).stringData[key]).toMatch(/^postgres:\/\//);
    expect(names).not.toContain('FLOWGATE_DB_PATH');
    expect(JSON.stringify(fg.spec.template.spec.volumes ?? [])).not.toContain('emptyDir');
  });
});

describe('deploy/: credential placeholders can never work as credentials', () => {
  const secrets = () => unique(everyObject().filter((o) => o.kind === 'Secret'));
  const secret = (name: string) => secrets().find((o) => o.metadata.name === name)!;
  const configMapText = () => everyObject().find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'flowgate-inference-routes')!.data['routes.yaml'] as string;
  /** What flowgate reads at start, with the admin token from a file (as the overlays mount it) or a variable. */
  const start = (env: Record<string, string>, file?: string) =>
    loadConfig({ FLOWGATE_UPSTREAM_URL: 'http://127.0.0.1:5000', FLOWGATE_ADMIN_USERNAME: 'admin', ...env }, (path) => {
      if (file !== undefined && path === '/etc/flowgate/admin/token') return file;
      throw new Error(`no file ${path}`);
    });

  it('every Secret value under deploy/ is a placeholder to fill, marked <REPLACE-WITH…>', () => {
    const values = secrets().flatMap((s) => Object.entries(s.stringData ?? {}).map(([k, v]) => [`${s.metadata.name}/${k}`, String(v)] as const));
    expect(values.length).toBeGreaterThan(0);
    const filled = values.filter(([, v]) => !/<REPLACE[ -]WITH[^>]*>/.test(v) && !/^https?:\/\//.test(v) && !/^[a-z0-9-]+$/.test(v));
    expect(filled.map(([k]) => k), 'Secret values that look like real credentials').toEqual([]);
  });

  it('flowgate refuses the admin token placeholder, as a mounted file and as a variable', () => {
    const placeholder = secret('flowgate-admin').stringData.token as string;
    expect(placeholder).toMatch(/REPLACE/);
    // The placeholder is refused, not because the file is missing: a real token in its place starts.
    expect(start({ FLOWGATE_ADMIN_TOKEN_FILE: '/etc/flowgate/admin/token' }, 'fgt_' + 'a'.repeat(43)).admin?.token).toBe('fgt_' + 'a'.repeat(43));
    expect(() => start({ FLOWGATE_ADMIN_TOKEN_FILE: '/etc/flowgate/admin/token' }, placeholder)).toThrow(/FLOWGATE_ADMIN_TOKEN_FILE/);
    expect(() => start({ FLOWGATE_ADMIN_TOKEN_FILE: '/etc/flowgate/admin/token' }, `${placeholder}\n`)).toThrow(/FLOWGATE_ADMIN_TOKEN_FILE/);
    expect(() => start({ FLOWGATE_ADMIN_TOKEN: placeholder })).toThrow(/FLOWGATE_ADMIN_TOKEN/);
  });

  it('flowgate refuses every inference key placeholder, alone or in the example key file', () => {
    const text = secret('flowgate-inference-keys').stringData['keys.yaml'] as string;
    const file = parse(text) as { keys: Array<{ id: string; value?: string; sha256?: string }> };
    const placeholders = file.keys.filter((k) => k.value !== undefined);
    expect(placeholders.length).toBeGreaterThan(0);
    expect(() => parseKeyFile(text, 'keys.yaml')).toThrow();
    for (const key of placeholders) {
      expect(key.value, key.id).toMatch(/REPLACE/);
      // Each alone, as if every other key had been filled in.
      expect(() => parseKeyFile(JSON.stringify({ keys: [{ id: key.id, value: key.value }] }), 'keys.yaml'), key.id).toThrow(/must be 8 to 1024 visible ASCII/);
      expect(() => parseKeyList(key.value!), key.id).toThrow();
    }
    // Filled in, the same file is accepted, its scopes naming the example's routes: the placeholders are what is refused.
    const routes = parseInferenceConfig(configMapText(), 'routes.yaml').routes.map((r) => r.name);
    const filled = { keys: file.keys.map((k, i) => (k.value !== undefined ? { ...k, value: `k${i}-${'x'.repeat(40)}` } : k)) };
    expect(parseKeyFile(JSON.stringify(filled), 'keys.yaml', new Set(routes)).map((k) => k.id)).toEqual(file.keys.map((k) => k.id));
  });

  it('the example key digest is of no key anyone could guess', () => {
    const text = secret('flowgate-inference-keys').stringData['keys.yaml'] as string;
    const digests = (parse(text) as { keys: Array<{ sha256?: string }> }).keys.flatMap((k) => (k.sha256 ? [k.sha256.toLowerCase()] : []));
    expect(digests.length).toBeGreaterThan(0);
    const placeholders = secrets().flatMap((s) => Object.values(s.stringData ?? {}).map(String));
    const words = ['', 'test', 'testing', 'test123', 'password', 'secret', 'changeme', 'change-me', 'example', 'key', 'apikey', 'api-key', 'admin', 'foo', 'bar', 'foobar', 'hello', 'demo', '123456', '12345678', 'letmein', 'qwerty', 'team-b', 'team-b-2026-01', 'fraud', 'mlflow', 'flowgate'];
    const guesses = [...words, ...words.map((w) => w.toUpperCase()), ...words.map((w) => `${w}\n`), ...placeholders];
    for (const guess of guesses) expect(digests, JSON.stringify(guess)).not.toContain(createHash('sha256').update(guess).digest('hex'));
  });
});
