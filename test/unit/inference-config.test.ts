import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { loadInferenceConfig, parseInferenceConfig } from '../../src/inference/config.js';
import { InferenceConfigError } from '../../src/inference/document.js';
import { parseKeyFile } from '../../src/inference/key-file.js';

const VALID_YAML = `
routes:
  - name: iris
    upstream: http://iris-predictor.models.svc.cluster.local:8080
    pathPrefix: /models/iris/
    stripPrefix: true
    model: iris
  - name: fraud
    upstream: https://fraud.models.example.com/base
    hosts: [Fraud.Models.Example.com.]
    publicHealth: true
apiKeys:
  file: /var/run/flowgate/keys/keys.yaml
  pollIntervalSeconds: 5
`;

function problemsOf(text: string): string[] {
  try {
    parseInferenceConfig(text, 'test.yaml');
  } catch (e) {
    expect(e).toBeInstanceOf(InferenceConfigError);
    return [...(e as InferenceConfigError).problems];
  }
  throw new Error('expected the config to be rejected');
}

const route = (extra: string) => `routes:\n  - name: iris\n    upstream: http://127.0.0.1:5001\n${extra}`;

describe('inference config', () => {
  it('reads YAML, normalizes prefixes and hosts, and fills defaults', () => {
    const c = parseInferenceConfig(VALID_YAML);
    expect(c.routes[0]).toMatchObject({ name: 'iris', pathPrefix: '/models/iris', stripPrefix: true, model: 'iris', publicHealth: false, preserveHost: false });
    expect(c.routes[0]!.upstream.href).toBe('http://iris-predictor.models.svc.cluster.local:8080/');
    expect(c.routes[1]!.hosts).toEqual(['fraud.models.example.com']);
    expect(c.apiKeys).toEqual({ file: '/var/run/flowgate/keys/keys.yaml', pollIntervalSeconds: 5 });
    expect(c.upstreamTimeoutSeconds).toBe(300);
  });

  it('reads JSON too', () => {
    const c = parseInferenceConfig(JSON.stringify({ routes: [{ name: 'a', upstream: 'http://127.0.0.1:1', pathPrefix: '/a' }] }));
    expect(c.routes[0]!.name).toBe('a');
    expect(c.apiKeys.pollIntervalSeconds).toBe(10);
  });

  it('loads from a file and names the file in errors', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fg-inf-config-'));
    writeFileSync(join(dir, 'ok.yaml'), VALID_YAML);
    writeFileSync(join(dir, 'bad.yaml'), 'routes: []\n');
    expect(loadInferenceConfig(join(dir, 'ok.yaml')).routes).toHaveLength(2);
    expect(() => loadInferenceConfig(join(dir, 'bad.yaml'))).toThrow(/bad\.yaml is invalid:\n {2}- routes: at least one route is required/);
    expect(() => loadInferenceConfig(join(dir, 'missing.yaml'))).toThrow(/cannot read the file \(ENOENT\)/);
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['not YAML', 'routes: [', /not valid YAML or JSON at line/],
    ['no routes', 'routes: []', /routes: at least one route is required/],
    ['neither host nor prefix', route(''), /routes\[0\]: a route needs a pathPrefix, hosts, or both/],
    ['strip without prefix', route('    hosts: [a.example.com]\n    stripPrefix: true'), /routes\[0\]\.stripPrefix: stripPrefix needs a pathPrefix/],
    ['prefix "/" alone', route('    pathPrefix: /'), /routes\[0\]\.pathPrefix: expected a path such as \/models\/iris/],
    ['dot-dot prefix', route('    pathPrefix: /models/../api'), /routes\[0\]\.pathPrefix: expected a path/],
    ['encoded prefix', route('    pathPrefix: /models%2Firis'), /routes\[0\]\.pathPrefix: expected a path/],
    ['host with port', route('    hosts: ["iris.example.com:8080"]'), /routes\[0\]\.hosts\[0\]: expected a DNS host name without port/],
    ['unknown field', route('    pathPrefix: /a\n    stripprefix: true'), /routes\[0\]: unknown field "stripprefix"$/],
    ['an unknown field that is not a name', route('    pathPrefix: /a\n    "x-b: c": 1'), /routes\[0\]: an unknown field$/],
    ['bad name', 'routes:\n  - name: Iris Model\n    upstream: http://127.0.0.1:1\n    pathPrefix: /a', /routes\[0\]\.name: expected a lowercase name/],
  ])('rejects %s', (_label, text, message) => {
    expect(problemsOf(text).join('\n')).toMatch(message);
  });

  it.each([
    ['ftp://models.example.com', /expected an http or https URL/],
    ['http://127.0.0.1:5001/?x=1', /must not carry a query or fragment/],
    ['http://user:pw@127.0.0.1:5001', /must not carry credentials/],
    ['models.example.com', /expected an absolute http\(s\) URL/],
  ])('rejects upstream %s', (upstream, message) => {
    const problems = problemsOf(`routes:\n  - name: a\n    upstream: "${upstream}"\n    pathPrefix: /a`);
    expect(problems.join('\n')).toMatch(/routes\[0\]\.upstream: /);
    expect(problems.join('\n')).toMatch(message);
  });

  it('refuses a route that keeps the client Host but matches on the path alone, naming the route', () => {
    // Behind a gateway that routes on Host (Knative), a key checked for /models/iris would reach
    // whichever model the client's Host names.
    const problems = problemsOf(`routes:\n  - { name: iris, upstream: "http://127.0.0.1:1", pathPrefix: /models/iris, preserveHost: true }`);
    expect(problems).toEqual([expect.stringMatching(/^routes\[0\]\.preserveHost: route "iris" sets preserveHost without hosts: list the Host names/)]);
    const withHosts = parseInferenceConfig(
      `routes:\n  - { name: iris, upstream: "http://127.0.0.1:1", pathPrefix: /models/iris, hosts: [iris.models.example.com], preserveHost: true }`,
    );
    expect(withHosts.routes[0]).toMatchObject({ preserveHost: true, hosts: ['iris.models.example.com'] });
  });

  it('collects every problem before failing: duplicate names and duplicate matches', () => {
    const problems = problemsOf(`
routes:
  - { name: a, upstream: "http://127.0.0.1:1", pathPrefix: /m }
  - { name: a, upstream: "http://127.0.0.1:2", pathPrefix: /m/ }
  - { name: c, upstream: "http://127.0.0.1:3", hosts: [x.example.com], pathPrefix: /n }
  - { name: d, upstream: "http://127.0.0.1:4", hosts: [x.example.com], pathPrefix: /n }
`);
    expect(problems).toEqual([
      'routes[1].name: duplicate route name "a"',
      'routes[1]: another route already matches host * and path /m',
      'routes[3]: another route already matches host x.example.com and path /n',
    ]);
  });
});

describe('deploy/kserve examples', () => {
  it('hold a routes config and a key file flowgate accepts', () => {
    const text = readFileSync(new URL('../../deploy/kserve/flowgate-inference-config.yaml', import.meta.url), 'utf8');
    const [configMap, secret] = parseAllDocuments(text).map((d) => d.toJS());
    const config = parseInferenceConfig(configMap.data['routes.yaml'], 'routes.yaml');
    expect(config.routes.map((r) => r.name)).toEqual(['iris', 'fraud']);
    // The example's key values are placeholders flowgate refuses (they hold spaces): filled in, the file is accepted.
    const routes = new Set(config.routes.map((r) => r.name));
    expect(() => parseKeyFile(secret.stringData['keys.yaml'], 'keys.yaml', routes)).toThrow(/visible ASCII/);
    const filled = (secret.stringData['keys.yaml'] as string).replace(/value: "<REPLACE WITH [^"]*>"/g, () => `value: k${'x'.repeat(40)}${Math.random().toString(36).slice(2)}`);
    const keys = parseKeyFile(filled, 'keys.yaml', routes);
    expect(keys.map((k) => k.id)).toEqual(['platform-2026-01', 'team-a-2026-01', 'team-b-2026-01']);
  });

  it('has an InferenceService with the progress-deadline annotation and a nodeSelector', () => {
    const isvc = parse(readFileSync(new URL('../../deploy/kserve/inference-service.yaml', import.meta.url), 'utf8'));
    expect(isvc.apiVersion).toBe('serving.kserve.io/v1beta1');
    expect(isvc.kind).toBe('InferenceService');
    expect(isvc.spec.predictor.annotations['serving.knative.dev/progress-deadline']).toBe('180m');
    expect(Object.keys(isvc.spec.predictor.nodeSelector).length).toBeGreaterThan(0);
  });
});
