import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const DESCRIPTION = '[3/5] Preparing the pinned MLflow venv (reused when present; the first install takes a few minutes)';

/** scripts/progress.sh's long_step, as setup.sh and quickstart.sh use it, with its waiting lines a second apart. */
async function longStep(command: string): Promise<{ lines: string[]; code: number }> {
  const log = join(mkdtempSync(join(tmpdir(), 'fg-progress-')), 'step.log');
  const script = `PROGRESS_NAME=quickstart PROGRESS_EVERY=1; . scripts/progress.sh; long_step "$1" "$2" bash -c "$3"`;
  try {
    const { stderr } = await run('bash', ['-c', script, 'test', log, DESCRIPTION, command]);
    return { lines: stderr.trimEnd().split('\n'), code: 0 };
  } catch (e) {
    const err = e as { stderr: string; code: number };
    return { lines: err.stderr.trimEnd().split('\n'), code: err.code };
  }
}

describe('long_step progress', () => {
  it('says the long description once, then short lines with the title and the seconds', async () => {
    const { lines, code } = await longStep('sleep 3.5');
    expect(code).toBe(0);
    expect(lines.filter((l) => l.includes('reused when present'))).toHaveLength(1);
    expect(lines[0]).toMatch(/^quickstart: \[3\/5\] Preparing the pinned MLflow venv \(reused when present; .*\) \(output in .*step\.log\)$/);
    const waiting = lines.slice(1, -1);
    expect(waiting.length).toBeGreaterThanOrEqual(2);
    for (const line of waiting) expect(line).toMatch(/^quickstart: {3}… \[3\/5\] Preparing the pinned MLflow venv: \d+ s$/);
    expect(lines.at(-1)).toMatch(/^quickstart: {3}done in \d+ s$/);
  });

  it('on failure names the step by its title and shows the end of its log', async () => {
    const { lines, code } = await longStep('echo pip said no; exit 3');
    expect(code).toBe(1);
    expect(lines).toContainEqual(expect.stringMatching(/^quickstart: failed after \d+ s: \[3\/5\] Preparing the pinned MLflow venv; the end of .*step\.log:$/));
    expect(lines.at(-1)).toBe('pip said no');
  });
});
