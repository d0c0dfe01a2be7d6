import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseAllDocuments } from 'yaml';

/** Tools installed once under ~/.cache/flowgate (outside the clone) and reused after. */
const CACHE = join(homedir(), '.cache', 'flowgate');
export const KUSTOMIZE_VERSION = 'v5.7.1';
/** kubernetes-validate's release N ships the OpenAPI schemas of Kubernetes N (and older ones). */
export const KUBERNETES_VERSION = '1.37.0';
/** npm packages carrying JSON schemas generated from the published CRDs of these operators. */
const CRD_MODELS = { '@kubernetes-models/prometheus-operator': '6.0.0', '@kubernetes-models/istio': '3.0.1' };

export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; [k: string]: unknown }; [k: string]: any };

const run = (cmd: string, args: string[], env: NodeJS.ProcessEnv = {}) =>
  execFileSync(cmd, args, { encoding: 'utf8', env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 32 << 20 });

/** kustomize, built from the Go module proxy with `go install` into ~/.cache/flowgate/bin. */
export function kustomizeBinary(): string {
  const bin = join(CACHE, `kustomize-${KUSTOMIZE_VERSION}`);
  const exe = join(bin, 'kustomize');
  if (existsSync(exe)) return exe;
  mkdirSync(bin, { recursive: true });
  run('go', ['install', `sigs.k8s.io/kustomize/kustomize/v5@${KUSTOMIZE_VERSION}`], { GOBIN: bin, GOFLAGS: '-buildvcs=false' });
  return exe;
}

/** Every object `kustomize build <dir>` emits. */
export function kustomizeBuild(dir: string): K8sObject[] {
  const out = run(kustomizeBinary(), ['build', dir]);
  return parseAllDocuments(out).map((d) => {
    if (d.errors.length) throw new Error(`kustomize build ${dir}: ${d.errors[0]!.message}`);
    return d.toJS() as K8sObject;
  });
}

function kubernetesValidatePython(): string {
  const venv = join(CACHE, `kubernetes-validate-${KUBERNETES_VERSION}`);
  const python = join(venv, 'bin', 'python');
  if (spawnSync(python, ['-c', 'import kubernetes_validate']).status === 0) return python;
  run('python3', ['-m', 'venv', venv]);
  run(python, ['-m', 'pip', 'install', '--quiet', `kubernetes-validate==${KUBERNETES_VERSION}`]);
  return python;
}

export type Verdict = { kind: string; name: string; result: 'valid' | 'invalid' | 'no-schema'; message?: string };

const VALIDATE = `
import json, sys, kubernetes_validate as kv
out = []
for o in json.load(sys.stdin):
    v = {"kind": o.get("kind"), "name": (o.get("metadata") or {}).get("name")}
    try:
        kv.validate(o, sys.argv[1], strict=True); v["result"] = "valid"
    except kv.SchemaNotFoundError as e:
        v["result"] = "no-schema"
    except kv.ValidationError as e:
        v["result"] = "invalid"; v["message"] = "%s at %s" % (e.message, "/".join(str(p) for p in e.path))
    out.append(v)
print(json.dumps(out))
`;

/** Each object checked, strictly (unknown fields refused), against Kubernetes' own OpenAPI schemas. */
export function validateAgainstKubernetes(objects: K8sObject[]): Verdict[] {
  const r = spawnSync(kubernetesValidatePython(), ['-c', VALIDATE, KUBERNETES_VERSION], { input: JSON.stringify(objects), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`kubernetes-validate failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Verdict[];
}

/** The directory holding the CRD model packages, installed with npm on first use. */
function crdModels(): string {
  const dir = join(CACHE, 'k8s-crd-models');
  const wanted = Object.entries(CRD_MODELS);
  const have = (name: string, version: string) => {
    const pkg = join(dir, 'node_modules', name, 'package.json');
    return existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { version: string }).version === version;
  };
  if (wanted.every(([n, v]) => have(n, v))) return dir;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{"private":true}\n');
  run('npm', ['install', '--no-audit', '--no-fund', '--prefix', dir, ...wanted.map(([n, v]) => `${n}@${v}`)]);
  return dir;
}

/** Where each CRD kind's model lives in those packages. */
const CRD_MODULES: Record<string, string> = {
  'monitoring.coreos.com/v1/PodMonitor': '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor.js',
  'monitoring.coreos.com/v1/PrometheusRule': '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule.js',
  'networking.istio.io/v1alpha3/EnvoyFilter': '@kubernetes-models/istio/networking.istio.io/v1alpha3/EnvoyFilter.js',
};

/** Whether a published CRD schema from a registry package covers this apiVersion + kind. */
export const hasPublishedCrdSchema = (o: K8sObject) => `${o.apiVersion}/${o.kind}` in CRD_MODULES;

/** The object checked against the JSON schema generated from its operator's published CRD. */
export async function validateAgainstCrd(o: K8sObject): Promise<Verdict> {
  const module = CRD_MODULES[`${o.apiVersion}/${o.kind}`];
  if (!module) return { kind: o.kind, name: o.metadata.name, result: 'no-schema' };
  const Model = (await import(pathToFileURL(join(crdModels(), 'node_modules', module)).href))[o.kind] as new (x: unknown) => { validate(): void };
  try {
    new Model(o).validate();
    return { kind: o.kind, name: o.metadata.name, result: 'valid' };
  } catch (e) {
    return { kind: o.kind, name: o.metadata.name, result: 'invalid', message: (e as Error).message };
  }
}
