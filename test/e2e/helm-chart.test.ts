import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { SETTING_NAMES, loadConfig } from '../../src/config.js';
import { PERMISSIONS } from '../../src/resources/permissions.js';
import { CHART, helmBinary, helmLint, helmTemplate, helmTemplateRun } from '../helpers/helm.js';
import {
  KUBERNETES_VERSION,
  hasPublishedCrdSchema,
  kustomizeBuild,
  validateAgainstCrd,
  validateAgainstKubernetes,
  type K8sObject,
} from '../helpers/kustomize.js';

const DEPLOY = fileURLToPath(new URL('../../deploy/', import.meta.url));
const SHAPES = ['sidecar', 'ingress'] as const;
type Shape = (typeof SHAPES)[number];
const valuesFile = (shape: Shape) => join(CHART, `values-${shape}.yaml`);
const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8'));

type Container = { name: string; env: EnvVar[]; ports: Array<{ name: string; containerPort: number }>; [k: string]: any };
type EnvVar = { name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string } } };

/** Settings holding a credential: the chart may only ever take them from a Secret. */
const SECRET_SETTING = /^FLOWGATE_.*(TOKEN|SECRET|KEYS?|PASSWORD|DATABASE_URL)$/;
const SECRET_ENV = (name: string) => SECRET_SETTING.test(name) || ['MLFLOW_BACKEND_STORE_URI', 'AWS_SECRET_ACCESS_KEY'].includes(name);

let chart: Record<Shape, K8sObject[]>;
let kustomize: Record<Shape, K8sObject[]>;
let scratch: string;
beforeAll(() => {
  const started = Date.now();
  const helm = helmBinary();
  console.log(`helm: ${helm} (${((Date.now() - started) / 1000).toFixed(1)} s to build or find)`);
  chart = { sidecar: helmTemplate([valuesFile('sidecar')]), ingress: helmTemplate([valuesFile('ingress')]) };
  kustomize = { sidecar: kustomizeBuild(join(DEPLOY, 'overlays/sidecar')), ingress: kustomizeBuild(join(DEPLOY, 'overlays/ingress')) };
  scratch = mkdtempSync(join(tmpdir(), 'flowgate-helm-'));
}, 900_000);
afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** A values file in the scratch directory, for what `helm` must accept or refuse. */
let written = 0;
const values = (content: Record<string, unknown>) => {
  const file = join(scratch, `values-${++written}.yaml`);
  writeFileSync(file, stringify(content));
  return file;
};

const selects = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);
const deployments = (objects: K8sObject[]) => objects.filter((o) => o.kind === 'Deployment');
/** The Deployment whose pods run flowgate, and its flowgate container. */
function proxy(objects: K8sObject[]): { deployment: K8sObject; container: Container } {
  const [deployment, ...others] = deployments(objects).filter((d) => d.spec.template.spec.containers.some((c: Container) => c.name === 'flowgate'));
  expect(others).toEqual([]);
  return { deployment: deployment!, container: deployment!.spec.template.spec.containers.find((c: Container) => c.name === 'flowgate') };
}
const envOf = (c: Container) => Object.fromEntries(c.env.map((e) => [e.name, e]));
const valueOf = (c: Container) => Object.fromEntries(c.env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));
const mlflowContainer = (objects: K8sObject[]): { deployment: K8sObject; container: Container } => {
  const deployment = deployments(objects).find((d) => d.spec.template.spec.containers.some((c: Container) => c.name === 'mlflow'))!;
  return { deployment, container: deployment.spec.template.spec.containers.find((c: Container) => c.name === 'mlflow') };
};

/**
 * What flowgate would read in the pod: the container's variables, those from Secrets standing in
 * (a PostgreSQL URL, a client secret), and the mounted Secret files it is pointed at.
 */
function configFromPod(objects: K8sObject[], fromSecrets: Record<string, string> = {}) {
  const { container } = proxy(objects);
  const env: Record<string, string> = {};
  for (const e of container.env) env[e.name] = e.value ?? fromSecrets[e.name] ?? 'stand-in-secret';
  const files: Record<string, string> = {
    [env.FLOWGATE_DATABASE_URL_FILE ?? '']: fromSecrets.FLOWGATE_DATABASE_URL ?? 'postgres://flowgate:pw@db:5432/flowgate',
    [env.FLOWGATE_OIDC_CLIENT_SECRET_FILE ?? '']: fromSecrets.FLOWGATE_OIDC_CLIENT_SECRET ?? 'stand-in-secret',
    [env.FLOWGATE_ADMIN_TOKEN_FILE ?? '']: 'fgt_' + 'a'.repeat(43),
    [env.FLOWGATE_PAGE_TOKEN_KEY_FILE ?? '']: Buffer.alloc(32, 7).toString('base64'),
    [env.FLOWGATE_DATABASE_CA_FILE ?? '']: '-----BEGIN CERTIFICATE-----\n',
  };
  // Each file must be where a volume is mounted, or flowgate would not find it in the pod.
  for (const path of Object.keys(files).filter(Boolean)) expect(container.volumeMounts.some((m: { mountPath: string }) => path.startsWith(`${m.mountPath}/`)), path).toBe(true);
  return loadConfig(env, (path) => {
    if (path in files && path) return files[path]!;
    throw new Error(`no file ${path}`);
  });
}

describe('deploy/helm/flowgate: lint and render', () => {
  it('`helm lint --strict` passes with the defaults and with each shape’s values', () => {
    for (const file of [[], [valuesFile('sidecar')], [valuesFile('ingress')]]) {
      const r = helmLint(file);
      console.log(`helm lint --strict ${file[0]?.split('/').pop() ?? '(defaults)'}: ${r.stdout.trim().split('\n').pop()}`);
      expect(r.stderr + r.stdout, r.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
      expect(r.ok).toBe(true);
    }
  });

  it(`every rendered object is valid against Kubernetes ${KUBERNETES_VERSION}'s schemas (strict) or its published CRD`, async () => {
    for (const shape of SHAPES) {
      const objects = chart[shape];
      const verdicts = validateAgainstKubernetes(objects);
      const builtIn = verdicts.filter((v) => v.result !== 'no-schema');
      expect(verdicts.filter((v) => v.result === 'invalid')).toEqual([]);
      const custom = objects.filter((_, i) => verdicts[i]!.result === 'no-schema');
      for (const o of custom) expect(hasPublishedCrdSchema(o), `${o.apiVersion}/${o.kind}`).toBe(true);
      const crdVerdicts = await Promise.all(custom.map(validateAgainstCrd));
      expect(crdVerdicts.filter((v) => v.result !== 'valid')).toEqual([]);
      const all = [...builtIn, ...crdVerdicts];
      console.log(`helm template values-${shape}.yaml: ${all.length} of ${objects.length} objects valid (${[...new Set(all.map((v) => v.kind))].map((k) => `${k} ${all.filter((v) => v.kind === k).length}`).join(', ')})`);
      expect(all).toHaveLength(objects.length);
      for (const o of objects) expect(o.metadata.namespace, `${o.kind}/${o.metadata.name}`).toBe('mlflow');
    }
  });

  it.each(SHAPES)('%s: renders what the kustomize overlay does, with the same flowgate settings', (shape) => {
    const kinds = (objects: K8sObject[]) => new Set(objects.map((o) => o.kind));
    // The overlay's Secrets (and Namespace) are the operator's to create; the chart only names them.
    const wanted = [...kinds(kustomize[shape])].filter((k) => !['Secret', 'Namespace'].includes(k));
    expect([...kinds(chart[shape])]).toEqual(expect.arrayContaining(wanted));
    expect([...kinds(chart[shape])]).toEqual(expect.arrayContaining(['PodDisruptionBudget', 'NetworkPolicy', 'PodMonitor']));
    expect(deployments(chart[shape])).toHaveLength(deployments(kustomize[shape]).length);

    const theirs = proxy(kustomize[shape]).container;
    const ours = proxy(chart[shape]).container;
    const ourEnv = envOf(ours);
    for (const e of theirs.env) {
      if (e.name === 'FLOWGATE_UPSTREAM_URL' && shape === 'ingress') continue; // MLflow's Service is named for the release: checked below
      expect(ourEnv[e.name], e.name).toEqual(e);
    }
    expect(ours.ports).toEqual(theirs.ports);
    // Probes whole, timings included, both ways.
    expect(ours.readinessProbe).toEqual(theirs.readinessProbe);
    expect(ours.livenessProbe).toEqual(theirs.livenessProbe);
    expect(ours.startupProbe).toEqual(theirs.startupProbe);
    const mlflowProbes = (objects: K8sObject[]) => {
      const { startupProbe, livenessProbe } = mlflowContainer(objects).container;
      return { startupProbe, livenessProbe };
    };
    expect(mlflowProbes(chart[shape])).toEqual(mlflowProbes(kustomize[shape]));
    expect(ours.resources).toEqual(theirs.resources);
    // Security settings compared both ways: neither shape may run a weaker flowgate than the other.
    expect(ours.securityContext).toEqual(theirs.securityContext);
    const podOf = (objects: K8sObject[]) => proxy(objects).deployment.spec.template.spec;
    expect(podOf(chart[shape]).securityContext).toEqual(podOf(kustomize[shape]).securityContext);
    expect(podOf(chart[shape]).automountServiceAccountToken).toBe(false);
    expect(podOf(kustomize[shape]).automountServiceAccountToken).toBe(false);
    // The Secrets flowgate reads as files: the same volumes, mounted at the same places.
    const secretVolumes = (objects: K8sObject[]) => podOf(objects).volumes.filter((v: { secret?: unknown }) => v.secret);
    const secretNames = secretVolumes(kustomize[shape]).map((v: { name: string }) => v.name);
    expect(secretNames).toEqual(expect.arrayContaining(['admin-token', 'oidc-client-secret']));
    expect(secretVolumes(chart[shape])).toEqual(secretVolumes(kustomize[shape]));
    const mountsOf = (c: Container) => c.volumeMounts.filter((m: { name: string }) => secretNames.includes(m.name));
    expect(mountsOf(ours)).toEqual(mountsOf(theirs));
    expect(proxy(chart[shape]).deployment.spec.replicas).toBe(proxy(kustomize[shape]).deployment.spec.replicas);
    const mlflowArgs = (objects: K8sObject[]) => mlflowContainer(objects).container.args.filter((a: string) => !a.startsWith('--allowed-hosts='));
    expect(mlflowArgs(chart[shape])).toEqual(mlflowArgs(kustomize[shape]));
    expect(mlflowContainer(chart[shape]).deployment.spec.template.spec.initContainers).toEqual(
      mlflowContainer(kustomize[shape]).deployment.spec.template.spec.initContainers.map((c: Container) => expect.objectContaining(c)),
    );
  });
});

describe('deploy/helm/flowgate: secrets, security, probes, monitoring', () => {
  it.each(SHAPES)('%s: no secret in the output; every credential is a Secret the kustomize base defines, by name and key', (shape) => {
    const objects = chart[shape];
    expect(objects.map((o) => o.kind)).not.toContain('Secret');
    const text = JSON.stringify(objects);
    expect(text).not.toMatch(/"(stringData|data)":/);
    expect(text).not.toMatch(/postgres(ql)?:\/\/|REPLACE-WITH|fgt_/);
    const defined = [...kustomize.sidecar, ...kustomize.ingress].filter((o) => o.kind === 'Secret');
    const has = (name: string, key: string) => defined.some((s) => s.metadata.name === name && key in (s.stringData ?? s.data ?? {}));
    const pods = deployments(objects).map((d) => d.spec.template.spec);
    const containers: Container[] = pods.flatMap((p) => [...p.containers, ...(p.initContainers ?? [])]);
    const refs = containers.flatMap((c) => (c.env ?? []).filter((e) => e.valueFrom?.secretKeyRef).map((e) => e.valueFrom!.secretKeyRef));
    const volumes = pods.flatMap((p) => (p.volumes ?? []).filter((v: any) => v.secret).flatMap((v: any) => v.secret.items.map((i: { key: string }) => ({ name: v.secret.secretName, key: i.key }))));
    expect(refs.length).toBeGreaterThan(0);
    for (const { name, key } of [...refs, ...volumes]) expect(has(name, key), `${name}/${key}`).toBe(true);
    for (const c of containers)
      for (const e of c.env ?? [])
        if (SECRET_ENV(e.name)) {
          expect(e.value, `${c.name} ${e.name}`).toBeUndefined();
          expect(e.valueFrom?.secretKeyRef, `${c.name} ${e.name}`).toBeTruthy();
        }
    // The admin token is a file from a Secret mounted as a directory (rotations reach the pod), never a variable.
    const { container } = proxy(objects);
    expect(envOf(container).FLOWGATE_ADMIN_TOKEN).toBeUndefined();
    expect(container.volumeMounts.find((m: any) => m.name === 'admin-token')).toEqual({ name: 'admin-token', mountPath: '/etc/flowgate/admin', readOnly: true });
  });

  it.each(['chart sidecar', 'chart ingress', 'overlay sidecar', 'overlay ingress'])(
    '%s: flowgate’s database URL and OIDC client secret are files from read-only Secret mounts, never variables',
    (which) => {
      const [source, shape] = which.split(' ') as ['chart' | 'overlay', Shape];
      const objects = (source === 'chart' ? chart : kustomize)[shape];
      const { deployment, container } = proxy(objects);
      const env = envOf(container);
      const secrets = [...kustomize.sidecar, ...kustomize.ingress].filter((o) => o.kind === 'Secret');
      const settings = shape === 'ingress' ? ['FLOWGATE_DATABASE_URL', 'FLOWGATE_OIDC_CLIENT_SECRET'] : ['FLOWGATE_OIDC_CLIENT_SECRET'];
      for (const name of settings) {
        // In a variable, the secret would show in /proc/<pid>/environ and `kubectl exec … env`.
        expect(env[name], name).toBeUndefined();
        const path = env[`${name}_FILE`]?.value;
        expect(path, `${name}_FILE`).toMatch(/^\/etc\/flowgate\//);
        // A directory mount (no subPath), so a rotated Secret reaches the pod.
        const mount = container.volumeMounts.find((m: { mountPath: string }) => dirname(path!) === m.mountPath);
        expect(mount, path).toMatchObject({ readOnly: true });
        expect(mount.subPath).toBeUndefined();
        const volume = deployment.spec.template.spec.volumes.find((v: { name: string }) => v.name === mount.name);
        expect(volume.secret.defaultMode, mount.name).toBe(0o400);
        const item = volume.secret.items.find((i: { path: string }) => i.path === path!.slice(mount.mountPath.length + 1));
        const secret = secrets.find((o) => o.metadata.name === volume.secret.secretName)!;
        expect(Object.keys(secret.stringData), `${volume.secret.secretName}/${item?.key}`).toContain(item.key);
      }
      if (shape === 'sidecar') expect(env.FLOWGATE_DATABASE_URL_FILE).toBeUndefined();
      if (source === 'chart') {
        const config = configFromPod(objects);
        expect(config.oidc?.clientSecret).toBe('stand-in-secret');
        if (shape === 'ingress') expect(config.databaseUrl).toBe('postgres://flowgate:pw@db:5432/flowgate');
      }
    },
  );

  it('the schema names every flowgate setting holding a secret, and refuses it as a value', () => {
    const secretSettings = SETTING_NAMES.filter((n) => SECRET_SETTING.test(n));
    expect(secretSettings).toEqual(expect.arrayContaining(['FLOWGATE_DATABASE_URL', 'FLOWGATE_OIDC_CLIENT_SECRET', 'FLOWGATE_ADMIN_TOKEN']));
    const [secretRule] = schema.$defs.envVar.allOf;
    expect([...secretRule.if.properties.name.anyOf[0].enum].sort()).toEqual([...secretSettings].sort());
    expect(secretRule.then.properties.valueFrom.required).toEqual(['secretKeyRef']);
    expect(schema.properties.config.properties.defaultPermission.enum).toEqual([...PERMISSIONS]);
  });

  it.each(SHAPES)('%s: flowgate runs as a numbered non-root user, read-only, without privileges or a service-account token', (shape) => {
    const { deployment, container } = proxy(chart[shape]);
    const pod = deployment.spec.template.spec;
    expect(container.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      // The container's own: a pod's profile could be loosened apart from it.
      seccompProfile: { type: 'RuntimeDefault' },
    });
    // The image's USER is a name; the kubelet refuses runAsNonRoot for a named user unless runAsUser is a number.
    const user = /^USER\s+(\S+)/m.exec(readFileSync(fileURLToPath(new URL('../../Dockerfile', import.meta.url)), 'utf8'))![1]!;
    if (!/^\d+$/.test(user)) expect(Number.isInteger(container.securityContext.runAsUser) && container.securityContext.runAsUser > 0).toBe(true);
    expect(pod.securityContext).toEqual({ fsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.automountServiceAccountToken).toBe(false);
    // The one writable place is the SQLite store's directory; secrets are mounted read-only.
    for (const m of container.volumeMounts) if (m.mountPath !== '/var/lib/flowgate') expect(m.readOnly, m.mountPath).toBe(true);
  });

  /** Each container of each Deployment, with its pod's security context under its own. */
  const everyContainer = (objects: K8sObject[]) =>
    deployments(objects).flatMap((d) => {
      const pod = d.spec.template.spec;
      return [...(pod.initContainers ?? []), ...pod.containers].map((c: Container) => ({
        where: `${d.metadata.name}/${c.name}`,
        container: c,
        security: { ...(pod.securityContext ?? {}), ...(c.securityContext ?? {}) },
        volumes: pod.volumes ?? [],
      }));
    });

  it.each(SHAPES)('%s: every container, MLflow and its init container too, is non-root with no capability (chart and overlay)', (shape) => {
    const overlay = everyContainer(kustomize[shape]);
    const all = [...everyContainer(chart[shape]).map((c) => ({ ...c, where: `chart ${c.where}` })), ...overlay.map((c) => ({ ...c, where: `overlay ${c.where}` }))];
    expect(all.filter((c) => c.container.name.startsWith('mlflow')).length).toBe(4); // MLflow and mlflow-drivers, in each
    for (const { where, container, security, volumes } of all) {
      expect(security.runAsNonRoot, where).toBe(true);
      // MLflow's image runs as root: only a numbered user makes runAsNonRoot hold.
      expect(Number.isInteger(security.runAsUser) && security.runAsUser > 0, where).toBe(true);
      expect(security.allowPrivilegeEscalation, where).toBe(false);
      expect(security.privileged ?? false, where).toBe(false);
      expect(security.capabilities?.drop, where).toContain('ALL');
      expect(security.capabilities?.add ?? [], where).toEqual([]);
      expect(security.seccompProfile, where).toEqual({ type: 'RuntimeDefault' });
      if (container.name.startsWith('mlflow')) {
        // A user of its own, not flowgate's; the root filesystem read-only, /tmp (and HOME) on an emptyDir.
        expect(security.runAsUser, where).not.toBe(1000);
        expect(security.readOnlyRootFilesystem, where).toBe(true);
        const tmp = container.volumeMounts.find((m: { mountPath: string }) => m.mountPath === '/tmp');
        expect(volumes.find((v: { name: string }) => v.name === tmp?.name)?.emptyDir, where).toEqual({});
        expect(container.env.find((e: EnvVar) => e.name === 'HOME')?.value, where).toBe('/tmp');
      }
    }
  });

  it('the schema refuses MLflow as root or keeping a capability', () => {
    for (const [bad, message] of [
      [{ mlflow: { securityContext: { runAsNonRoot: false } } }, /mlflow\/securityContext/],
      [{ mlflow: { securityContext: { runAsNonRoot: true, runAsUser: 0, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } } } }, /runAsUser/],
      [{ mlflow: { securityContext: { runAsNonRoot: true, runAsUser: 10001, allowPrivilegeEscalation: false, capabilities: { drop: ['NET_ADMIN'] }, seccompProfile: { type: 'RuntimeDefault' } } } }, /capabilities/],
      // Helm merges values over the defaults: null removes one.
      [{ mlflow: { securityContext: { capabilities: null } } }, /mlflow\/securityContext/],
      [{ mlflow: { securityContext: { seccompProfile: null } } }, /mlflow\/securityContext/],
    ] as const) {
      const r = helmTemplateRun([valuesFile('sidecar'), values({ ...bad })]);
      expect(r.ok, JSON.stringify(bad)).toBe(false);
      expect(r.stderr).toMatch(message);
    }
  });

  it.each(['chart sidecar', 'chart ingress', 'overlay sidecar', 'overlay ingress'])('%s: probe timings outlast what flowgate allows itself, and a startup probe holds liveness off', (which) => {
    const [source, shape] = which.split(' ') as ['chart' | 'overlay', Shape];
    const objects = (source === 'chart' ? chart : kustomize)[shape];
    const { container } = proxy(objects);
    // /readyz gives MLflow and the store 2 s each before answering unready: the kubelet must wait longer (its default is 1 s).
    expect(container.readinessProbe.timeoutSeconds).toBeGreaterThanOrEqual(3);
    expect(container.livenessProbe.timeoutSeconds).toBeGreaterThanOrEqual(3);
    expect(container.startupProbe).toMatchObject({ httpGet: container.livenessProbe.httpGet, failureThreshold: 30, periodSeconds: 10 });
    expect(container.startupProbe.timeoutSeconds).toBeGreaterThanOrEqual(3);
    // MLflow: probed from inside its container (loopback in the sidecar shape), at its port and prefix.
    const mlflow = mlflowContainer(objects).container;
    const arg = (name: string) => mlflow.args.find((a: string) => a.startsWith(`--${name}=`))?.split('=')[1] ?? '';
    const url = `http://127.0.0.1:${arg('port')}${arg('static-prefix')}/health`;
    for (const probe of [mlflow.startupProbe, mlflow.livenessProbe]) {
      expect(probe.exec.command).toEqual(['python', '-c', `import urllib.request; urllib.request.urlopen('${url}', timeout=4)`]);
      expect(probe.timeoutSeconds).toBeGreaterThan(4);
    }
    expect(mlflow.startupProbe.failureThreshold * mlflow.startupProbe.periodSeconds).toBeGreaterThanOrEqual(300);
    expect(validateAgainstKubernetes(deployments(objects)).map((v) => v.result)).toEqual(deployments(objects).map(() => 'valid'));
  });

  it('MLflow’s probe follows its port and static prefix', () => {
    const mlflow = mlflowContainer(helmTemplate([valuesFile('sidecar'), values({ mlflow: { port: 5001, staticPrefix: '' } })])).container;
    expect(mlflow.livenessProbe.exec.command[2]).toContain("'http://127.0.0.1:5001/health'");
  });

  it('the schema refuses a readiness timeout within flowgate’s own 2 s', () => {
    for (const timeoutSeconds of [1, 2]) {
      const r = helmTemplateRun([valuesFile('sidecar'), values({ probes: { readiness: { timeoutSeconds } } })]);
      expect(r.ok).toBe(false);
      expect(r.stderr).toMatch(/probes\/readiness\/timeoutSeconds/);
    }
  });

  it.each([
    ['sidecar', [], '/mlflow'],
    ['ingress', [], '/mlflow'],
    ['sidecar', ['config.basePath=', 'oidc.enabled=false'], ''],
  ] as const)('%s %j: probes call flowgate’s /readyz and /healthz under the base path, on its public port', (shape, set, base) => {
    const objects = set.length ? helmTemplate([valuesFile(shape)], [...set]) : chart[shape];
    const { container } = proxy(objects);
    expect(container.readinessProbe.httpGet).toEqual({ path: `${base}/readyz`, port: 'http' });
    expect(container.livenessProbe.httpGet).toEqual({ path: `${base}/healthz`, port: 'http' });
    expect(container.startupProbe.httpGet).toEqual({ path: `${base}/healthz`, port: 'http' });
    const http = container.ports.find((p) => p.name === 'http')!;
    expect(String(http.containerPort)).toBe(valueOf(container).FLOWGATE_PORT);
    expect(configFromPod(objects).basePath).toBe(base);
  });

  it.each(SHAPES)('%s: the PodDisruptionBudget, NetworkPolicy and PodMonitor each select flowgate’s pods', (shape) => {
    const objects = chart[shape];
    const { deployment, container } = proxy(objects);
    const labels = deployment.spec.template.metadata.labels;
    const one = (kind: string) => {
      const found = objects.filter((o) => o.kind === kind && selects(o.spec.selector?.matchLabels ?? o.spec.podSelector.matchLabels, labels));
      expect(found, kind).toHaveLength(1);
      return found[0]!;
    };
    const pdb = one('PodDisruptionBudget');
    // Ingress: two of three replicas stay up through a drain. Sidecar: the lone pod may go (a budget
    // keeping it would block every node drain), the policy store waiting on its claim.
    expect(deployment.spec.replicas - pdb.spec.maxUnavailable).toBe(shape === 'ingress' ? 2 : 0);
    // A pod that is not ready never holds up a drain.
    expect(pdb.spec.unhealthyPodEvictionPolicy).toBe('AlwaysAllow');

    const policy = one('NetworkPolicy');
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    const ports = policy.spec.ingress.flatMap((r: { ports: Array<{ port: string }> }) => r.ports.map((p) => p.port));
    expect(ports.sort()).toEqual(['http', 'metrics']);

    const monitor = one('PodMonitor');
    const [endpoint] = monitor.spec.podMetricsEndpoints;
    expect(endpoint).toMatchObject({ port: 'metrics', path: '/metrics' });
    const metrics = container.ports.find((p) => p.name === endpoint.port)!;
    expect(String(metrics.containerPort)).toBe(valueOf(container).FLOWGATE_METRICS_PORT);
    expect(deployment.spec.template.metadata.annotations).toMatchObject({ 'prometheus.io/port': String(metrics.containerPort), 'prometheus.io/path': '/metrics' });
    const rules = readFileSync(join(DEPLOY, 'prometheus/flowgate-rules.yml'), 'utf8');
    const jobPattern = /up\{job=~"([^"]+)"\}/.exec(rules)![1]!;
    for (const release of ['flowgate', 'ml']) {
      const m = helmTemplate([valuesFile(shape)], [], release).find((o) => o.kind === 'PodMonitor')!;
      expect(new RegExp(`^(?:${jobPattern})$`).test(`${m.metadata.namespace}/${m.metadata.name}`), m.metadata.name).toBe(true);
    }
  });
});

describe('metrics port: only Prometheus may scrape it (chart and overlays)', () => {
  /** The labels the Prometheus Operator gives the pods of a Prometheus it runs (here one named k8s in namespace monitoring). */
  const operatorPrometheus = { 'app.kubernetes.io/name': 'prometheus', 'app.kubernetes.io/managed-by': 'prometheus-operator', 'app.kubernetes.io/instance': 'k8s', 'operator.prometheus.io/name': 'k8s', prometheus: 'k8s' };
  const admits = (peer: any, pod: Record<string, string>, namespace: Record<string, string>) =>
    peer.podSelector !== undefined &&
    selects(peer.podSelector.matchLabels ?? {}, pod) &&
    (peer.namespaceSelector === undefined ? false : selects(peer.namespaceSelector.matchLabels ?? {}, namespace));

  it.each(['chart sidecar', 'chart ingress', 'overlay sidecar', 'overlay ingress'])('%s: the metrics port admits the Operator’s Prometheus and no other pod', (which) => {
    const [source, shape] = which.split(' ') as ['chart' | 'overlay', Shape];
    const objects = (source === 'chart' ? chart : kustomize)[shape];
    const { deployment } = proxy(objects);
    const labels = deployment.spec.template.metadata.labels;
    const policies = objects.filter((o) => o.kind === 'NetworkPolicy' && selects(o.spec.podSelector.matchLabels, labels));
    expect(policies.length, 'a NetworkPolicy on flowgate’s pods').toBeGreaterThan(0);
    const rules = policies.flatMap((p) => p.spec.ingress).filter((r: any) => r.ports === undefined || r.ports.some((p: { port: string }) => p.port === 'metrics'));
    expect(rules.length).toBeGreaterThan(0);
    for (const rule of rules) {
      // Not open to everyone: each peer names pods by label, never every pod of every namespace.
      expect(rule.from?.length, JSON.stringify(rule)).toBeGreaterThan(0);
      for (const peer of rule.from) expect(Object.keys(peer.podSelector?.matchLabels ?? {}).length, JSON.stringify(peer)).toBeGreaterThan(0);
    }
    const peers = rules.flatMap((r: any) => r.from);
    expect(peers.some((p: any) => admits(p, operatorPrometheus, { 'kubernetes.io/metadata.name': 'monitoring' }))).toBe(true);
    expect(peers.some((p: any) => admits(p, { app: 'notebook' }, { 'kubernetes.io/metadata.name': 'team-a' }))).toBe(false);
  });
});

describe('deploy/helm/flowgate: the two shapes', () => {
  const of = (shape: Shape, kind: string, name: string) => chart[shape].find((o) => o.kind === kind && o.metadata.name === name)!;

  it('ingress: replicas spread across nodes on the shared PostgreSQL store, the URL from a Secret, no store of their own', () => {
    const { deployment, container } = proxy(chart.ingress);
    expect(deployment.metadata.name).toBe('flowgate');
    expect(deployment.spec.replicas).toBe(3);
    const labels = deployment.spec.template.metadata.labels;
    const spread = deployment.spec.template.spec.topologySpreadConstraints.find((c: { topologyKey: string }) => c.topologyKey === 'kubernetes.io/hostname');
    expect(spread).toMatchObject({ maxSkew: 1, whenUnsatisfiable: 'DoNotSchedule' });
    expect(selects(spread.labelSelector.matchLabels, labels)).toBe(true);
    const env = envOf(container);
    expect(env.FLOWGATE_DATABASE_URL_FILE).toEqual({ name: 'FLOWGATE_DATABASE_URL_FILE', value: '/etc/flowgate/postgres/url' });
    const urlVolume = deployment.spec.template.spec.volumes.find((v: { name: string }) => v.name === 'postgres-url');
    expect(urlVolume.secret).toEqual({ secretName: 'flowgate-postgres', defaultMode: 0o400, items: [{ key: 'url', path: 'url' }] });
    expect(env.FLOWGATE_DB_PATH).toBeUndefined();
    expect(chart.ingress.map((o) => o.kind)).not.toContain('PersistentVolumeClaim');
    expect(deployment.spec.template.spec.volumes.map((v: { name: string }) => v.name)).toEqual(['admin-token', 'postgres-url', 'oidc-client-secret']);
    expect(deployment.spec.strategy).toBeUndefined(); // rolling: replicas replace one another
    const config = configFromPod(chart.ingress);
    expect(config.databaseUrl).toMatch(/^postgres:\/\//);
    expect(config.postgres.poolSize).toBe(10);
  });

  it('ingress: Ingress → Service → flowgate, and flowgate → MLflow’s Service, which only flowgate may reach', () => {
    const { deployment, container } = proxy(chart.ingress);
    const env = valueOf(container);
    const ingress = of('ingress', 'Ingress', 'flowgate');
    const rule = ingress.spec.rules[0];
    expect(new URL(env.FLOWGATE_OIDC_REDIRECT_URL!).host).toBe(rule.host);
    expect(ingress.spec.tls[0].hosts).toContain(rule.host);
    const path = rule.http.paths[0];
    expect(path.path).toBe(env.FLOWGATE_BASE_PATH);
    const service = of('ingress', 'Service', path.backend.service.name);
    expect(selects(service.spec.selector, deployment.spec.template.metadata.labels)).toBe(true);
    expect(service.spec.ports.map((p: { targetPort: string }) => p.targetPort)).toEqual(['http']);

    const upstream = new URL(env.FLOWGATE_UPSTREAM_URL!);
    const [svcName, namespace, svc] = upstream.hostname.split('.');
    expect(svc).toBe('svc');
    const mlflowService = of('ingress', 'Service', svcName!);
    expect(mlflowService.metadata.namespace).toBe(namespace);
    const mlflowPort = mlflowService.spec.ports.find((p: { port: number }) => p.port === Number(upstream.port));
    const mlflow = mlflowContainer(chart.ingress);
    expect(mlflow.container.ports.find((p) => p.name === mlflowPort.targetPort)!.containerPort).toBe(5000);
    expect(mlflow.container.args).toEqual(expect.arrayContaining(['--host=0.0.0.0', `--allowed-hosts=${upstream.host}`]));
    const mlflowLabels = mlflow.deployment.spec.template.metadata.labels;
    expect(selects(mlflowService.spec.selector, mlflowLabels)).toBe(true);

    const guards = chart.ingress.filter((o) => o.kind === 'NetworkPolicy' && selects(o.spec.podSelector.matchLabels, mlflowLabels));
    expect(guards).toHaveLength(1);
    const peers = guards[0]!.spec.ingress.flatMap((r: { from?: unknown[] }) => r.from ?? [{ everyone: true }]);
    expect(peers).toHaveLength(1);
    expect(Object.keys(peers[0])).toEqual(['podSelector']);
    expect(selects(peers[0].podSelector.matchLabels, deployment.spec.template.metadata.labels)).toBe(true);
    expect(selects(peers[0].podSelector.matchLabels, mlflowLabels)).toBe(false);
  });

  it('ingress with networkPolicy.enabled=false: MLflow (listening on 0.0.0.0) is still closed to every pod but flowgate’s', () => {
    const objects = helmTemplate([valuesFile('ingress'), values({ networkPolicy: { enabled: false } })]);
    const { deployment } = proxy(objects);
    const mlflow = mlflowContainer(objects);
    expect(mlflow.container.args).toContain('--host=0.0.0.0');
    const mlflowLabels = mlflow.deployment.spec.template.metadata.labels;
    const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
    // The switch turns off flowgate's own policy only.
    expect(policies.filter((o) => selects(o.spec.podSelector.matchLabels, deployment.spec.template.metadata.labels))).toEqual([]);
    const guards = policies.filter((o) => selects(o.spec.podSelector.matchLabels, mlflowLabels));
    expect(guards).toHaveLength(1);
    expect(guards[0]!.spec.policyTypes).toEqual(['Ingress']);
    const peers = guards[0]!.spec.ingress.flatMap((r: { from?: unknown[] }) => r.from ?? [{ everyone: true }]);
    expect(peers).toHaveLength(1);
    expect(Object.keys(peers[0])).toEqual(['podSelector']);
    expect(selects(peers[0].podSelector.matchLabels, deployment.spec.template.metadata.labels)).toBe(true);
    expect(validateAgainstKubernetes(guards).map((v) => v.result)).toEqual(['valid']);
  });

  it('sidecar: flowgate in MLflow’s pod, MLflow on loopback, one replica on a SQLite file kept on a claim', () => {
    const { deployment, container } = proxy(chart.sidecar);
    expect(deployment.spec.template.spec.containers.map((c: Container) => c.name)).toEqual(['mlflow', 'flowgate']);
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.strategy).toEqual({ type: 'Recreate' });
    const mlflow = mlflowContainer(chart.sidecar).container;
    expect(mlflow.args).toEqual(expect.arrayContaining(['--host=127.0.0.1', '--allowed-hosts=127.0.0.1:5000']));
    expect(mlflow.ports).toBeUndefined();
    const env = valueOf(container);
    expect(env.FLOWGATE_UPSTREAM_URL).toBe('http://127.0.0.1:5000');
    const store = container.volumeMounts.find((m: { mountPath: string }) => m.mountPath === dirname(env.FLOWGATE_DB_PATH!));
    const volume = deployment.spec.template.spec.volumes.find((v: { name: string }) => v.name === store.name);
    const claim = of('sidecar', 'PersistentVolumeClaim', volume.persistentVolumeClaim.claimName);
    expect(claim.metadata.annotations).toEqual({ 'helm.sh/resource-policy': 'keep' });
    expect(claim.spec.accessModes).toEqual(['ReadWriteOnce']);
    // The one Service exposes flowgate's port: MLflow's is on loopback, and metrics stay for Prometheus.
    const services = chart.sidecar.filter((o) => o.kind === 'Service');
    expect(services).toHaveLength(1);
    expect(services[0]!.spec.ports.map((p: { targetPort: string }) => p.targetPort)).toEqual(['http']);
    expect(selects(services[0]!.spec.selector, deployment.spec.template.metadata.labels)).toBe(true);
    expect(configFromPod(chart.sidecar).dbPath).toBe('/var/lib/flowgate/flowgate.db');
  });

  it('the typed values reach flowgate as settings its own configuration accepts', () => {
    const objects = helmTemplate([
      valuesFile('ingress'),
      values({
        config: { defaultPermission: 'READ', createRequiresAdmin: true, logLevel: 'debug', maxBodyBytes: 4194304, lookupCacheTtlMs: 0, session: { idleMinutes: 30, absoluteHours: 8, cookieSecure: true } },
        oidc: { allowedRoles: ['ml-users', 'ml-admins'], usernameClaim: 'email', insecureAllowUnverifiedEmail: true },
        store: { postgres: { poolSize: 25, statementTimeoutMs: 2000, caSecret: { name: 'postgres-ca', key: 'ca.crt' } } },
        pageTokenKeySecret: { name: 'flowgate-page-token', key: 'key' },
        inference: { enabled: true },
        extraEnv: [
          { name: 'FLOWGATE_STORE_WATCH_MS', value: '500' },
          { name: 'FLOWGATE_INFERENCE_API_KEYS', valueFrom: { secretKeyRef: { name: 'flowgate-inference-keys', key: 'keys' } } },
        ],
      }),
    ]);
    const config = configFromPod(objects);
    expect(config).toMatchObject({
      defaultPermission: 'READ',
      createRequiresAdmin: true,
      logLevel: 'debug',
      maxBodyBytes: 4194304, // not 4.194304e+06: numbers are rendered as integers
      lookupCacheTtlMs: 0,
      storeWatchMs: 500,
      session: { idleMinutes: 30, absoluteHours: 8, cookieSecure: true },
      postgres: { poolSize: 25, statementTimeoutMs: 2000, caCertificate: expect.stringContaining('CERTIFICATE') },
      admin: { username: 'mlflow-admin' },
    });
    expect(config.oidc).toMatchObject({ allowedRoles: ['ml-users', 'ml-admins'], usernameClaim: 'email', allowUnverifiedEmail: true, groupsClaim: 'realm_access.roles', clientSecret: 'stand-in-secret' });
    expect(config.pageTokenKeys.current).toHaveLength(32);
    expect(config.inferenceApiKeys).toBe('stand-in-secret');
  });
});

describe('deploy/helm/flowgate: bearer issuers', () => {
  /** An identity provider's machine clients and a cluster whose keys come from a ConfigMap (docs/machine-identity.md). */
  const issuers = [
    { issuer: 'https://keycloak.example.com/realms/ml', audience: 'mlflow', service_accounts: true, username_claim: ['client_id', 'azp'], groups_claim: 'realm_access.roles', required_groups: ['ml-pipelines'], insecure_allow_unverified_email: true },
    {
      kind: 'kubernetes',
      issuer: 'https://kubernetes.default.svc.cluster.local',
      audience: ['mlflow', 'https://ml.example.com'],
      jwks_file: '/etc/flowgate/bearer-keys/cluster-jwks.json',
      namespace_group: null,
      jwks_cooldown_seconds: 60,
      jwks_max_age_seconds: 86400,
    },
  ];
  const bearer = { bearer: { issuers, clockSkewSeconds: 10, maxTokenBytes: 16384, jwksConfigMap: { name: 'cluster-jwks' } } };

  it.each(SHAPES)('%s: the issuers reach flowgate as the FLOWGATE_BEARER_ISSUERS it accepts, the cluster keys mounted from a ConfigMap', (shape) => {
    const file = values(bearer);
    const lint = helmLint([valuesFile(shape), file]);
    expect(lint.ok, lint.stdout + lint.stderr).toBe(true);
    const objects = helmTemplate([valuesFile(shape), file]);
    const verdicts = validateAgainstKubernetes(objects);
    expect(verdicts.filter((v) => v.result === 'invalid')).toEqual([]);
    const config = configFromPod(objects);
    expect(config.bearer).toMatchObject({ clockSkewSeconds: 10, maxTokenBytes: 16384 });
    // Each issuer as given, with flowgate's defaults for what was left out (a null kept a null, numbers stayed integers).
    expect(config.bearer!.issuers).toEqual([
      expect.objectContaining({ ...issuers[0], kind: 'oidc', audience: ['mlflow'], algorithms: ['RS256'] }),
      expect.objectContaining({ ...issuers[1], username_template: 'k8s.{namespace}.{name}' }),
    ]);
    const { deployment, container } = proxy(objects);
    const mount = container.volumeMounts.find((m: { mountPath: string }) => issuers[1]!.jwks_file!.startsWith(`${m.mountPath}/`));
    expect(mount).toMatchObject({ readOnly: true });
    const volume = deployment.spec.template.spec.volumes.find((v: { name: string }) => v.name === mount.name);
    expect(volume.configMap).toEqual({ name: 'cluster-jwks' });
    // Nothing about bearer tokens is rendered without issuers.
    expect(Object.keys(envOf(proxy(chart[shape]).container)).filter((n) => n.startsWith('FLOWGATE_BEARER_'))).toEqual([]);
  });

  it.each([
    ['an HMAC algorithm', [{ issuer: 'https://idp.example.com', audience: 'mlflow', algorithms: ['HS256'] }], /bearer\/issuers\/0\/algorithms/],
    ['a key spelt as the chart spells its own', [{ issuer: 'https://idp.example.com', audience: 'mlflow', usernameClaim: 'azp' }], /usernameClaim/],
    ['no audience', [{ issuer: 'https://idp.example.com' }], /audience/],
    ['a name claim on a cluster', [{ kind: 'kubernetes', issuer: 'https://k8s.example.com', audience: 'mlflow', username_claim: 'sub' }], /bearer\/issuers\/0\/username_claim/],
    ['unverified addresses on a cluster', [{ kind: 'kubernetes', issuer: 'https://k8s.example.com', audience: 'mlflow', insecure_allow_unverified_email: true }], /bearer\/issuers\/0\/insecure_allow_unverified_email/],
    ['both a JWKS URL and file', [{ issuer: 'https://idp.example.com', audience: 'mlflow', jwks_url: 'https://idp.example.com/keys', jwks_file: '/etc/flowgate/bearer-keys/k.json' }], /bearer\/issuers\/0/],
    ['a plain-http JWKS URL off loopback', [{ issuer: 'https://idp.example.com', audience: 'mlflow', jwks_url: 'http://idp.example.com/keys' }], /bearer\/issuers\/0\/jwks_url/],
    ['a plain-http JWKS URL on a name that starts like loopback', [{ issuer: 'https://idp.example.com', audience: 'mlflow', jwks_url: 'http://127.0.0.1.evil.example/keys' }], /bearer\/issuers\/0\/jwks_url/],
    ['a plain-http issuer whose keys come from discovery', [{ issuer: 'http://idp.example.com', audience: 'mlflow' }], /bearer\/issuers\/0\/issuer/],
  ])('%s: helm lint and helm template refuse it, saying where', (_, bad, message) => {
    const file = values({ bearer: { issuers: bad } });
    const lint = helmLint([valuesFile('sidecar'), file]);
    const template = helmTemplateRun([valuesFile('sidecar'), file]);
    expect(lint.ok).toBe(false);
    expect(template.ok).toBe(false);
    expect(lint.stdout + lint.stderr).toMatch(message);
    expect(template.stderr).toMatch(message);
  });

  it('a jwks_file in no mounted volume: helm template refuses it, naming the issuer', () => {
    const file = values({ bearer: { issuers: [{ kind: 'kubernetes', issuer: 'https://k8s.example.com', audience: 'mlflow', jwks_file: '/etc/flowgate/bearer-keys/k.json' }] } });
    const template = helmTemplateRun([valuesFile('sidecar'), file]);
    expect(template.ok).toBe(false);
    expect(template.stderr).toMatch(/bearer\.issuers\[0\]\.jwks_file: \/etc\/flowgate\/bearer-keys\/k\.json is in no mounted volume/);
    // Mounted by the release's own extra volume instead: accepted.
    const mounted = values({
      bearer: { issuers: [{ kind: 'kubernetes', issuer: 'https://k8s.example.com', audience: 'mlflow', jwks_file: '/etc/cluster/jwks.json' }] },
      extraVolumes: [{ name: 'cluster', configMap: { name: 'cluster-jwks' } }],
      extraVolumeMounts: [{ name: 'cluster', mountPath: '/etc/cluster', readOnly: true }],
    });
    expect(configFromPod(helmTemplate([valuesFile('sidecar'), mounted])).bearer!.issuers[0]).toMatchObject({ jwks_file: '/etc/cluster/jwks.json' });
  });
});

describe('deploy/helm/flowgate: the other switches', () => {
  it.each([
    ['ingress mode on one SQLite replica', 'ingress', { replicas: 1, store: { type: 'sqlite' } }],
    ['sidecar with an Ingress, an existing claim, no drivers, no PodMonitor', 'sidecar', { ingress: { enabled: true, tlsSecretName: 'tls' }, store: { sqlite: { existingClaim: 'my-store' } }, mlflow: { drivers: [] }, metrics: { podMonitor: { enabled: false } } }],
    ['inference and a page-token key', 'ingress', { inference: { enabled: true }, pageTokenKeySecret: { name: 'flowgate-page-token' } }],
    ['no NetworkPolicy, no budget, no admin, no OIDC', 'sidecar', { networkPolicy: { enabled: false }, podDisruptionBudget: { enabled: false }, admin: { enabled: false }, oidc: { enabled: false } }],
  ] as const)('%s: valid objects, settings flowgate accepts', (_, shape, extra) => {
    const objects = helmTemplate([valuesFile(shape), values(extra)]);
    const verdicts = validateAgainstKubernetes(objects);
    expect(verdicts.filter((v) => v.result === 'invalid')).toEqual([]);
    expect(objects.filter((_, i) => verdicts[i]!.result === 'no-schema').map((o) => o.kind)).toEqual(objects.some((o) => o.kind === 'PodMonitor') ? ['PodMonitor'] : []);
    const config = configFromPod(objects);
    const { deployment, container } = proxy(objects);
    const volumes = deployment.spec.template.spec.volumes ?? [];
    // Every mount has its volume, and a SQLite store is on a claim the release has or was given.
    for (const m of container.volumeMounts) expect(volumes.map((v: { name: string }) => v.name), m.name).toContain(m.name);
    const claim = volumes.find((v: any) => v.persistentVolumeClaim)?.persistentVolumeClaim.claimName;
    if (config.databaseUrl === undefined) expect(objects.some((o) => o.kind === 'PersistentVolumeClaim' && o.metadata.name === claim) || claim === 'my-store', claim).toBe(true);
    if (config.inferenceConfigFile) {
      const routes = volumes.find((v: any) => v.configMap);
      expect(config.inferenceConfigFile).toBe(`${container.volumeMounts.find((m: any) => m.name === routes.name).mountPath}/routes.yaml`);
      expect(container.volumeMounts.find((m: any) => m.name === 'inference-keys').mountPath).toBe('/var/run/flowgate/inference-keys');
    }
  });
});

describe('deploy/helm/flowgate: values the chart refuses', () => {
  const base = () => valuesFile('sidecar');
  it.each([
    ['a misspelt mode', { mode: 'sidecarr' }, /mode/],
    ['replicas on the one-writer SQLite store', { replicas: 3 }, /replicas/],
    ['a base path without its leading slash', { config: { basePath: 'mlflow' } }, /basePath/],
    ['a misspelt setting', { config: { bsePath: '/mlflow' } }, /bsePath/],
    ['a permission flowgate does not have', { config: { defaultPermission: 'ALL' } }, /defaultPermission/],
    ['a pool larger than flowgate allows', { store: { type: 'postgres', postgres: { poolSize: 500 } } }, /poolSize/],
    ['the OIDC client secret as a value', { oidc: { clientSecret: 'hunter2-client-secret' } }, /clientSecret/],
    ['a database URL with its password as a value', { extraEnv: [{ name: 'FLOWGATE_DATABASE_URL', value: 'postgres://flowgate:hunter2-db@db/flowgate' }] }, /extraEnv/],
    ['a writable root filesystem', { securityContext: { readOnlyRootFilesystem: false } }, /readOnlyRootFilesystem/],
    ['a capability kept', { securityContext: { capabilities: { drop: ['NET_RAW'] } } }, /capabilities/],
    ['OIDC without an issuer', { oidc: { issuerUrl: '' } }, /issuerUrl/],
    ['a redirect URL off flowgate’s callback path', { oidc: { redirectUrl: 'https://ml.example.com/callback' } }, /oidc\/redirectUrl/],
    ['shadow mode without the bootstrap admin', { config: { enforce: false }, admin: { enabled: false } }, /admin\/enabled/],
    ['a disruption budget of 0 pods (blocks every drain)', { podDisruptionBudget: { maxUnavailable: 0 } }, /maxUnavailable/],
    ['a disruption budget of 0%', { podDisruptionBudget: { maxUnavailable: '0%' } }, /maxUnavailable/],
    ['a disruption budget of 00%', { podDisruptionBudget: { maxUnavailable: '00%' } }, /maxUnavailable/],
    ['a disruption budget over 100%', { podDisruptionBudget: { maxUnavailable: '150%' } }, /maxUnavailable/],
    ['no peer for the metrics port (a rule without `from` admits every pod)', { networkPolicy: { metricsFrom: [] } }, /networkPolicy\/metricsFrom/],
    ['an empty peer for the metrics port', { networkPolicy: { metricsFrom: [{}] } }, /networkPolicy\/metricsFrom\/0/],
    ['an unconfined seccomp profile for flowgate’s pod', { podSecurityContext: { seccompProfile: { type: 'Unconfined' } } }, /podSecurityContext\/seccompProfile\/type/],
    ['an unconfined seccomp profile for flowgate’s container', { securityContext: { seccompProfile: { type: 'Unconfined' } } }, /securityContext\/seccompProfile\/type/],
    ['flowgate’s container without its seccomp profile', { securityContext: { seccompProfile: null } }, /securityContext.*seccompProfile/],
    ['an object store secret as a value in mlflow.env', { mlflow: { env: [{ name: 'AWS_SECRET_ACCESS_KEY', value: 'hunter2-inlined' }] } }, /mlflow\/env\/0/],
    ['a token as a value in mlflow.env, whatever its case', { mlflow: { env: [{ name: 'mlflow_tracking_token', value: 'hunter2-token' }] } }, /mlflow\/env\/0/],
    ['MLflow’s backend store URI as a value in mlflow.env', { mlflow: { env: [{ name: 'MLFLOW_BACKEND_STORE_URI', value: 'postgresql://mlflow@db/mlflow?password=hunter2-db' }] } }, /mlflow\/env\/0/],
    ['a URL with its password in mlflow.env', { mlflow: { env: [{ name: 'MLFLOW_S3_ENDPOINT_URL', value: 'https://minio:hunter2-pw@minio.example.com' }] } }, /mlflow\/env\/0\/value/],
    ['a credential from a ConfigMap in mlflow.env', { mlflow: { env: [{ name: 'AWS_SECRET_ACCESS_KEY', valueFrom: { configMapKeyRef: { name: 'store', key: 'key' } } }] } }, /mlflow\/env\/0/],
  ])('%s: helm lint and helm template both refuse it, saying which value', (_, bad, message) => {
    const file = values(bad);
    const lint = helmLint([base(), file]);
    const template = helmTemplateRun([base(), file]);
    expect(lint.ok).toBe(false);
    expect(template.ok).toBe(false);
    expect(lint.stdout + lint.stderr).toMatch(message);
    expect(template.stderr).toMatch(message);
    expect(template.stdout).toBe('');
    // Refusing a secret must not print it back.
    expect(lint.stdout + lint.stderr + template.stderr).not.toContain('hunter2');
  });

  it('mlflow.env takes plain settings, paths to credential files, and credentials from a Secret', () => {
    const env = [
      { name: 'MLFLOW_S3_ENDPOINT_URL', value: 'https://minio.example.com:9000' },
      { name: 'GOOGLE_APPLICATION_CREDENTIALS', value: '/var/secrets/gcs/key.json' },
      { name: 'AZURE_STORAGE_ACCESS_KEY', valueFrom: { secretKeyRef: { name: 'mlflow-backend', key: 'azure-key' } } },
    ];
    const file = values({ mlflow: { env } });
    expect(helmLint([base(), file]).ok).toBe(true);
    const { container } = mlflowContainer(helmTemplate([base(), file]));
    for (const e of env) expect(envOf(container)[e.name], e.name).toEqual(e);
  });

  it('metrics open to every pod is refused even when the schema is skipped', () => {
    const r = spawnSync(helmBinary(), ['template', 'flowgate', CHART, '--skip-schema-validation', '-f', base(), '--set-json', 'networkPolicy.metricsFrom=[]'], { encoding: 'utf8' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('networkPolicy.metricsFrom: name at least one peer');
  });

  // Rules spanning two values the schema cannot state: the templates `fail`, which `helm template` and
  // `helm install` report; `helm lint` renders in its lint mode, where `fail` is only logged.
  it.each([
    ['a redirect URL outside the base path', { oidc: { redirectUrl: 'https://ml.example.com/other/flowgate/callback' } }, /oidc\.redirectUrl: its path must be \/mlflow\/flowgate\/callback/],
    ['metrics on the public port', { config: { metricsPort: 8080 } }, /config\.metricsPort: must differ from config\.port/],
    ['a plain-http redirect with Secure cookies', { oidc: { redirectUrl: 'http://ml.example.com/mlflow/flowgate/callback' } }, /oidc\.redirectUrl: is plain http/],
  ])('%s: helm template refuses it, saying which value', (_, bad, message) => {
    const template = helmTemplateRun([base(), values(bad)]);
    expect(template.ok).toBe(false);
    expect(template.stderr).toMatch(message);
    expect(template.stdout).toBe('');
  });

  /** The FLOWGATE_* names the chart's templates set themselves, from typed values. */
  const chartSet = () => {
    const tpl = readFileSync(join(CHART, 'templates/_helpers.tpl'), 'utf8');
    return new Set([...tpl.matchAll(/name: (FLOWGATE_\w+)/g), ...tpl.matchAll(/"name" "(FLOWGATE_\w+)"/g)].map((m) => m[1]!));
  };
  const extraEnvNames = (): string[] => schema.$defs.envVar.allOf[1].then.properties.name.enum;

  it('extraEnv takes only FLOWGATE_* settings flowgate knows, and none the chart sets itself', () => {
    const allowed = extraEnvNames();
    expect(schema.$defs.envVar.allOf[1].if.properties.name.pattern).toBe('^FLOWGATE_');
    for (const name of allowed) expect(SETTING_NAMES, name).toContain(name);
    const set = chartSet();
    expect(set.size).toBeGreaterThan(30);
    expect(allowed.filter((n) => set.has(n))).toEqual([]);
    // Every setting is either settable in extraEnv, set by the chart, or another form of one the chart sets.
    const otherForms = ['FLOWGATE_ADMIN_TOKEN', 'FLOWGATE_DATABASE_URL', 'FLOWGATE_OIDC_CLIENT_SECRET', 'FLOWGATE_BEARER_ISSUERS_FILE'];
    expect(SETTING_NAMES.filter((n) => !allowed.includes(n) && !set.has(n) && !otherForms.includes(n))).toEqual([]);
    for (const n of otherForms) expect(set.has(n.replace(/_FILE$/, '')) || set.has(`${n}_FILE`), n).toBe(true);
  });

  it.each([
    ['a setting flowgate does not know', [{ name: 'FLOWGATE_ADMIN_TOKN', value: 'x' }]],
    ['a setting the chart sets (a second copy flowgate would refuse)', [{ name: 'FLOWGATE_METRICS_PORT', value: '9191' }]],
    ['the database URL file, which the chart sets from store.postgres.urlSecret', [{ name: 'FLOWGATE_DATABASE_URL_FILE', value: '/etc/db/url' }]],
    ['the database URL itself, even from a Secret (the chart mounts it as a file)', [{ name: 'FLOWGATE_DATABASE_URL', valueFrom: { secretKeyRef: { name: 'pg', key: 'url' } } }]],
    ['a secret setting from a ConfigMap', [{ name: 'FLOWGATE_INFERENCE_API_KEYS', valueFrom: { configMapKeyRef: { name: 'keys', key: 'keys' } } }]],
    ['a secret setting from a Secret and a ConfigMap', [{ name: 'FLOWGATE_PAGE_TOKEN_KEY', valueFrom: { secretKeyRef: { name: 'k', key: 'k' }, configMapKeyRef: { name: 'keys', key: 'keys' } } }]],
    ['the OTLP exporter’s headers as a value', [{ name: 'OTEL_EXPORTER_OTLP_HEADERS', value: 'authorization=Bearer hunter2-otlp' }]],
    ['the OTLP traces exporter’s headers from a ConfigMap', [{ name: 'OTEL_EXPORTER_OTLP_TRACES_HEADERS', valueFrom: { configMapKeyRef: { name: 'otlp', key: 'headers' } } }]],
  ])('extraEnv: %s is refused by helm lint and helm template', (_, extraEnv) => {
    const file = values({ extraEnv });
    const lint = helmLint([base(), file]);
    const template = helmTemplateRun([base(), file]);
    expect(lint.ok).toBe(false);
    expect(template.ok).toBe(false);
    expect(template.stderr).toMatch(/extraEnv/);
    expect(lint.stdout + lint.stderr + template.stderr).not.toContain('hunter2');
  });

  it('extraEnv: every FLOWGATE_* name it takes renders settings flowgate accepts', () => {
    const sample: Record<string, string> = {
      FLOWGATE_HOST: '0.0.0.0',
      FLOWGATE_METRICS_HOST: '0.0.0.0',
      FLOWGATE_DATABASE_QUERY_TIMEOUT_MS: '7000',
      FLOWGATE_DEFAULT_WORKSPACE_OPEN: 'false',
      FLOWGATE_WORKSPACE_GROUP_RULES: 'team-*=team-*',
      FLOWGATE_SKIP_AUTH_PREFLIGHT: 'true',
      FLOWGATE_LEGACY_PASSWORDS: 'off',
      FLOWGATE_STORE_WATCH_MS: '500',
      FLOWGATE_BODY_READ_TIMEOUT_MS: '20000',
      FLOWGATE_DECISION_LOG: 'otlp',
      FLOWGATE_DECISION_LOG_ALLOW_SAMPLE: '0.5',
      FLOWGATE_DECISION_LOG_MASK: 'user',
      FLOWGATE_OTEL_TRACES_ENDPOINT: 'http://otel-collector:4318/v1/traces',
      FLOWGATE_OTEL_LOGS_ENDPOINT: 'http://otel-collector:4318/v1/logs',
      FLOWGATE_OTEL_SERVICE_NAME: 'flowgate',
      FLOWGATE_OTEL_SAMPLE_RATIO: '0.1',
      FLOWGATE_SCIM_TOKEN_GRACE_SECONDS: '60',
      FLOWGATE_SCIM_RATE_PER_SECOND: '5',
      FLOWGATE_SCIM_BURST: '20',
    };
    const fromSecret = ['FLOWGATE_DECISION_LOG_MASK_KEY', 'FLOWGATE_INFERENCE_API_KEYS', 'FLOWGATE_PAGE_TOKEN_KEY', 'FLOWGATE_PAGE_TOKEN_PREVIOUS_KEYS'];
    const files = ['FLOWGATE_DECISION_LOG_FILE', 'FLOWGATE_SCIM_TOKEN_FILE'];
    expect([...Object.keys(sample), ...fromSecret, ...files].sort()).toEqual([...extraEnvNames()].sort());
    const extraEnv = [
      ...Object.entries(sample).map(([name, value]) => ({ name, value })),
      ...fromSecret.map((name) => ({ name, valueFrom: { secretKeyRef: { name: 'flowgate-extra', key: name.toLowerCase() } } })),
      { name: 'OTEL_EXPORTER_OTLP_HEADERS', valueFrom: { secretKeyRef: { name: 'otlp', key: 'headers' } } },
    ];
    // As JSON (valid YAML): Helm reads YAML 1.1, where a bare `off` is a boolean.
    const file = join(scratch, 'values-extra-env.json');
    // The inference keys open inference routes: flowgate refuses them without.
    writeFileSync(file, JSON.stringify({ extraEnv, inference: { enabled: true } }));
    const lint = helmLint([base(), file]);
    expect(lint.ok, lint.stdout + lint.stderr).toBe(true);
    const objects = helmTemplate([base(), file]);
    const env = envOf(proxy(objects).container);
    for (const e of extraEnv) expect(env[e.name], e.name).toEqual(e);
    const key = Buffer.alloc(32, 9).toString('base64');
    const config = configFromPod(objects, { FLOWGATE_DECISION_LOG_MASK_KEY: key, FLOWGATE_PAGE_TOKEN_KEY: key, FLOWGATE_PAGE_TOKEN_PREVIOUS_KEYS: Buffer.alloc(32, 8).toString('base64'), FLOWGATE_INFERENCE_API_KEYS: 'k'.repeat(40) });
    expect(config).toMatchObject({ storeWatchMs: 500, legacyPasswords: false });
    // The file-named ones are accepted too (their files are the release's extra volumes).
    for (const name of files) expect(helmTemplateRun([base(), values({ extraEnv: [{ name, value: '/var/lib/flowgate/x' }] })]).ok, name).toBe(true);
  });

  it.each([1, 2, '1%', '50%', '100%'])('takes a disruption budget of %s', (maxUnavailable) => {
    const file = values({ podDisruptionBudget: { maxUnavailable } });
    expect(helmLint([base(), file]).ok).toBe(true);
    const pdb = helmTemplate([base(), file]).find((o) => o.kind === 'PodDisruptionBudget')!;
    expect(pdb.spec).toMatchObject({ maxUnavailable, unhealthyPodEvictionPolicy: 'AlwaysAllow' });
    expect(validateAgainstKubernetes([pdb]).map((v) => v.result)).toEqual(['valid']);
  });

  it('takes a secret setting from a Secret in extraEnv', () => {
    const ref = { name: 'FLOWGATE_INFERENCE_API_KEYS', valueFrom: { secretKeyRef: { name: 'flowgate-inference-keys', key: 'keys' } } };
    const file = values({ extraEnv: [ref], inference: { enabled: true } });
    expect(helmLint([base(), file]).ok).toBe(true);
    expect(envOf(proxy(helmTemplate([base(), file])).container).FLOWGATE_INFERENCE_API_KEYS).toEqual(ref);
    // Without inference routes the keys would open nothing: refused at render, as flowgate refuses them at start.
    const without = helmTemplateRun([base(), values({ extraEnv: [ref] })]);
    expect(without.ok).toBe(false);
    expect(without.stderr).toContain('FLOWGATE_INFERENCE_API_KEYS opens inference routes, which need inference.enabled');
  });

  // docs/operations.md, "Memory": a store of ~1M grants in a smaller container needs a heap limit below the container's.
  it('passes a Node heap limit and a larger memory limit through, as the memory guide says', () => {
    const file = values({ extraEnv: [{ name: 'NODE_OPTIONS', value: '--max-old-space-size=192' }], resources: { limits: { memory: '320Mi' } } });
    expect(helmLint([base(), file]).ok).toBe(true);
    const { container } = proxy(helmTemplate([base(), file]));
    expect(envOf(container).NODE_OPTIONS).toEqual({ name: 'NODE_OPTIONS', value: '--max-old-space-size=192' });
    expect(container.resources.limits.memory).toBe('320Mi');
  });
});
