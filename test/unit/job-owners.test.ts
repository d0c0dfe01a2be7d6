import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobOwners } from '../../src/jobs/job-owners.js';
import { startedJobIds } from '../../src/proxy/hooks/job-hooks.js';
import type { Sql } from '../../src/store/sql.js';
import { freshStore } from '../helpers/test-store.js';

/** Issue 35: who started each MLflow job, on the store the suite runs on (SQLite, or PostgreSQL). */
let sql: Sql;
let close: () => Promise<void>;
const user = async (name: string) => {
  await sql.run('INSERT INTO users (username, display_name, created_at) VALUES (?, ?, ?)', [name, name, 1]);
  return (await sql.get<{ id: number }>('SELECT id FROM users WHERE username = ?', [name]))!.id;
};

beforeAll(async () => {
  ({ sql, close } = await freshStore());
});
afterAll(async () => {
  await close?.();
});

describe('job starters', () => {
  it('records the starter, keeps the first one, and answers which jobs a user started', async () => {
    const owners = createJobOwners(sql);
    const ann = await user('job-ann');
    const bob = await user('job-bob');
    await owners.record(['j-1', 'j-2', 'j-1'], ann);
    await owners.record(['j-2', 'j-3'], bob);
    expect(await owners.ownerOf('j-1')).toBe(ann);
    expect(await owners.ownerOf('j-2')).toBe(ann);
    expect(await owners.ownerOf('j-3')).toBe(bob);
    expect(await owners.ownerOf('j-none')).toBeUndefined();
    expect([...(await owners.startedBy(ann, ['j-1', 'j-2', 'j-3', 'j-none']))].sort()).toEqual(['j-1', 'j-2']);
    expect([...(await owners.startedBy(bob, []))]).toEqual([]);
  });

  it('answers over more jobs than one IN list holds', async () => {
    const owners = createJobOwners(sql);
    const cat = await user('job-cat');
    const many = Array.from({ length: 1203 }, (_, i) => `many-${i}`);
    await owners.record(many, cat);
    expect((await owners.startedBy(cat, [...many, 'other'])).size).toBe(1203);
  });

  it("forgets a deleted user's jobs: nobody owns them any more", async () => {
    const owners = createJobOwners(sql);
    const dan = await user('job-dan');
    await owners.record(['j-dan'], dan);
    await sql.run('DELETE FROM users WHERE id = ?', [dan]);
    expect(await owners.ownerOf('j-dan')).toBeUndefined();
  });
});

describe('the jobs an answer says were started', () => {
  it.each([
    [{ job_id: 'a', run_id: 'r' }, ['a']],
    [{ jobs: [{ job_id: 'a', trace_ids: ['t'] }, { job_id: 'b' }, { job_id: '' }, { job_id: 7 }, 'x'] }, ['a', 'b']],
    [{ job: { job_id: 'p', state: {} } }, ['p']],
    [{ jobs: 'not a list' }, []],
    [null, []],
    [['a'], []],
  ])('%j → %j', (answer, ids) => {
    expect(startedJobIds(answer)).toEqual(ids);
  });
});
