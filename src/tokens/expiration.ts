import { badRequest } from '../errors.js';

const DAY_MS = 86_400_000;
export const DEFAULT_TOKEN_DAYS = 90;

/**
 * Tokens always expire: an omitted expiration gets the default (capped by the maximum); a given one
 * must be an ISO 8601 instant in the future and no further than the maximum.
 */
export function resolveExpiration(raw: string | undefined, now: number, maxDays: number): number {
  if (raw === undefined) return now + Math.min(DEFAULT_TOKEN_DAYS, maxDays) * DAY_MS;
  if (!/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(raw))
    throw badRequest(`expiration must be an ISO 8601 timestamp such as 2026-12-31T00:00:00Z, got '${raw.slice(0, 40)}'`);
  const at = Date.parse(raw);
  if (Number.isNaN(at)) throw badRequest(`expiration '${raw.slice(0, 40)}' is not a valid date`);
  if (at <= now) throw badRequest('expiration must be in the future');
  if (at > now + maxDays * DAY_MS) throw badRequest(`expiration must be at most ${maxDays} days ahead`);
  return at;
}
