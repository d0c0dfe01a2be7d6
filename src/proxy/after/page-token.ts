import { badRequest } from '../../errors.js';

/**
 * flowgate's page token for filtered searches: where to resume in MLflow's own paging — MLflow's
 * token, how many items of that MLflow page were already consumed, and the page size used — so no
 * item is repeated or skipped across pages. Tampering can only move the caller within results
 * that are filtered anyway.
 */
export interface ResumePoint {
  readonly upstreamToken: string | undefined;
  readonly skip: number;
  readonly pageSize: number;
}

const PREFIX = 'fg1.';

export function encodePageToken(p: ResumePoint): string {
  return PREFIX + Buffer.from(JSON.stringify({ t: p.upstreamToken ?? null, s: p.skip, n: p.pageSize })).toString('base64url');
}

export function decodePageToken(raw: unknown): ResumePoint | undefined {
  if (raw === undefined || raw === null || raw === '') return undefined;
  if (typeof raw !== 'string' || !raw.startsWith(PREFIX)) throw badRequest('Invalid page_token');
  try {
    const v = JSON.parse(Buffer.from(raw.slice(PREFIX.length), 'base64url').toString('utf8')) as { t: unknown; s: unknown; n: unknown };
    if ((v.t !== null && typeof v.t !== 'string') || !Number.isInteger(v.s) || !Number.isInteger(v.n)) throw new Error();
    const skip = v.s as number;
    const pageSize = v.n as number;
    if (skip < 0 || pageSize < 1 || pageSize > 100_000 || skip >= pageSize) throw new Error();
    return { upstreamToken: (v.t as string | null) ?? undefined, skip, pageSize };
  } catch {
    throw badRequest('Invalid page_token');
  }
}
