import { FlowgateError } from '../errors.js';

/**
 * The store did not answer in time, lost its connection, or cannot take a write (a full disk, a
 * read-only file, a standby): the same request may succeed in a moment, so the client is told 503
 * in MLflow's shape, which the MLflow client retries. `detail` is for flowgate's log only.
 */
export class StoreUnavailableError extends FlowgateError {
  /** The driver's code and message, any connection URL in it without its password. */
  readonly detail: string;
  /** The connection is in an unknown state (mid-statement when given up): closed, never reused or rolled back over. */
  readonly connectionLost: boolean;

  constructor(detail: string, connectionLost = false) {
    super('TEMPORARILY_UNAVAILABLE', 'The policy store is not available right now; try again shortly');
    this.name = 'StoreUnavailableError';
    this.detail = redactSecrets(detail);
    this.connectionLost = connectionLost;
  }
}

/**
 * Two requests created the same thing at once: both found it absent, one insert won, the other met
 * the unique index. The loser is told what a request that came second would have been told.
 */
export class StoreDuplicateError extends FlowgateError {
  constructor(table: string | undefined, constraint: string | undefined) {
    super('RESOURCE_ALREADY_EXISTS', duplicateMessage(table, constraint));
    this.name = 'StoreDuplicateError';
  }
}

function duplicateMessage(table: string | undefined, constraint: string | undefined): string {
  switch (table) {
    case 'users':
      return constraint?.includes('oidc') ? 'That identity-provider account is already linked to a user' : 'A user of that name already exists';
    case 'groups':
      return 'A group of that name already exists';
    case 'grants':
      return 'The grantee already has a permission on that resource; use PATCH to change it';
    case 'pattern_grants':
      return 'The grantee already has a pattern grant with that pattern; use PATCH to change it';
    case 'access_tokens':
      return 'The user already has a live access token of that name';
    default:
      return 'It already exists';
  }
}

/** Passwords in connection URLs (`scheme://user:password@`) and `password=…` settings. */
export function redactSecrets(text: string): string {
  return text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^:/@\s]*:)[^@\s]*@/gi, '$1***@').replace(/(password\s*=\s*)\S+/gi, '$1***');
}

/** PostgreSQL SQLSTATEs that say "not now" rather than "never": the connection, the server's state, a timeout. */
const PG_UNAVAILABLE = new Set(['57P01', '57P02', '57P03', '53000', '53100', '53200', '53300', '57014', '25006', '55P03', '40001', '40P01']);
/** node-postgres's own errors for a server that does not answer or went away. */
const PG_CLIENT_LOST = [/^Query read timeout$/, /^timeout exceeded when trying to connect$/, /^Connection terminated/, /is not queryable/, /^Cannot use a pool after calling end/];
const NET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
const SQLITE_UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|READONLY|CANTOPEN|NOMEM|PROTOCOL)/;

/**
 * A failure of the store as the rest of flowgate should see it: a `StoreUnavailableError` (503), a
 * `StoreDuplicateError` (409), or the error unchanged (a bug, a broken schema: 500 as before).
 */
export function storeError(err: unknown): unknown {
  if (!(err instanceof Error) || err instanceof FlowgateError) return err;
  const code = (err as { code?: unknown }).code;
  const text = typeof code === 'string' ? `${code}: ${err.message}` : err.message;
  if (typeof code === 'string') {
    if (code === '23505') {
      const e = err as { table?: string; constraint?: string };
      return new StoreDuplicateError(e.table, e.constraint);
    }
    if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
      // "UNIQUE constraint failed: users.username" (or "…: users.oidc_issuer, users.oidc_subject")
      const columns = /failed: (.*)$/.exec(err.message)?.[1];
      return new StoreDuplicateError(columns?.split('.')[0], columns);
    }
    if (code.startsWith('08') && code.length === 5) return new StoreUnavailableError(text, true);
    if (PG_UNAVAILABLE.has(code)) return new StoreUnavailableError(text);
    if (NET_CODES.has(code)) return new StoreUnavailableError(text, true);
    if (SQLITE_UNAVAILABLE.test(code)) return new StoreUnavailableError(text);
  }
  if (PG_CLIENT_LOST.some((p) => p.test(err.message))) return new StoreUnavailableError(text, true);
  if (err instanceof TypeError && /database connection is not open/.test(err.message)) return new StoreUnavailableError(text);
  return err;
}

/** For `.catch`: rethrows what `storeError` makes of it. */
export function rethrowStoreError(err: unknown): never {
  throw storeError(err);
}
