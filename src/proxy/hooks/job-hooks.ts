import { relayAfter } from '../after/relay.js';
import { rewriteJsonAnswer } from '../after/rewrite-json.js';
import { hookFailed, obj, REWRITTEN_ANSWER_MAX_BYTES, type Hook } from './types.js';

const jobId = (v: unknown): string[] => {
  const id = obj(v).job_id;
  return typeof id === 'string' && id !== '' ? [id] : [];
};

/**
 * The jobs an answer says were started, in each shape MLflow answers them: `{job_id}` (evaluation,
 * issue detection, a submitted job), `{jobs: [{job_id}]}` (a scorer run, one job per batch of traces)
 * and `{job: {job_id}}` (prompt optimization).
 */
export function startedJobIds(json: unknown): string[] {
  const answer = obj(json);
  const batches = Array.isArray(answer.jobs) ? answer.jobs.flatMap(jobId) : [];
  return [...jobId(answer), ...batches, ...jobId(answer.job)];
}

/** Records the caller as the starter of the jobs MLflow's answer names, before the client learns their ids. */
export const recordJobStarter: Hook = ({ principal, hook }, ctx) => ({
  onResponse: relayAfter(async (json) => {
    await ctx.jobStarters.record(startedJobIds(json), principal.userId);
  }, hookFailed(ctx, hook)),
});

/**
 * A job search answers a non-administrator only the jobs they started (MLflow's rule: by the creator it
 * records, and a job with none stays hidden). Fails closed: an answer that cannot be read is not passed on.
 */
export const filterStartedJobs: Hook = ({ principal, req, hook }, ctx) => {
  delete req.headers['accept-encoding'];
  return {
    onResponse: rewriteJsonAnswer(
      async (json) => {
        const answer = obj(json);
        const jobs = Array.isArray(answer.jobs) ? answer.jobs : [];
        const mine = await ctx.jobStarters.startedBy(principal.userId, jobs.flatMap(jobId));
        answer.jobs = jobs.filter((job) => jobId(job).some((id) => mine.has(id)));
      },
      REWRITTEN_ANSWER_MAX_BYTES,
      hookFailed(ctx, hook),
    ),
  };
};
