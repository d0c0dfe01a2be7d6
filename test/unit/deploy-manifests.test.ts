import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

const docs = (file: string) =>
  parseAllDocuments(readFileSync(new URL(`../../deploy/kubernetes/${file}`, import.meta.url), 'utf8')).map((d) => {
    expect(d.errors).toEqual([]);
    return d.toJS() as Record<string, any>;
  });

describe('deploy/kubernetes', () => {
  it('runs flowgate as a sidecar whose probes and ports match the server', () => {
    const all = docs('mlflow-with-flowgate.yaml');
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
    const [secret, podDefault] = docs('team-access.yaml');
    expect(Object.keys(secret!.stringData).sort()).toEqual(['MLFLOW_TRACKING_PASSWORD', 'MLFLOW_TRACKING_URI', 'MLFLOW_TRACKING_USERNAME']);
    expect(podDefault!.apiVersion).toBe('kubeflow.org/v1alpha1');
    expect(Object.values(podDefault!.spec.selector.matchLabels)).toEqual(['true']);
    expect(podDefault!.spec.desc).toBeTruthy();
    expect(podDefault!.spec.envFrom[0].secretRef.name).toBe(secret!.metadata.name);
  });
});
