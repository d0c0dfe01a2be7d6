import { createHash } from 'node:crypto';
import { badRequest } from '../../errors.js';
import type { PageTokenSealer } from './page-token-sealer.js';

/**
 * flowgate's page token for filtered searches: where to resume in MLflow's own paging — MLflow's
 * token, how many items of that MLflow page to pass over, and the page size used — so no item is
 * repeated or skipped across pages. It is sealed (see page-token-sealer.ts): the caller learns
 * nothing from it, not even from its length, and it opens only for the same caller and search.
 */
export interface ResumePoint {
  readonly upstreamToken: string | undefined;
  readonly skip: number;
  readonly pageSize: number;
}

export interface PageTokens {
  encode(p: ResumePoint): string;
  /** The resume point, undefined for no token; a token not issued for this caller and search is a 400. */
  decode(raw: unknown): ResumePoint | undefined;
}

/** Which search a token belongs to. */
export interface SearchIdentity {
  readonly username: string;
  /** Method and route, e.g. `POST /api/2.0/mlflow/experiments/search`. */
  readonly route: string;
  /** The search's parameters as the client sent them; the page token and page size are not part of its identity. */
  readonly params: Record<string, unknown>;
  /**
   * MLflow's token repeats the search's parameters (logged models): its length then follows the
   * client's parameters, and the padding must cover them.
   */
  readonly upstreamTokenRepeatsQuery?: boolean;
}

/**
 * Plaintext bytes of every token: MLflow's offset tokens (~30 characters) with room to spare, so
 * an offset's digits never change a token's length.
 */
const PADDED_BYTES = 256;
/**
 * Upper bound of MLflow's token bytes per parameter byte when it repeats the query: JSON's
 * `\uXXXX` escapes (6 per byte at worst) in base64 (4/3).
 */
const REPEATED_QUERY_GROWTH = 8;
const NOT_OURS = 'Invalid page_token: not issued for this caller and search, or expired';

/** Keys sorted at every level, so the same search hashes the same however its JSON was ordered. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) out[key] = canonical((value as Record<string, unknown>)[key]);
  return out;
}

function searchParams(params: Record<string, unknown>): string {
  const { page_token: _token, max_results: _size, ...rest } = params;
  return JSON.stringify(canonical(rest));
}

export function pageTokensFor(sealer: PageTokenSealer, search: SearchIdentity): PageTokens {
  // Worked out on a token's first use: most searches fit one page and carry no token either way.
  let sealing: { readonly binding: Buffer; readonly paddedBytes: number } | undefined;
  const sealed = () => {
    if (sealing) return sealing;
    const query = searchParams(search.params);
    const binding = createHash('sha256')
      .update(JSON.stringify(['flowgate page token v2', search.username, search.route, query]))
      .digest();
    return (sealing = { binding, paddedBytes: PADDED_BYTES + (search.upstreamTokenRepeatsQuery ? REPEATED_QUERY_GROWTH * Buffer.byteLength(query) : 0) });
  };

  return {
    encode(p: ResumePoint): string {
      const payload = Buffer.from(JSON.stringify({ t: p.upstreamToken ?? null, s: p.skip, n: p.pageSize }));
      const { binding, paddedBytes } = sealed();
      return sealer.seal(payload, binding, paddedBytes);
    },
    decode(raw: unknown): ResumePoint | undefined {
      if (raw === undefined || raw === null || raw === '') return undefined;
      if (typeof raw !== 'string') throw badRequest(NOT_OURS);
      const payload = sealer.open(raw, sealed().binding);
      if (!payload) throw badRequest(NOT_OURS);
      try {
        const v = JSON.parse(payload.toString('utf8')) as { t: unknown; s: unknown; n: unknown };
        if ((v.t !== null && typeof v.t !== 'string') || !Number.isInteger(v.s) || !Number.isInteger(v.n)) throw new Error();
        const skip = v.s as number;
        const pageSize = v.n as number;
        if (skip < 0 || pageSize < 1 || skip >= pageSize) throw new Error();
        return { upstreamToken: (v.t as string | null) ?? undefined, skip, pageSize };
      } catch {
        throw badRequest(NOT_OURS);
      }
    },
  };
}
