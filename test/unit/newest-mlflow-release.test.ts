import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NEWEST_RELEASE, OLDEST_RELEASE, RECORDED_RELEASES } from '../../src/authz/catalog-versions.js';
import { runRoutesCheck } from '../../src/commands/routes-check.js';

/** A stand-in for PyPI's JSON API on loopback: answers `/pypi/mlflow/json` with whatever `project` holds. */
let server: Server;
let pypiUrl = '';
let status = 200;
let project: unknown = {};

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url !== '/pypi/mlflow/json') return void res.writeHead(404).end();
    res.writeHead(status, { 'content-type': 'application/json' }).end(typeof project === 'string' ? project : JSON.stringify(project));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  pypiUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/pypi/mlflow/json`;
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

const wheel = (yanked = false) => [{ filename: 'mlflow.whl', yanked }];

/** PyPI's shape: every recorded release installable, plus `extra` (version → its files). */
function pypiWith(extra: Record<string, unknown[]> = {}) {
  const releases: Record<string, unknown[]> = Object.fromEntries(RECORDED_RELEASES.map((v) => [v, wheel()]));
  return { info: { version: NEWEST_RELEASE }, releases: { ...releases, ...extra } };
}

// A release after every recorded one, whatever gets recorded later.
const [major, minor] = NEWEST_RELEASE.split('.').map(Number);
const UNRECORDED = `${major}.${minor! + 1}.0`;

async function checkNewest(args = ['--check-newest', '--pypi-url', pypiUrl]) {
  let out = '';
  let err = '';
  const code = await runRoutesCheck(args, { env: {}, out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

describe('flowgate routes --check-newest', () => {
  it('passes when the newest release on PyPI is recorded', async () => {
    status = 200;
    project = pypiWith();
    const result = await checkNewest();
    expect(result.out).toBe(`MLflow ${NEWEST_RELEASE}, the newest release on PyPI, is recorded\n`);
    expect(result.code).toBe(0);
  });

  it('fails naming the release and the command that records it when a newer one is out', async () => {
    status = 200;
    project = { ...pypiWith({ [UNRECORDED]: wheel() }), info: { version: UNRECORDED } };
    const result = await checkNewest();
    expect(result.code).toBe(1);
    expect(result.out).toContain(`MLflow ${UNRECORDED}, the newest release on PyPI, is not recorded (newest recorded: ${NEWEST_RELEASE})`);
    expect(result.out).toContain(`node scripts/mlflow-matrix.mjs record ${UNRECORDED}`);
  });

  it('counts neither a pre-release nor a release whose every file was yanked', async () => {
    status = 200;
    project = pypiWith({ [`${UNRECORDED}rc0`]: wheel(), [UNRECORDED]: wheel(true), [`${major}.${minor! + 2}.0`]: [] });
    const result = await checkNewest();
    expect(result.out).toContain(`MLflow ${NEWEST_RELEASE},`);
    expect(result.code).toBe(0);
  });

  it('orders releases numerically, not as text', async () => {
    status = 200;
    // A recorded release that sorts after the unrecorded one as text (`3.9.0` after `3.19.0`):
    // were the newest read that way, this would pass.
    const laterAsText = RECORDED_RELEASES.find((v) => v > UNRECORDED);
    expect(laterAsText).toBeDefined();
    project = { info: {}, releases: { [OLDEST_RELEASE]: wheel(), [laterAsText!]: wheel(), [UNRECORDED]: wheel() } };
    const result = await checkNewest();
    expect(result.code).toBe(1);
    expect(result.out).toContain(`MLflow ${UNRECORDED},`);
  });

  it("falls back to PyPI's info.version when a mirror leaves out the releases", async () => {
    status = 200;
    project = { info: { version: UNRECORDED } };
    const result = await checkNewest();
    expect(result.code).toBe(1);
    expect(result.out).toContain(`record ${UNRECORDED}`);
  });

  it('fails, saying so, when PyPI does not answer with releases', async () => {
    status = 503;
    project = {};
    const unavailable = await checkNewest();
    expect(unavailable.code).toBe(1);
    expect(unavailable.err).toContain(`could not read MLflow's releases from ${pypiUrl}: HTTP 503`);

    status = 200;
    project = 'not json';
    const garbled = await checkNewest();
    expect(garbled.code).toBe(1);
    expect(garbled.err).toContain('could not read');

    project = { info: {}, releases: {} };
    const empty = await checkNewest();
    expect(empty.code).toBe(1);
    expect(empty.err).toContain('lists no installable MLflow release');
  });

  it('is its own mode: not mixed with --check or --url', async () => {
    expect((await checkNewest(['--check-newest', '--check', '--pypi-url', pypiUrl])).code).toBe(2);
    expect((await checkNewest(['--check-newest', '--url', 'http://127.0.0.1:1', '--pypi-url', pypiUrl])).code).toBe(2);
    expect((await checkNewest(['--check', '--pypi-url', pypiUrl])).code).toBe(2);
  });
});
