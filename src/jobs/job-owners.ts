import type { Sql } from '../store/sql.js';

/**
 * Who started each MLflow job. MLflow records a job's creator only when its own auth app stamps the
 * request, so behind flowgate every job's creator is empty; flowgate records the caller from the
 * answers of the routes that start jobs, and that record is what ownership is decided by.
 */
export interface JobOwners {
  /** Records `userId` as the starter of each job; a job already recorded keeps its first owner. */
  record(jobIds: readonly string[], userId: number): Promise<void>;
  /** The user who started the job, or undefined for a job flowgate did not see started (or whose starter was deleted). */
  ownerOf(jobId: string): Promise<number | undefined>;
  /** Which of `jobIds` `userId` started. */
  startedBy(userId: number, jobIds: readonly string[]): Promise<ReadonlySet<string>>;
}

/**
 * One `IN (…)` list's length: a search answer can carry many jobs. Every list is padded to it, so the
 * store prepares one statement for all of them, not one per length.
 */
const CHUNK = 100;

const IN_LIST = Array<string>(CHUNK).fill('?').join(', ');

export function createJobOwners(sql: Sql, now: () => number = Date.now): JobOwners {
  return {
    async record(jobIds, userId) {
      if (jobIds.length === 0) return;
      const at = now();
      await sql.transaction(async () => {
        for (const jobId of new Set(jobIds))
          await sql.run('INSERT INTO job_owners (job_id, user_id, created_at) VALUES (?, ?, ?) ON CONFLICT (job_id) DO NOTHING', [jobId, userId, at]);
      });
    },
    async ownerOf(jobId) {
      const row = await sql.get<{ user_id: number }>('SELECT user_id FROM job_owners WHERE job_id = ?', [jobId]);
      return row?.user_id;
    },
    async startedBy(userId, jobIds) {
      const mine = new Set<string>();
      const unique = [...new Set(jobIds)];
      for (let i = 0; i < unique.length; i += CHUNK) {
        const chunk = unique.slice(i, i + CHUNK);
        const padded = [...chunk, ...Array<string>(CHUNK - chunk.length).fill(chunk[0]!)];
        const rows = await sql.all<{ job_id: string }>(`SELECT job_id FROM job_owners WHERE user_id = ? AND job_id IN (${IN_LIST})`, [userId, ...padded]);
        for (const row of rows) mine.add(row.job_id);
      }
      return mine;
    },
  };
}
