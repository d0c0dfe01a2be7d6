/**
 * PostgreSQL's client-side deadline when none is set: longer than the statement timeout, so the
 * server cancels a slow statement first (and keeps the connection); the client gives up only on a
 * server that does not answer at all.
 */
export const defaultQueryTimeoutMs = (statementTimeoutMs: number): number => statementTimeoutMs + 1000;
