import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

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

  it('takes a JSON file, with the environment winning', () => {
    const c = loadConfig({ FLOWGATE_CONFIG_FILE: '/c.json', FLOWGATE_PORT: '9000' }, () =>
      JSON.stringify({ FLOWGATE_PORT: 7000, FLOWGATE_BASE_PATH: '/ml' }),
    );
    expect(c.port).toBe(9000);
    expect(c.basePath).toBe('/ml');
  });

  it('refuses metrics on the public port', () => {
    expect(() => loadConfig({ FLOWGATE_PORT: '8080', FLOWGATE_METRICS_PORT: '8080' })).toThrow(/FLOWGATE_METRICS_PORT/);
  });
});
