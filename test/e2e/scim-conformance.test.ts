import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

const run = promisify(execFile);

/**
 * A third party's SCIM conformance checks (scim2-tester from PyPI, in its own venv made by
 * scripts/scim-tester-venv.sh) run against flowgate's /scim/v2: discovery, CRUD, PATCH add/replace/
 * remove on every attribute flowgate publishes, for Users and Groups. SCIM never reaches MLflow, so
 * MLflow is stubbed here.
 */
const TOKEN = 'scim-conformance-token-0123456789abcdef';

/**
 * The one check flowgate does not pass, on purpose: a PATCH `remove` of `active` leaves `active`
 * in the answer. Every flowgate user is either enabled or disabled, so `active` is always shown
 * (identity providers filter on `active eq true`); a removed `active` leaves the user as it was.
 */
const KNOWN_DEVIATION = (r: Outcome['results'][number]) =>
  r.status === 'ERROR' && r.title === 'check_remove_attribute' && r.resource_type === 'User' && r.reason.includes("attribute 'active'");

interface Outcome {
  readonly counts: Record<string, number>;
  readonly results: ReadonlyArray<{ status: string; title: string | null; resource_type: string | null; reason: string }>;
}

let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let fg: TestFlowgate;
let dir = '';
let venv = '';

beforeAll(async () => {
  venv = (await run('bash', ['scripts/scim-tester-venv.sh'], { timeout: 300_000 })).stdout.trim();
  upstream = await startStubUpstream();
  dir = mkdtempSync(join(tmpdir(), 'flowgate-scim-conf-'));
  writeFileSync(join(dir, 'scim-token'), TOKEN);
  fg = await startTestFlowgate(
    { FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_SCIM_TOKEN_FILE: join(dir, 'scim-token'), FLOWGATE_SCIM_RATE_PER_SECOND: '1000', FLOWGATE_SCIM_BURST: '10000' },
    dir,
  );
}, 360_000);

afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  if (dir) removeDir(dir);
});

describe('scim2-tester against /scim/v2', () => {
  it('passes every check it runs but one known deviation: no other ERROR or CRITICAL result', async () => {
    const out = await run(join(venv, 'bin/python'), ['test/e2e/py/scim_conformance.py', `${fg.url}/scim/v2`], {
      env: { ...process.env, SCIM_TOKEN: TOKEN },
      timeout: 300_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    const outcome = JSON.parse(out.stdout) as Outcome;
    const failed = outcome.results.filter((r) => (r.status === 'ERROR' || r.status === 'CRITICAL') && !KNOWN_DEVIATION(r));
    // The figures, for the record of what the checker found.
    console.log(`scim2-tester: ${JSON.stringify(outcome.counts)}`);
    expect(failed, JSON.stringify(failed, null, 1)).toEqual([]);
    expect(outcome.counts.SUCCESS ?? 0).toBeGreaterThan(20);
  }, 300_000);
});
