import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { ADMIN, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { runPython, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { codeBlocks, markdownSection } from '../helpers/readme-blocks.js';

/**
 * The README's team recipe, run as a reader would: its bash block (read from README.md now, not a
 * copy) in a shell against the real MLflow behind flowgate, then its step 7, the real MLflow client
 * logging a run as the service account with the token the block printed.
 */
const SECTION = "Using it: a team's shared experiment";
/** Where the README's block expects flowgate: the quickstart's address. */
const README_FG = 'http://127.0.0.1:8080';
/** The line of the block that grants the service account on the experiment. */
const SERVICE_ACCOUNT_GRANT = /permissions\/users\/[^/\s]+\/experiments\//;

const section = markdownSection(SECTION);
const bashBlocks = codeBlocks(section, 'bash');
const pythonBlocks = codeBlocks(section, 'python');

let mlflow: MlflowServer;
let fg: TestFlowgate;
let work: string;
const admin = jsonCaller(() => fg.url);

/** The README's block for `team` (`team-a` as written; another name for a second, independent run) at this flowgate. */
function adapt(block: string, team: string): string {
  return block.replaceAll(README_FG, fg.url).replaceAll('team-a', team);
}

function shell(script: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('MLFLOW_') && !['FG', 'ADMIN', 'J', 'EXP'].includes(k)) env[k] = v;
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs the recipe for `team`, optionally without the service account's grant; returns the token it printed and the experiment's id. */
async function runRecipe(team: string, withoutServiceAccountGrant = false): Promise<{ token: string; experimentId: string }> {
  let script = adapt(bashBlocks[0]!, team);
  if (withoutServiceAccountGrant) {
    const lines = script.split('\n');
    const kept = lines.filter((line) => !SERVICE_ACCOUNT_GRANT.test(line));
    expect(lines.length - kept.length, 'the block grants the service account on one line').toBe(1);
    script = kept.join('\n');
  }
  const r = await shell(script);
  expect(r.code, r.stderr).toBe(0);
  expect(r.stderr).toBe('');
  expect(r.stdout, 'every admin call of the block succeeds').not.toContain('error_code');
  const token = /"token":"(fgt_[^"]+)"/.exec(r.stdout)?.[1];
  expect(token, `the block prints the service account's token:\n${r.stdout}`).toBeDefined();
  const got = await admin.call('GET', `/api/2.0/mlflow/experiments/get-by-name?experiment_name=${team}-shared`);
  return { token: token!, experimentId: (got.experiment as { experiment_id: string }).experiment_id };
}

/** Step 7: the README's Python block as the service account, with the variables the Secret holds. */
function step7(team: string, token: string) {
  return runPython(
    mlflow.venv,
    adapt(pythonBlocks[0]!, team),
    {
      MLFLOW_TRACKING_URI: `${fg.url}/`,
      MLFLOW_TRACKING_USERNAME: `${team}-pipelines`,
      MLFLOW_TRACKING_PASSWORD: token,
      MLFLOW_HTTP_REQUEST_MAX_RETRIES: '0',
      MLFLOW_HTTP_REQUEST_TIMEOUT: '60',
    },
    180_000,
  );
}

async function runsIn(experimentId: string): Promise<{ data?: { metrics?: { key: string; value: number }[] } }[]> {
  const found = await admin.call('POST', '/api/2.0/mlflow/runs/search', { experiment_ids: [experimentId] });
  return (found.runs ?? []) as { data?: { metrics?: { key: string; value: number }[] } }[];
}

beforeAll(async () => {
  mlflow = await startMlflowServer();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
  // Another experiment first, so the team's is not id 1: the recipe must use the id MLflow gave it.
  await admin.call('POST', '/api/2.0/mlflow/experiments/create', { name: 'another-team' });
  work = mkdtempSync(join(tmpdir(), 'fg-readme-'));
  mkdirSync(join(work, '.flowgate'));
  writeFileSync(join(work, '.flowgate/admin-token'), ADMIN.token, { mode: 0o600 });
}, 300_000);

afterAll(async () => {
  await fg?.close();
  await mlflow?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe(`README: ${SECTION}`, () => {
  it('has one bash recipe, at the quickstart address, and one Python step 7', () => {
    expect(bashBlocks).toHaveLength(1);
    expect(pythonBlocks).toHaveLength(1);
    expect(bashBlocks[0]).toContain(README_FG);
    expect(bashBlocks[0]).toContain('.flowgate/admin-token');
  });

  it('run literally, leaves the service account able to log runs to the shared experiment (step 7)', async () => {
    const { token, experimentId } = await runRecipe('team-a');
    const r = await step7('team-a', token);
    expect(r.code, r.stderr.slice(-3000)).toBe(0);
    const runs = await runsIn(experimentId);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.data?.metrics).toEqual([expect.objectContaining({ key: 'accuracy', value: 0.93 })]);
    // The ids the block used are the experiment's, not 1 (another experiment holds 1 here).
    expect(experimentId).not.toBe('1');
    for (const grantee of ['users/team-a-pipelines', 'groups/team-a']) {
      const granted = await admin.call('GET', `/api/2.0/mlflow/permissions/${grantee}/experiments/${experimentId}`);
      expect(JSON.stringify(granted)).toContain('EDIT');
    }
  }, 240_000);

  it('catches the drift of issue 38: without the service account grant, step 7 is refused', async () => {
    const { token, experimentId } = await runRecipe('team-b', true);
    const r = await step7('team-b', token);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('PERMISSION_DENIED');
    expect(await runsIn(experimentId)).toHaveLength(0);
  }, 240_000);
});
