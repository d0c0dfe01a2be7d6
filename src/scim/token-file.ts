import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';

/** A SCIM token shorter than this is refused at start and ignored when the file is rewritten. */
export const MIN_SCIM_TOKEN_LENGTH = 32;

export interface ScimTokenOptions {
  readonly file: string;
  /** How long the token a rewrite replaced is still accepted, so the identity provider can be switched over. */
  readonly graceMs: number;
  /** The file is looked at again no more often than this. */
  readonly recheckMs?: number;
  readonly now?: () => number;
  readonly onProblem?: (message: string) => void;
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * The bearer token SCIM clients present, read from a file (a mounted Secret) and followed as it is
 * rewritten: the new token is accepted at once, and the one it replaced for `graceMs` more. Tokens
 * are compared as SHA-256 digests with `timingSafeEqual`, so neither their length nor a common
 * prefix shows in the time an answer takes. A rewrite to something too short or unreadable keeps
 * the token in force (and is reported), rather than locking provisioning out or opening it.
 */
export function createScimToken(o: ScimTokenOptions) {
  const now = o.now ?? Date.now;
  const recheckMs = o.recheckMs ?? 1000;
  let current: Buffer;
  let previous: { digest: Buffer; until: number } | undefined;
  let seen = '';
  let checkedAt = 0;

  const stamp = (): string => {
    const s = statSync(o.file);
    return `${s.mtimeMs}:${s.size}:${s.ino}`;
  };
  const read = (): string => readFileSync(o.file, 'utf8').trim();

  const first = read();
  if (first.length < MIN_SCIM_TOKEN_LENGTH) throw new Error(`the SCIM token must be at least ${MIN_SCIM_TOKEN_LENGTH} characters`);
  current = digest(first);
  seen = stamp();
  checkedAt = now();

  function refresh(): void {
    const t = now();
    if (t - checkedAt < recheckMs) return;
    checkedAt = t;
    try {
      const s = stamp();
      if (s === seen) return;
      seen = s;
      const text = read();
      if (text.length < MIN_SCIM_TOKEN_LENGTH) {
        o.onProblem?.(`the SCIM token file was rewritten with fewer than ${MIN_SCIM_TOKEN_LENGTH} characters; the token in force stays`);
        return;
      }
      const next = digest(text);
      if (timingSafeEqual(next, current)) return;
      previous = { digest: current, until: t + o.graceMs };
      current = next;
    } catch {
      o.onProblem?.('the SCIM token file cannot be read; the token in force stays');
    }
  }

  return {
    /** Whether `presented` is the token in force, or the one it replaced within its grace. */
    accepts(presented: string): boolean {
      refresh();
      const d = digest(presented);
      const isCurrent = timingSafeEqual(d, current);
      const isPrevious = previous !== undefined && now() < previous.until && timingSafeEqual(d, previous.digest);
      return isCurrent || isPrevious;
    },
  };
}

export type ScimToken = ReturnType<typeof createScimToken>;
