import type { IncomingMessage, ServerResponse } from 'node:http';
import type SCIMMY from 'scimmy';
import { FlowgateError } from '../errors.js';
import { isClientGone, readBody } from '../http/body.js';
import type { OwnRoute } from '../http/own-route.js';
import type { Logger } from '../logging.js';
import { activeStringsAsBooleans } from './active-strings.js';
import { ScimError, scimErrorBody, toScimError } from './errors.js';
import type { RateLimiter } from '../http/rate-limit.js';
import type { OneAtATime, ScimResourceName } from './one-at-a-time.js';
import type { ScimBackend } from './scimmy.js';
import type { ScimToken } from './token-file.js';

export const SCIM_PREFIX = '/scim/v2';
const SCIM_JSON = 'application/scim+json';
const CHALLENGE = 'Bearer realm="flowgate SCIM"';
/** RFC 7644 lets a server cap a page; scimmy's ServiceProviderConfig says the same number. */
const MAX_PAGE = 200;
const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;
/** The one bucket of requests carrying the token (the one it replaced within its grace included: one provider switching over). */
const THE_TOKEN = 'scim-token';

export interface ScimRouteDeps {
  readonly scimmy: typeof SCIMMY;
  readonly backend: ScimBackend;
  /** Serializes the changes to one resource across every flowgate on the store (one-at-a-time.ts). */
  readonly oneAtATime: OneAtATime;
  readonly token: ScimToken;
  /**
   * Requests carrying the SCIM token are counted together (`accepted`: the identity provider's,
   * from whatever address), requests without it per client address (`refused`).
   */
  readonly limits: { readonly accepted: RateLimiter; readonly refused: RateLimiter };
  readonly maxBodyBytes: number;
  readonly logger: Logger;
}

interface ScimResource {
  read(ctx?: unknown): Promise<unknown>;
  write(body: unknown, ctx?: unknown): Promise<unknown>;
  patch(body: unknown, ctx?: unknown): Promise<unknown>;
  dispose(ctx?: unknown): Promise<void>;
}
type ResourceClass = new (idOrParams?: string | Record<string, unknown>, params?: Record<string, unknown>) => ScimResource;

interface Answer {
  readonly status: number;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}

const versionOf = (resource: unknown): string | undefined => {
  const v = (resource as { meta?: { version?: unknown } } | undefined)?.meta?.version;
  return typeof v === 'string' ? v : undefined;
};

/** RFC 7232's list of entity tags, weak or strong (SCIM versions are weak, compared weakly). */
const tagMatches = (header: string | undefined, version: string | undefined): boolean =>
  header !== undefined &&
  (header.trim() === '*' || (version !== undefined && header.split(',').some((t) => t.trim().replace(/^W\//, '') === version.replace(/^W\//, ''))));

/**
 * scimmy leaves `schemas` out when `attributes` narrows a resource, though RFC 7643 returns it
 * always (clients read the resource's type from it): put back.
 */
function withSchemas(body: unknown, schema: string): unknown {
  const fix = (r: unknown) => (r && typeof r === 'object' && !('schemas' in r) ? { schemas: [schema], ...r } : r);
  const list = body as { Resources?: unknown[] } | undefined;
  if (list && Array.isArray(list.Resources)) return { ...list, Resources: list.Resources.map(fix) };
  return fix(body);
}

function queryOf(search: string): Record<string, unknown> {
  const q = new URLSearchParams(search);
  const out: Record<string, unknown> = {};
  for (const key of ['filter', 'attributes', 'excludedAttributes', 'sortBy', 'sortOrder'] as const) {
    const v = q.get(key);
    if (v !== null) out[key] = v;
  }
  for (const key of ['startIndex', 'count'] as const) {
    const v = q.get(key);
    if (v === null) continue;
    if (!/^-?[0-9]{1,9}$/.test(v)) throw new ScimError(400, 'invalidValue', `${key} must be an integer`);
    out[key] = Number(v);
  }
  return out;
}

/** The paging and filter parameters of a list, page size capped. */
function listParams(params: Record<string, unknown>): Record<string, unknown> {
  const count = typeof params.count === 'number' ? Math.min(Math.max(params.count, 0), MAX_PAGE) : MAX_PAGE;
  return { ...params, count };
}

/**
 * SCIM 2.0 (RFC 7643/7644) under `/scim/v2`: the discovery endpoints, Users and Groups, through
 * scimmy (schemas, filters, PATCH, list responses). Every request must carry the SCIM bearer token
 * and is rate-limited: those with it against the token, those without it per client address.
 * Refusals and failures answer in SCIM's error shape, since the clients here are identity
 * providers, not MLflow's.
 */
export function createScimRoute(d: ScimRouteDeps): OwnRoute {
  const { Resources } = d.scimmy;
  // scimmy's constructors take an id, query parameters, or both; its own types want one shape per call.
  const User = Resources.User as unknown as ResourceClass;
  const Group = Resources.Group as unknown as ResourceClass;
  const ResourceType = Resources.ResourceType as unknown as ResourceClass;
  const Schema = Resources.Schema as unknown as ResourceClass;

  async function readJson(req: IncomingMessage): Promise<unknown> {
    const raw = await readBody(req, d.maxBodyBytes);
    if (raw.length === 0) return undefined;
    try {
      return JSON.parse(raw.toString('utf8'));
    } catch {
      throw new ScimError(400, 'invalidSyntax', 'The request body is not JSON');
    }
  }

  async function resources(name: ScimResourceName, kind: ResourceClass, schema: string, req: IncomingMessage, method: string, id: string | undefined, search: string): Promise<Answer> {
    const answer = await resourcesOf(name, kind, req, method, id, search);
    return answer.body === undefined || answer.status >= 300 ? answer : { ...answer, body: withSchemas(JSON.parse(JSON.stringify(answer.body)), schema) };
  }

  async function resourcesOf(name: ScimResourceName, kind: ResourceClass, req: IncomingMessage, method: string, id: string | undefined, search: string): Promise<Answer> {
    const ctx = d.backend;
    if (id === '.search') {
      if (method !== 'POST') return notAllowed(['POST']);
      const body = (await readJson(req)) as Record<string, unknown> | undefined;
      const params: Record<string, unknown> = {};
      for (const k of ['filter', 'attributes', 'excludedAttributes', 'sortBy', 'sortOrder', 'startIndex', 'count'])
        if (body && body[k] !== undefined) params[k] = Array.isArray(body[k]) ? (body[k] as unknown[]).join(',') : body[k];
      return { status: 200, body: await new kind(listParams(params)).read(ctx) };
    }
    if (id === undefined) {
      if (method === 'GET') return { status: 200, body: await new kind(listParams(queryOf(search))).read(ctx) };
      if (method === 'POST') {
        const made = await new kind(queryOf(search)).write(await readJson(req), ctx);
        const location = (made as { meta?: { location?: string } }).meta?.location;
        return { status: 201, body: made, headers: { ...etag(made), ...(location ? { Location: location } : {}) } };
      }
      return notAllowed(['GET', 'POST']);
    }
    const params = queryOf(search);
    const current = () => new kind(id, params).read(ctx);
    if (method === 'GET') {
      const found = await current();
      if (tagMatches(req.headers['if-none-match'], versionOf(found))) return { status: 304, headers: etag(found) };
      return { status: 200, body: found, headers: etag(found) };
    }
    if (!['PUT', 'PATCH', 'DELETE'].includes(method)) return notAllowed(['GET', 'PUT', 'PATCH', 'DELETE']);
    // Read before the resource is locked: a slow client holds no lock.
    const read = method === 'DELETE' ? undefined : await readJson(req);
    const body = method === 'PATCH' && name === 'Users' ? activeStringsAsBooleans(read) : read;
    // A PATCH reads the resource, applies its operations and writes the whole back: from the read
    // (the If-Match check's included) to the last write, no other change to it runs, here or on
    // another flowgate on the store, lest one write back what the other changed.
    return d.oneAtATime(name, id, method === 'DELETE', async (): Promise<Answer> => {
      const ifMatch = req.headers['if-match'];
      if (ifMatch !== undefined && !tagMatches(ifMatch, versionOf(await current())))
        return error(412, 'The resource changed since that version was read (If-Match)');
      if (method === 'DELETE') {
        await new kind(id).dispose(ctx);
        return { status: 204 };
      }
      const after = method === 'PUT' ? await new kind(id, params).write(body, ctx) : ((await new kind(id, params).patch(body, ctx)) ?? (await current()));
      return { status: 200, body: after, headers: etag(after) };
    });
  }

  async function route(req: IncomingMessage, method: string, segments: readonly string[], search: string): Promise<Answer> {
    const [endpoint, id, extra] = segments;
    if (extra !== undefined) return error(404, 'No such SCIM endpoint');
    switch (endpoint) {
      case 'Users':
        return resources('Users', User, Resources.User.schema.id, req, method, id, search);
      case 'Groups':
        return resources('Groups', Group, Resources.Group.schema.id, req, method, id, search);
      case '.search':
        // RFC 7644 §3.4.3 lets a server not search all resource types at once.
        return { status: 501, body: scimErrorBody(501, 'Searching several resource types at once is not supported; search /Users or /Groups') };
      case 'ServiceProviderConfig':
        if (method !== 'GET') return notAllowed(['GET']);
        if (id !== undefined) return error(404, 'No such SCIM endpoint');
        return { status: 200, body: await new Resources.ServiceProviderConfig().read() };
      case 'ResourceTypes':
        if (method !== 'GET') return notAllowed(['GET']);
        return { status: 200, body: await (id === undefined ? new ResourceType(queryOf(search)) : new ResourceType(id)).read() };
      case 'Schemas':
        if (method !== 'GET') return notAllowed(['GET']);
        return { status: 200, body: await (id === undefined ? new Schema(queryOf(search)) : new Schema(id)).read() };
      default:
        return error(404, 'No such SCIM endpoint');
    }
  }

  function refusal(e: unknown): Answer {
    const scim = toScimError(e);
    if (scim instanceof d.scimmy.Types.Error) {
      const { status, scimType, message } = scim as unknown as { status: number; scimType?: string; message: string };
      return { status: Number(status), body: scimErrorBody(Number(status), message, scimType) };
    }
    // A filter or body scimmy could not read arrives as its own TypeError.
    if (e instanceof TypeError) return { status: 400, body: scimErrorBody(400, e.message, 'invalidValue') };
    throw e;
  }

  function send(res: ServerResponse, a: Answer): void {
    const headers: Record<string, string> = { 'Cache-Control': 'no-store', ...a.headers };
    if (a.body === undefined) {
      res.writeHead(a.status, headers);
      res.end();
      return;
    }
    const text = JSON.stringify(a.body);
    res.writeHead(a.status, { ...headers, 'Content-Type': SCIM_JSON, 'Content-Length': String(Buffer.byteLength(text)) });
    res.end(text);
  }

  return async (req, res, ctx) => {
    if (ctx.path !== SCIM_PREFIX && !ctx.path.startsWith(`${SCIM_PREFIX}/`)) return false;
    // The token first, then the limit its answer says: behind an ingress every client has the
    // ingress's address, so a per-address limit ahead of the token let anyone without it keep the
    // identity provider at 429, and its de-provisioning waiting. The provider's requests spend the
    // token's budget alone; requests without the token, their address's.
    const presented = BEARER.exec(req.headers.authorization ?? '')?.[1];
    const accepted = presented !== undefined && d.token.accepts(presented);
    const wait = accepted ? d.limits.accepted.take(THE_TOKEN) : d.limits.refused.take(req.socket.remoteAddress ?? 'unknown');
    if (wait > 0) {
      send(res, { status: 429, body: scimErrorBody(429, 'Too many SCIM requests; slow down'), headers: { 'Retry-After': String(wait) } });
      return true;
    }
    if (!accepted) {
      const detail = presented === undefined ? 'SCIM requests need the SCIM bearer token' : 'The SCIM bearer token is not valid';
      send(res, { status: 401, body: scimErrorBody(401, detail), headers: { 'WWW-Authenticate': presented === undefined ? CHALLENGE : `${CHALLENGE}, error="invalid_token"` } });
      return true;
    }
    const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
    const segments = ctx.path.slice(SCIM_PREFIX.length).split('/').filter(Boolean);
    let answer: Answer;
    try {
      answer = await route(req, method, segments, ctx.search);
    } catch (e) {
      if (isClientGone(e)) return true;
      try {
        answer = e instanceof FlowgateError && e.status !== 409 && e.status !== 400 ? { status: e.status, body: scimErrorBody(e.status, e.message) } : refusal(e);
      } catch (unexpected) {
        d.logger.error({ err: { message: (unexpected as Error).message }, requestId: ctx.requestId }, 'SCIM request failed');
        answer = { status: 500, body: scimErrorBody(500, 'The SCIM request failed inside flowgate') };
      }
    }
    send(res, answer);
    return true;
  };

  function etag(resource: unknown): Record<string, string> {
    const v = versionOf(resource);
    return v ? { ETag: v } : {};
  }
  function notAllowed(allowed: readonly string[]): Answer {
    return { status: 405, body: scimErrorBody(405, 'Method not allowed here'), headers: { Allow: allowed.join(', ') } };
  }
  function error(status: number, detail: string): Answer {
    return { status, body: scimErrorBody(status, detail) };
  }
}
