import { z } from 'zod';
import { withScopedTwins } from '../resources/kinds.js';
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

const jsonSchema = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;

/** The statuses a route's success is answered with. */
export const successStatuses = (route: Pick<AdminRoute, 'successStatus'>): readonly number[] =>
  route.successStatus === undefined ? [200] : typeof route.successStatus === 'number' ? [route.successStatus] : route.successStatus;

/** A body the route takes without one sent (every field optional), as the admin API parses it (`parseWith`). */
export const bodyOptional = (body: z.ZodType): boolean => body instanceof z.ZodOptional || body.safeParse({}).success;

/** The query parameters a route reads, from its `query` schema: required where the schema requires the field. */
function queryParameters(route: AdminRoute) {
  if (!route.query) return [];
  const schema = jsonSchema(route.query) as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
  return Object.entries(schema.properties ?? {}).map(([name, property]) => ({
    name,
    in: 'query',
    required: schema.required?.includes(name) ?? false,
    schema: property,
    ...(property.type === 'array' ? { style: 'form', explode: true } : {}),
  }));
}

const SUCCESS_TEXT: Record<number, string> = { 200: 'Success', 201: 'Created' };

/**
 * The OpenAPI 3.1 description, derived from the same route table the router is compiled from (each
 * route's paths, a Skill's `@{organization}` twins included, success statuses, query and body
 * schemas), so the two cannot drift; a test also checks the document against the running server.
 */
export function buildOpenApi(routes: readonly AdminRoute[], version: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [twin] of ADMIN_API_PREFIXES.entries()) {
    for (const route of routes) {
      const prefix = routePrefixes(route)[twin]!;
      for (const routePath of withScopedTwins(route.path)) {
        const path = toOpenApiPath(prefix + routePath);
        const params = [
          ...[...routePath.matchAll(/:([A-Za-z_]+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } })),
          ...queryParameters(route),
        ];
        const op: Record<string, unknown> = {
          operationId: `${route.method.toLowerCase()}${twin === 0 ? '' : 'Ajax'}${route.api === '3.0' ? 'V3' : ''}${routePath.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
          summary: route.summary,
          description: ACCESS_TEXT[route.access],
          tags: [route.path.split('/')[3] ?? 'users'],
          security: [{ basicAuth: [] }],
          ...(params.length ? { parameters: params } : {}),
          ...(route.body
            ? {
                requestBody: {
                  required: !bodyOptional(route.body),
                  content: { 'application/json': { schema: jsonSchema(route.body) } },
                },
              }
            : {}),
          responses: {
            ...Object.fromEntries(
              successStatuses(route).map((status) => [
                String(status),
                { description: SUCCESS_TEXT[status] ?? 'Success', content: { 'application/json': { schema: { type: 'object' } } } },
              ]),
            ),
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
