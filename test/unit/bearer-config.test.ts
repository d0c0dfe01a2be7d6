import { describe, expect, it } from 'vitest';
import { templateMatcher, templatesOverlap } from '../../src/bearer/templates.js';
import { ConfigError, loadConfig, type Env } from '../../src/config.js';

const problems = (env: Env, files: Record<string, string> = {}): string[] => {
  try {
    loadConfig(env, (p) => {
      if (p in files) return files[p]!;
      throw new Error('no such file');
    });
    return [];
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
};
const issuers = (list: unknown) => ({ FLOWGATE_BEARER_ISSUERS: JSON.stringify(list) });

describe('FLOWGATE_BEARER_ISSUERS', () => {
  it('is off by default, with its defaults when set', () => {
    expect(loadConfig({}).bearer).toBeUndefined();
    const c = loadConfig(issuers([{ issuer: 'https://idp.example/realms/ml', audience: 'mlflow' }, { kind: 'kubernetes', issuer: 'https://kubernetes.default.svc', audience: 'mlflow', jwks_file: '/keys.json' }]));
    expect(c.bearer).toEqual({
      clockSkewSeconds: 30,
      maxTokenBytes: 8192,
      issuers: [
        expect.objectContaining({ kind: 'oidc', audience: ['mlflow'], algorithms: ['RS256'], username_claim: ['preferred_username', 'client_id', 'azp', 'sub'], groups_claim: 'groups', service_accounts: false }),
        expect.objectContaining({ kind: 'kubernetes', username_template: 'k8s.{namespace}.{name}', namespace_group: 'k8s:{namespace}' }),
      ],
    });
  });

  it('refuses none and HS* algorithms, unknown keys, and a missing audience', () => {
    expect(problems(issuers([{ issuer: 'https://i.example', audience: 'a', algorithms: ['none'] }])).join()).toMatch(/algorithms.*never none or HS/);
    expect(problems(issuers([{ issuer: 'https://i.example', audience: 'a', algorithms: ['HS256'] }])).join()).toMatch(/never none or HS/);
    expect(problems(issuers([{ issuer: 'https://i.example', audience: 'a', audiences: 'b' }])).join()).toMatch(/audiences/);
    expect(problems(issuers([{ issuer: 'https://i.example' }])).join()).toMatch(/audience/);
  });

  it('needs https (or loopback) for keys it fetches, one key source, distinct issuers, and known placeholders', () => {
    expect(problems(issuers([{ issuer: 'http://idp.example', audience: 'a' }])).join()).toMatch(/must be https/);
    expect(problems(issuers([{ issuer: 'https://i.example', audience: 'a', jwks_url: 'http://keys.example/jwks' }])).join()).toMatch(/jwks_url.*https/);
    expect(problems(issuers([{ issuer: 'https://i.example', audience: 'a', jwks_url: 'https://k.example', jwks_file: '/k' }])).join()).toMatch(/not both/);
    expect(problems(issuers([{ issuer: 'https://i.example', audience: 'a' }, { issuer: 'https://i.example', audience: 'b' }])).join()).toMatch(/twice/);
    expect(problems(issuers([{ kind: 'kubernetes', issuer: 'https://k', audience: 'a', jwks_file: '/k', namespace_group: 'ns-{pod}' }])).join()).toMatch(/placeholders/);
    expect(problems(issuers([{ issuer: 'http://127.0.0.1:8080', audience: 'a' }]))).toEqual([]);
  });

  it('takes required_groups on an oidc issuer only, and only with a groups claim to read them from', () => {
    expect(loadConfig(issuers([{ issuer: 'https://i.example', audience: 'a', required_groups: ['pipelines'] }])).bearer?.issuers[0]).toMatchObject({ required_groups: ['pipelines'] });
    expect(problems(issuers([{ issuer: 'https://i.example', audience: 'a', required_groups: ['pipelines'], groups_claim: null }])).join()).toMatch(/required_groups.*needs groups_claim/);
    expect(problems(issuers([{ issuer: 'https://i.example', audience: 'a', required_groups: [] }])).join()).toMatch(/required_groups/);
    expect(problems(issuers([{ kind: 'kubernetes', issuer: 'https://k', audience: 'a', jwks_file: '/k', required_groups: ['x'] }])).join()).toMatch(/required_groups/);
  });

  it('refuses two kubernetes issuers that can make one same user or group, naming the keys', () => {
    const k8s = (issuer: string, extra: Record<string, unknown> = {}) => ({ kind: 'kubernetes', issuer, audience: 'mlflow', jwks_file: '/k.json', ...extra });
    const both = problems(issuers([k8s('https://prod'), k8s('https://dev')])).join('\n');
    expect(both).toMatch(/FLOWGATE_BEARER_ISSUERS\[1\]\["username_template"\]: can make the same user names as \[0\]\.username_template .*https:\/\/prod/);
    expect(both).toMatch(/FLOWGATE_BEARER_ISSUERS\[1\]\["namespace_group"\]: can make the same groups as \[0\]\.namespace_group/);
    // Not only the same text: any two templates whose names can meet (dev's namespace x is prod's namespace dev-x).
    expect(problems(issuers([k8s('https://prod'), k8s('https://dev', { username_template: 'k8s-dev.{namespace}.{name}', namespace_group: 'k8s:dev-{namespace}' })])).join()).toMatch(/namespace_group.*same groups/);
    expect(problems(issuers([k8s('https://prod'), k8s('https://dev', { username_template: 'k8s.dev.{namespace}.{name}', namespace_group: 'k8s:dev:{namespace}' })])).join()).toMatch(/username_template.*same user names/);
    expect(problems(issuers([k8s('https://prod'), k8s('https://dev', { username_template: 'K8S.{namespace}.{name}', namespace_group: null })])).join()).toMatch(/username_template/);
    // Apart: a literal no placeholder character can stand for (':' in a namespace, '-' after k8s).
    expect(problems(issuers([k8s('https://prod'), k8s('https://dev', { username_template: 'k8s-dev.{namespace}.{name}', namespace_group: 'k8s:dev:{namespace}' })]))).toEqual([]);
    expect(problems(issuers([k8s('https://prod'), k8s('https://dev', { username_template: 'dev.{namespace}.{name}', namespace_group: null })]))).toEqual([]);
    // A kubernetes issuer beside OIDC issuers is fine as it is.
    expect(problems(issuers([k8s('https://prod'), { issuer: 'https://i.example', audience: 'a' }]))).toEqual([]);
  });

  it('reads a template as the names it makes: placeholders of Kubernetes characters, literals, any case', () => {
    const user = templateMatcher('k8s.{namespace}.{name}');
    for (const n of ['k8s.team-b.pipelines', 'K8S.team-b.pipelines', 'k8s.a.b.c']) expect(user.test(n), n).toBe(true);
    for (const n of ['k8s.team_b.x', 'k8s..x', 'k8sXteam.x', 'xk8s.a.b', 'k8s.a']) expect(user.test(n), n).toBe(false);
    const group = templateMatcher('k8s:{namespace}');
    expect(group.test('k8s:team-a')).toBe(true);
    expect(group.test('k8s:team.a')).toBe(false);
    expect(templatesOverlap('k8s:{namespace}', 'k8s:{namespace}')).toBe(true);
    expect(templatesOverlap('{namespace}', 'anything-{namespace}')).toBe(true);
    expect(templatesOverlap('k8s:{namespace}', 'k8s:prod:{namespace}')).toBe(false);
    expect(templatesOverlap('k8s.{namespace}.{name}', 'k8s.{name}')).toBe(true);
    expect(templatesOverlap('ns-{namespace}', 'ns.{namespace}')).toBe(false);
  });

  it('reads the file form, and refuses both forms or JSON that is not', () => {
    const list = JSON.stringify([{ issuer: 'https://i.example', audience: 'a' }]);
    expect(loadConfig({ FLOWGATE_BEARER_ISSUERS_FILE: '/b.json' }, () => list).bearer?.issuers).toHaveLength(1);
    expect(problems({ FLOWGATE_BEARER_ISSUERS_FILE: '/b.json', FLOWGATE_BEARER_ISSUERS: list }, { '/b.json': list }).join()).toMatch(/not both/);
    expect(problems({ FLOWGATE_BEARER_ISSUERS: '{nope' }).join()).toMatch(/FLOWGATE_BEARER_ISSUERS: not valid JSON/);
    expect(problems({ FLOWGATE_BEARER_ISSUERS: '[{"issuer": "https://i.example", "client_secret": hush-hush-value}]' }).join()).not.toContain('hush-hush');
    expect(problems({ FLOWGATE_BEARER_ISSUERS_FILE: '/missing' }).join()).toMatch(/cannot read/);
    expect(problems({ ...issuers([{ issuer: 'https://i.example', audience: 'a' }]), FLOWGATE_BEARER_CLOCK_SKEW_SECONDS: '3600' }).join()).toMatch(/CLOCK_SKEW/);
  });
});
