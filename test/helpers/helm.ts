import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { KUBERNETES_VERSION, type K8sObject } from './kustomize.js';

export const CHART = fileURLToPath(new URL('../../deploy/helm/flowgate/', import.meta.url));
const HELM_SCRIPT = fileURLToPath(new URL('../../scripts/helm.sh', import.meta.url));

let binary: string | undefined;
/** helm, built once from the Go module proxy by scripts/helm.sh into ~/.cache/flowgate (minutes the first time). */
export function helmBinary(): string {
  binary ??= execFileSync('bash', [HELM_SCRIPT], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 32 << 20 }).trim();
  return binary;
}

export type HelmRun = { ok: boolean; stdout: string; stderr: string };

/** Renders and lints for the Kubernetes version whose schemas the objects are validated against. */
const kubeVersion = ['--kube-version', KUBERNETES_VERSION];
const valueArgs = (valuesFiles: string[], set: string[]) => [...valuesFiles.flatMap((f) => ['-f', f]), ...set.flatMap((s) => ['--set', s])];

function helm(args: string[]): HelmRun {
  const r = spawnSync(helmBinary(), args, { encoding: 'utf8', maxBuffer: 32 << 20 });
  return { ok: r.status === 0, stdout: r.stdout, stderr: r.stderr };
}

export const helmLint = (valuesFiles: string[] = [], set: string[] = []) =>
  helm(['lint', '--strict', ...kubeVersion, CHART, ...valueArgs(valuesFiles, set)]);

export const helmTemplateRun = (valuesFiles: string[] = [], set: string[] = [], release = 'flowgate', namespace = 'mlflow') =>
  helm(['template', release, CHART, '--namespace', namespace, ...kubeVersion, ...valueArgs(valuesFiles, set)]);

/** Every object `helm template` emits; throws with helm's message when it refuses. */
export function helmTemplate(valuesFiles: string[] = [], set: string[] = [], release?: string, namespace?: string): K8sObject[] {
  const r = helmTemplateRun(valuesFiles, set, release, namespace);
  if (!r.ok) throw new Error(`helm template: ${r.stderr}`);
  return parseAllDocuments(r.stdout)
    .map((d) => {
      if (d.errors.length) throw new Error(`helm template: ${d.errors[0]!.message}`);
      return d.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);
}
