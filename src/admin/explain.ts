import { z } from 'zod';
import { badRequest, forbidden } from '../errors.js';
import type { Explanation } from './api-types.js';
import { requireUser } from './lookups.js';
import type { AdminRoute } from './types.js';
import { parseWith } from './validation.js';
import { normalizeTarget } from '../proxy/normalize-path.js';

const explainQuery = z.strictObject({
  username: z.string().min(1).optional(),
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
  path: z.string().startsWith('/', { message: "must be the request's path, starting with /" }).max(4096),
  body: z.string().max(1024 * 1024).optional(),
});

/**
 * A path with its query, as a client would send it, read as the gate reads a request's: normalized
 * (`//`, `.` and `..` segments, backslashes, one decoding), so what is explained is what the gate decides,
 * and what the gate refuses outright is a 400 here too. The query is kept apart.
 */
function splitTarget(target: string): { path: string; search: string } {
  const { path, search } = normalizeTarget(target);
  return { path, search: search === '' ? '' : `?${search}` };
}

export const EXPLAIN_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/mlflow/permissions/explain',
    summary: 'Explain the decision on a request for a user: the catalog row, the resources, every grant considered and the deciding check',
    // Anyone may ask about themself; asking about someone else takes an administrator (checked below).
    access: 'authenticated',
    query: explainQuery,
    handler: async (req, deps) => {
      if (!deps.explain) throw badRequest('Explanations are not available on this flowgate');
      const q = parseWith(explainQuery, Object.fromEntries(req.query), 'query');
      const username = q.username ?? req.principal.username;
      if (username !== req.principal.username && !req.principal.isAdmin)
        throw forbidden(`Permission denied: ${req.principal.username} may only ask about their own access`, 'not-self');
      const user = await requireUser(deps, username);
      const principal = await deps.principalOf?.(user.id);
      if (!principal) throw badRequest(`User '${username}' cannot be explained`);
      let body: unknown;
      if (q.body !== undefined) {
        try {
          body = JSON.parse(q.body) as unknown;
        } catch {
          throw badRequest("Parameter 'body' must be the request's JSON body");
        }
      }
      const { path, search } = splitTarget(q.path);
      // Someone who is not an administrator learns nothing here about what they may not read.
      const explanation = await deps.explain(principal, { method: q.method, path, search, body }, { onlyReadable: !req.principal.isAdmin });
      return { status: 200, body: { username, ...explanation } satisfies Explanation };
    },
  },
];
