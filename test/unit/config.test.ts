import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { ConfigError, loadConfig, SETTING_NAMES, TOOLING_VARIABLES, type Env } from '../../src/config.js';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      host: '0.0.0.0',
      port: 8080,
      upstreamUrl: 'http://127.0.0.1:5000',
      dbPath: './data/flowgate.db',
      basePath: '',
      defaultPermission: 'NO_PERMISSIONS',
      metricsPort: 9090,
      admin: undefined,
      tokenMaxDays: 366,
    });
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('names every wrong variable at once', () => {
    try {
      loadConfig({ FLOWGATE_PORT: 'eighty', FLOWGATE_DEFAULT_PERMISSION: 'WRITE', FLOWGATE_UPSTREAM_URL: 'ftp://x' });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      const msg = (e as Error).message;
      expect(msg).toContain('FLOWGATE_PORT');
      expect(msg).toContain('FLOWGATE_DEFAULT_PERMISSION');
      expect(msg).toContain('FLOWGATE_UPSTREAM_URL');
    }
  });

  it('names the problems across settings beside a value of the wrong type, not after it is fixed', () => {
    try {
      loadConfig({ FLOWGATE_PORT: 'abc', FLOWGATE_ADMIN_USERNAME: 'admin', FLOWGATE_DECISION_LOG: 'file', FLOWGATE_PAGE_TOKEN_KEY: 'bad' });
      expect.unreachable();
    } catch (e) {
      const problems = (e as ConfigError).problems;
      expect(problems.map((p) => p.slice(0, p.indexOf(':')))).toEqual(
        expect.arrayContaining(['FLOWGATE_PORT', 'FLOWGATE_ADMIN_USERNAME', 'FLOWGATE_DECISION_LOG_FILE', 'FLOWGATE_PAGE_TOKEN_KEY']),
      );
    }
  });

  it('normalizes the base path and refuses a bad one', () => {
    expect(loadConfig({ FLOWGATE_BASE_PATH: '/mlflow/' }).basePath).toBe('/mlflow');
    expect(() => loadConfig({ FLOWGATE_BASE_PATH: 'mlflow' })).toThrow(/FLOWGATE_BASE_PATH/);
  });

  it('reads the admin token from a file, never echoing it', () => {
    const token = 's'.repeat(40);
    const c = loadConfig({ FLOWGATE_ADMIN_USERNAME: 'root', FLOWGATE_ADMIN_TOKEN_FILE: '/secret' }, () => `${token}\n`);
    expect(c.admin).toEqual({ username: 'root', token });
    try {
      loadConfig({ FLOWGATE_ADMIN_USERNAME: 'root', FLOWGATE_ADMIN_TOKEN: 'short-token' });
      expect.unreachable();
    } catch (e) {
      expect((e as Error).message).toContain('FLOWGATE_ADMIN_TOKEN');
      expect((e as Error).message).not.toContain('short-token');
    }
    expect(() => loadConfig({ FLOWGATE_ADMIN_USERNAME: 'root' })).toThrow(/FLOWGATE_ADMIN_TOKEN/);
  });

  it('reads the database URL and the OIDC client secret from files, naming the file setting and never the content', () => {
    const url = 'postgres://flowgate:p4ssw0rd-in-a-file@db.example:5432/flowgate';
    const files: Record<string, string> = { '/s/url': `${url}\n`, '/s/client': 'client-secret-in-a-file\n', '/s/bad': 'mysql://root:hunter2-secret@db/x\n', '/s/empty': '\n' };
    const read = (p: string) => {
      if (!(p in files)) throw Object.assign(new Error('nope'), { code: 'ENOENT' });
      return files[p]!;
    };
    const c = loadConfig({ FLOWGATE_DATABASE_URL_FILE: '/s/url', FLOWGATE_UPSTREAM_URL: 'http://127.0.0.1:5000' }, read);
    expect(c.databaseUrl).toBe(url);
    const refusal = (env: Record<string, string>) => {
      try {
        loadConfig(env, read);
      } catch (e) {
        return (e as Error).message;
      }
      return expect.unreachable();
    };
    const bad = refusal({ FLOWGATE_DATABASE_URL_FILE: '/s/bad' });
    expect(bad).toContain('FLOWGATE_DATABASE_URL_FILE: expected postgres://');
    expect(bad).not.toContain('hunter2');
    expect(refusal({ FLOWGATE_DATABASE_URL_FILE: '/s/url', FLOWGATE_DATABASE_URL: url })).toContain('FLOWGATE_DATABASE_URL_FILE: set either it or FLOWGATE_DATABASE_URL, not both');
    expect(refusal({ FLOWGATE_DATABASE_URL_FILE: '/s/empty' })).toContain('FLOWGATE_DATABASE_URL_FILE: the file is empty');
    expect(refusal({ FLOWGATE_OIDC_CLIENT_SECRET_FILE: '/s/missing' })).toMatch(/FLOWGATE_OIDC_CLIENT_SECRET_FILE: /);
    const oidc = loadConfig(
      { FLOWGATE_OIDC_ISSUER_URL: 'https://idp.example', FLOWGATE_OIDC_CLIENT_ID: 'mlflow', FLOWGATE_OIDC_CLIENT_SECRET_FILE: '/s/client', FLOWGATE_OIDC_REDIRECT_URL: 'https://ml.example/flowgate/callback' },
      read,
    );
    expect(oidc.oidc?.clientSecret).toBe('client-secret-in-a-file');
  });

  it('refuses at start what would otherwise be ignored or fail later: a mask the request log undoes, keys for no route, a database URL no client can parse', () => {
    const refusal = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (e) {
        return (e as Error).message;
      }
      return expect.unreachable();
    };
    expect(refusal({ FLOWGATE_DECISION_LOG: 'stdout', FLOWGATE_DECISION_LOG_MASK: 'user' })).toContain('FLOWGATE_DECISION_LOG_MASK: masks nothing with FLOWGATE_DECISION_LOG=stdout');
    expect(refusal({ FLOWGATE_INFERENCE_API_KEYS: 'k'.repeat(40) })).toContain('FLOWGATE_INFERENCE_API_KEYS: set only with FLOWGATE_INFERENCE_CONFIG_FILE');
    const badPort = refusal({ FLOWGATE_DATABASE_URL: 'postgres://u:pw-secret@127.0.0.1:notaport/db' });
    expect(badPort).toContain('FLOWGATE_DATABASE_URL: expected postgres://');
    expect(badPort).not.toContain('pw-secret');
    expect(loadConfig({ FLOWGATE_DECISION_LOG: 'stdout' }).decisionLog.mask).toEqual([]);
  });

  it('takes a JSON file, with the environment winning', () => {
    const c = loadConfig({ FLOWGATE_CONFIG_FILE: '/c.json', FLOWGATE_PORT: '9000' }, () =>
      JSON.stringify({ FLOWGATE_PORT: 7000, FLOWGATE_BASE_PATH: '/ml' }),
    );
    expect(c.port).toBe(9000);
    expect(c.basePath).toBe('/ml');
  });

  it('says where a config file is not JSON without quoting it (an unquoted secret is the usual mistake)', () => {
    for (const text of ['{"FLOWGATE_ADMIN_TOKEN": s3cr3t-admin-token-0123456789}', '{"X": secret1234}']) {
      let message = '';
      try {
        loadConfig({ FLOWGATE_CONFIG_FILE: '/c.json' }, () => text);
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message).toMatch(/FLOWGATE_CONFIG_FILE: cannot read a JSON object from it \(not valid JSON( at position \d+)?\)/);
      expect(message).not.toMatch(/s3cr3t|secret1234|N_TOKEN/);
    }
  });

  it("takes a list from the file as its variable's JSON (the bearer issuers)", () => {
    const issuers = [{ issuer: 'https://idp.example', audience: 'mlflow' }];
    const c = loadConfig({ FLOWGATE_CONFIG_FILE: '/c.json' }, () => JSON.stringify({ FLOWGATE_BEARER_ISSUERS: issuers }));
    expect(c.bearer?.issuers.map((i) => i.issuer)).toEqual(['https://idp.example']);
  });

  it('refuses metrics on the public port', () => {
    expect(() => loadConfig({ FLOWGATE_PORT: '8080', FLOWGATE_METRICS_PORT: '8080' })).toThrow(/FLOWGATE_METRICS_PORT/);
  });
});

describe('unknown FLOWGATE_* variables', () => {
  const problems = (env: Env, file?: object): string[] => {
    try {
      loadConfig(env, () => JSON.stringify(file));
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      return (e as ConfigError).problems;
    }
    return [];
  };

  it.each([
    ['FLOWGATE_UPSTREAM_ULR', 'FLOWGATE_UPSTREAM_URL'],
    ['FLOWGATE_PROT', 'FLOWGATE_PORT'],
    ['FLOWGATE_OIDC_ISSUER', 'FLOWGATE_OIDC_ISSUER_URL'],
    ['FLOWGATE_ADMIN_TOKEN_PATH', 'FLOWGATE_ADMIN_TOKEN_FILE'],
    ['FLOWGATE_LOG_LEVELS', 'FLOWGATE_LOG_LEVEL'],
    ['FLOWGATE_PAGE_TOKEN_KEYFILE', 'FLOWGATE_PAGE_TOKEN_KEY_FILE'],
  ])('refuses %s and suggests %s', (typo, meant) => {
    expect(problems({ [typo]: 'x' })).toEqual([`${typo}: not a flowgate setting; did you mean ${meant}? (see docs/configuration.md)`]);
  });

  it('suggests nothing when no setting is near', () => {
    expect(problems({ FLOWGATE_TELEMETRY_ENDPOINT_ADDRESS: 'x' })).toEqual([
      'FLOWGATE_TELEMETRY_ENDPOINT_ADDRESS: not a flowgate setting (see docs/configuration.md)',
    ]);
  });

  it('refuses one even when empty, and reports it beside the other problems', () => {
    const found = problems({ FLOWGATE_PORTT: '', FLOWGATE_PORT: 'eighty' });
    expect(found).toHaveLength(2);
    expect(found.join('\n')).toMatch(/FLOWGATE_PORTT: .*did you mean FLOWGATE_PORT\?/);
    expect(found.join('\n')).toMatch(/^FLOWGATE_PORT: /m);
  });

  it('checks the JSON file too', () => {
    expect(problems({ FLOWGATE_CONFIG_FILE: '/c.json' }, { FLOWGATE_BASEPATH: '/ml' })).toEqual([
      'FLOWGATE_BASEPATH: not a flowgate setting; did you mean FLOWGATE_BASE_PATH? (see docs/configuration.md)',
    ]);
  });

  it('documents every setting in docs/configuration.md', () => {
    const doc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    expect(SETTING_NAMES.length).toBeGreaterThan(30);
    expect(SETTING_NAMES.filter((name) => !doc.includes(`\`${name}\``))).toEqual([]);
  });

  it("lets pass every FLOWGATE_* name flowgate's own scripts, bench and test helpers read, and the docs name each", () => {
    const root = new URL('../../', import.meta.url);
    const read = (dir: string): string[] =>
      readdirSync(new URL(dir, root), { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? read(`${dir}${d.name}/`) : [readFileSync(new URL(`${dir}${d.name}`, root), 'utf8')]));
    const names = new Set([...read('scripts/'), ...read('bench/'), ...read('.ci/'), ...read('test/helpers/'), readFileSync(new URL('package.json', root), 'utf8')].flatMap((t) => t.match(/FLOWGATE_[A-Z0-9_]+/g) ?? []));
    const settings = new Set<string>(SETTING_NAMES);
    const tooling = [...names].filter((n) => !settings.has(n) && n !== 'FLOWGATE_CONFIG_FILE' && !n.endsWith('_'));
    expect(tooling.length).toBeGreaterThan(5);
    expect(tooling.filter((n) => !TOOLING_VARIABLES.has(n))).toEqual([]);
    const doc = readFileSync(new URL('docs/configuration.md', root), 'utf8');
    expect([...TOOLING_VARIABLES].filter((n) => !doc.includes(`\`${n}\``))).toEqual([]);
  });

  it('knows every setting of the schema, the config file and the tooling variables, and ignores other prefixes', () => {
    expect(problems({ FLOWGATE_CONFIG_FILE: '/c.json', FLOWGATE_MLFLOW_VENV: '/v', PORT: '1', MLFLOW_PORT: '2' }, {})).toEqual([]);
    expect(problems({ FLOWGATE_PAGE_TOKEN_PREVIOUS_KEYS: '', FLOWGATE_BODY_READ_TIMEOUT_MS: '5000' })).toEqual([]);
  });
});
