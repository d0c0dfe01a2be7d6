import { FlowgateError } from '../errors.js';
import { LazyLru } from '../lazy-lru.js';
import type { LegacyPasswordRepo } from './legacy-password-repo.js';
import { hashToken } from './token.js';
import { parseWerkzeugHash, werkzeugPasswordMatches } from './werkzeug-hash.js';

/** A user an imported password proved. */
export interface LegacyPasswordUser {
  readonly userId: number;
  readonly username: string;
}

export interface LegacyPasswordOptions {
  readonly repo: LegacyPasswordRepo;
  readonly cacheSize: number;
  /** How long one successful check is trusted before the hash is checked again. */
  readonly ttlMs?: number;
  /**
   * Hash checks running at once, beyond which a check is refused rather than queued: each costs a
   * slow KDF (scrypt's 32 MiB), so wrong passwords sent in bulk must not exhaust CPU or memory. The
   * refusal is a 503 with Retry-After, not a 401: a right password arriving during a flood of wrong
   * ones is told to come back (MLflow's client retries a 503), not that it is wrong.
   */
  readonly maxConcurrent?: number;
  readonly now?: () => number;
  /** A stored hash flowgate cannot check (told once per user, never with the hash). */
  readonly onUnsupported?: (username: string) => void;
}

const DEFAULT_TTL_MS = 60_000;

const busy = () =>
  new FlowgateError('TEMPORARILY_UNAVAILABLE', 'Too many password checks are running at once; retry in a second', { 'Retry-After': '1' });

/**
 * Passwords imported from MLflow basic-auth (`flowgate import mlflow-basic-auth`), checked against
 * their werkzeug hashes the way werkzeug does. basic-auth runs its KDF on every request; here a
 * success is remembered (keyed by the SHA-256 of the credentials as sent, never the password) for a
 * short while, so only the first request of a client pays for it. A failure is never remembered.
 */
export function createLegacyPasswordVerifier(opts: LegacyPasswordOptions) {
  const now = opts.now ?? Date.now;
  const ttlMs = opts.ttlMs ?? DEFAULT_TTL_MS;
  const maxConcurrent = opts.maxConcurrent ?? 4;
  const cache = new LazyLru<string, LegacyPasswordUser>({ max: opts.cacheSize, ttl: ttlMs, ttlAutopurge: false, perf: { now } });
  const toldUnsupported = new Set<number>();
  let running = 0;
  /** Bumped whenever users are forgotten: a check that started before must not cache what it read. */
  let generation = 0;

  async function verifyInFull(encoded: string): Promise<LegacyPasswordUser | undefined> {
    const decoded = Buffer.from(encoded, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon <= 0) return undefined;
    const row = await opts.repo.live(decoded.slice(0, colon));
    if (!row) return undefined;
    const hash = parseWerkzeugHash(row.password_hash);
    if (!hash) {
      if (!toldUnsupported.has(row.user_id)) {
        toldUnsupported.add(row.user_id);
        opts.onUnsupported?.(row.username);
      }
      return undefined;
    }
    if (running >= maxConcurrent) throw busy();
    running++;
    try {
      return (await werkzeugPasswordMatches(hash, decoded.slice(colon + 1))) ? { userId: row.user_id, username: row.username } : undefined;
    } finally {
      running--;
    }
  }

  return {
    /** A success still remembered, without I/O; undefined when there is none (or no password was ever remembered). */
    cached(encoded: string): LegacyPasswordUser | undefined {
      return cache.size === 0 ? undefined : cache.get(hashToken(encoded));
    },
    /** Checks the credentials (`base64(username:password)`) against the user's imported hash. */
    async verify(encoded: string): Promise<LegacyPasswordUser | undefined> {
      const startedAt = generation;
      const user = await verifyInFull(encoded);
      // Only the standard spelling is remembered, as for tokens: one credential has endless base64 spellings.
      if (user && startedAt === generation && Buffer.from(Buffer.from(encoded, 'base64').toString('utf8'), 'utf8').toString('base64') === encoded)
        cache.set(hashToken(encoded), user);
      return user;
    },
    /** The user's tokens, name or existence changed: their remembered checks go. */
    forgetUser(userId: number): void {
      generation++;
      for (const [key, entry] of cache.entries()) if (entry.userId === userId) cache.delete(key);
    },
    forgetAll(): void {
      generation++;
      cache.clear();
    },
  };
}

export type LegacyPasswordVerifier = ReturnType<typeof createLegacyPasswordVerifier>;
