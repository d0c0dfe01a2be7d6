import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTE_CATALOG } from '../../src/authz/catalog.js';
import { NEWEST_RELEASE, OLDEST_RELEASE } from '../../src/authz/catalog-versions.js';
import { runRoutesCheck } from '../../src/commands/routes-check.js';

/** A stand-in MLflow answering only `/version` (under an optional prefix) on loopback. */
let server: Server;
let url = '';
let version = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/version' || req.url === '/mlflow/version') res.end(version);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

async function check(args: string[], env: NodeJS.ProcessEnv = {}, catalog = ROUTE_CATALOG) {
  let out = '';
  let err = '';
  const code = await runRoutesCheck(args, { env, out: (t) => (out += t), err: (t) => (err += t), catalog });
  return { code, out, err };
}

describe('flowgate routes --check', () => {
  it.each([OLDEST_RELEASE, NEWEST_RELEASE])('passes for recorded release %s, read from --url', async (release) => {
    version = release;
    const result = await check(['--check', '--url', url]);
    expect(result.out).toMatch(new RegExp(`^MLflow ${release.replace(/\./g, '\\.')}: all \\d+ routes classified`));
    expect(result.code).toBe(0);
  });

  it('reads the URL and static prefix flowgate is configured with', async () => {
    version = NEWEST_RELEASE;
    const result = await check(['--check'], { FLOWGATE_UPSTREAM_URL: url, FLOWGATE_UPSTREAM_STATIC_PREFIX: '/mlflow' });
    expect(result.code).toBe(0);
  });

  it('fails and lists the routes a catalog lacks', async () => {
    version = NEWEST_RELEASE;
    const withoutSkills = ROUTE_CATALOG.filter((row) => !row.pattern.includes('/mlflow/skills'));
    const result = await check(['--check', '--url', url], {}, withoutSkills);
    expect(result.code).toBe(1);
    expect(result.out).toContain('GET /api/3.0/mlflow/skills/{name}');
    expect(result.out).toContain('not classified');
  });

  it('fails for a release that was not recorded', async () => {
    version = '3.17.1';
    const result = await check(['--check', '--url', url]);
    expect(result.code).toBe(1);
    expect(result.out).toContain('MLflow 3.17.1: not a release this flowgate was checked against');
  });

  it('fails when MLflow does not tell its version', async () => {
    const result = await check(['--check', '--url', `${url}/nothing-here`]);
    expect(result.code).toBe(1);
    expect(result.err).toContain('did not answer GET /version');
  });

  it('needs --check', async () => {
    expect((await check(['--url', url])).code).toBe(2);
    expect((await check(['--check', '--bogus'])).code).toBe(2);
  });
});
