import type { Explanation } from '../../src/admin/api-types.js';
import { PINNED } from './pin';

/** The admin API's answers, declared with the server (src/admin/api-types.ts). */
export type * from '../../src/admin/api-types.js';

/** Every screen's one way to flowgate: the admin API (and MLflow's own API for names), with the session's CSRF token. */
const meta = (name: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? '';

export const BASE = meta('flowgate-base');
const CSRF = meta('flowgate-csrf');

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The answer's `error_code` (`RESOURCE_ALREADY_EXISTS`, …), when it had one. */
    readonly code = '',
  ) {
    super(message);
  }
}

/** Where a database's own words start in an MLflow message (SQLAlchemy's, the driver's, the SQL itself): never shown. */
const DATABASE_TEXT = /\s*(\(raised as a result of|\((sqlite3|psycopg2?|pymysql|MySQLdb|pyodbc|sqlalchemy)[.\w]*\)|\[SQL:|\(Background on this error|Error: \(|\(\w+\.(IntegrityError|OperationalError|ProgrammingError|DataError)\))/;

/** An error's message for people: MLflow's own words, up to where the database's begin. */
export function readableMessage(message: string, code = ''): string {
  const at = message.search(DATABASE_TEXT);
  if (at < 0) return message;
  const kept = message.slice(0, at).replace(/[\s.:;,]+$/, '');
  if (kept) return `${kept}.`;
  return code === 'RESOURCE_ALREADY_EXISTS' ? 'It already exists.' : 'MLflow could not store this change.';
}

export function loginHref(): string {
  const here = location.pathname + location.search + location.hash;
  return `${BASE}/flowgate/login?return_to=${encodeURIComponent(here)}`;
}

export type Query = Record<string, string | number | undefined | readonly string[]>;

export function qs(query: Query = {}): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === '') continue;
    if (Array.isArray(v)) for (const x of v) p.append(k, x);
    else p.append(k, String(v));
  }
  const s = p.toString();
  return s ? `?${s}` : '';
}

/** `path` is relative to `/ajax-api/2.0/mlflow/`. */
export function api<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T> {
  return call<T>(method, `/ajax-api/2.0/mlflow/${path}`, body);
}

/** One of MLflow's own calls by its path from MLflow's root (`/api/3.0/…`), through flowgate as MLflow's page makes it (`/ajax-api/…`). */
export function mlflow<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T> {
  return call<T>(method, path.replace(/^\/api\//, '/ajax-api/'), body);
}

async function call<T>(method: string, path: string, body: unknown): Promise<T> {
  const r = await fetch(`${BASE}${path}`, {
    method,
    credentials: 'same-origin',
    headers: {
      Accept: 'application/json',
      'X-Flowgate-CSRF': CSRF,
      // The workspace fixed as the screens loaded (pin.ts), never MLflow's choice of the moment.
      ...(PINNED ? { 'X-MLFLOW-WORKSPACE': PINNED } : {}),
      ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  if (r.status === 401) {
    location.assign(loginHref());
    throw new ApiError(401, 'Your session has ended; signing in again');
  }
  const json = (await r.json().catch(() => ({}))) as { message?: string; error_code?: string };
  if (!r.ok) throw new ApiError(r.status, readableMessage(json.message ?? `HTTP ${r.status}`, json.error_code), json.error_code);
  return json as T;
}

/** Path segment: names may hold any character. */
export const seg = (s: string) => encodeURIComponent(s);

export const trackingUri = () => `${location.origin}${BASE}/`;

/** `target` is the request's path from MLflow's root with its query; `body` its JSON body, if any. */
export function explain(username: string, method: string, target: string, body?: unknown): Promise<Explanation> {
  const json = body === undefined ? undefined : JSON.stringify(body);
  return api<Explanation>('GET', `permissions/explain${qs({ username, method, path: target, body: json })}`);
}
