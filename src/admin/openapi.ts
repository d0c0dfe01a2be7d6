import { z } from 'zod';
import { ADMIN_API_PREFIXES, routePrefixes } from './routes.js';
import type { AdminRoute } from './types.js';

const ERROR_SCHEMA = {
  type: 'object',
  required: ['error_code', 'message'],
  properties: { error_code: { type: 'string' }, message: { type: 'string' } },
};

const ACCESS_TEXT: Record<AdminRoute['access'], string> = {
  admin: 'Administrators only.',
  authenticated: 'Any authenticated user.',
  self: 'The user named in the path, or an administrator.',
  manage: 'Administrators, or a user holding MANAGE on the resource.',
};

const toOpenApiPath = (p: string) => p.replace(/:([A-Za-z_]+)/g, '{$1}');
const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

/**
 * The OpenAPI 3.1 description, derived from the same route table the router is compiled from, so
 * the two cannot drift; a test also checks every described path against the running server.
 */
export function buildOpenApi(routes: readonly AdminRoute[], version: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [twin] of ADMIN_API_PREFIXES.entries()) {
    for (const route of routes) {
      const prefix = routePrefixes(route)[twin]!;
      const path = toOpenApiPath(prefix + route.path);
      const params = [...route.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => ({
        name: m[1],
        in: 'path',
        required: true,
        schema: { type: 'string' },
      }));
      const op: Record<string, unknown> = {
        operationId: `${route.method.toLowerCase()}${twin === 0 ? '' : 'Ajax'}${route.api === '3.0' ? 'V3' : ''}${route.path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
        summary: route.summary,
        description: ACCESS_TEXT[route.access],
        tags: [route.path.split('/')[3] ?? 'users'],
        security: [{ basicAuth: [] }],
        ...(params.length ? { parameters: params } : {}),
        ...(route.body
          ? {
              requestBody: {
                required: true,
                content: { 'application/json': { schema: z.toJSONSchema(route.body, { io: 'input', unrepresentable: 'any' }) } },
              },
            }
          : {}),
        responses: {
          [String(route.successStatus ?? 200)]: { description: 'Success', content: { 'application/json': { schema: { type: 'object' } } } },
          '400': errorResponse('Invalid request'),
          '401': errorResponse('Not authenticated'),
          '403': errorResponse('Permission denied'),
          '404': errorResponse('Unknown user, group or grant'),
          ...(route.method === 'POST' ? { '409': errorResponse('Already exists') } : {}),
          ...(route.body ? { '413': errorResponse('Body too large') } : {}),
          // Any route: an uncached credential is verified in the store, every answer reads or writes it.
          '503': errorResponse('The policy store (or MLflow, where the route looks something up in it) is not available right now; try again'),
        },
      };
      (paths[path] ??= {})[route.method.toLowerCase()] = op;
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'flowgate admin API',
      version,
      description:
        'Users, service accounts, access tokens, groups and permissions for MLflow behind flowgate. Paths follow mlflow-oidc-auth. ' +
        'A method a path does not serve (TRACE included) is answered 405 METHOD_NOT_ALLOWED with an Allow header; ' +
        'errors are MLflow\'s JSON shape, `{"error_code": …, "message": …}`.',
    },
    components: {
      securitySchemes: { basicAuth: { type: 'http', scheme: 'basic', description: 'username + access token' } },
      schemas: { Error: ERROR_SCHEMA },
    },
    paths,
  };
}
