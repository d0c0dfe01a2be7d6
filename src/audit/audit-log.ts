import type { Sql } from '../store/sql.js';

export interface AuditEntry {
  readonly actor: string;
  readonly action: string;
  readonly target: string;
  readonly oldValue?: unknown;
  readonly newValue?: unknown;
}

interface Row {
  id: number;
  at: number;
  actor: string;
  action: string;
  target: string;
  old_value: string | null;
  new_value: string | null;
}

/**
 * Every change to principals, tokens and grants. Callers record inside the same transaction as the
 * change, and pass only values that are safe to keep: never a token.
 */
const INSERT = 'INSERT INTO audit_log (at, actor, action, target, old_value, new_value) VALUES (?, ?, ?, ?, ?, ?)';
const PAGE = 'SELECT * FROM audit_log WHERE id < ? ORDER BY id DESC LIMIT ?';
const FILTERED = `SELECT * FROM audit_log WHERE id < ?
       AND (CAST(? AS TEXT) = '' OR actor = ?)
       AND (CAST(? AS TEXT) = '' OR substr(action, 1, length(CAST(? AS TEXT))) = ?)
       AND instr(target, CAST(? AS TEXT)) > 0
     ORDER BY id DESC LIMIT ?`;

export function createAuditLog(sql: Sql, now: () => number = Date.now) {
  const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v));
  const entry = (r: Row) => ({
    id: r.id,
    at: new Date(r.at).toISOString(),
    actor: r.actor,
    action: r.action,
    target: r.target,
    old_value: r.old_value === null ? null : (JSON.parse(r.old_value) as unknown),
    new_value: r.new_value === null ? null : (JSON.parse(r.new_value) as unknown),
  });
  return {
    async record(e: AuditEntry): Promise<void> {
      await sql.run(INSERT, [now(), e.actor, e.action, e.target, json(e.oldValue), json(e.newValue)]);
    },
    /** Newest first; `beforeId` pages backwards. */
    async list(limit: number, beforeId = Number.MAX_SAFE_INTEGER) {
      return (await sql.all<Row>(PAGE, [beforeId, limit])).map(entry);
    },
    /** Newest first, by exact actor, action prefix and target substring (empty = any). */
    async search(f: { actor: string; action: string; target: string }, limit: number, beforeId = Number.MAX_SAFE_INTEGER) {
      return (await sql.all<Row>(FILTERED, [beforeId, f.actor, f.actor, f.action, f.action, f.action, f.target, limit])).map(entry);
    },
  };
}

export type AuditLog = ReturnType<typeof createAuditLog>;
