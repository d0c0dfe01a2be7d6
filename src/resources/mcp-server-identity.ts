/**
 * An MCP server's name, as MLflow 3.15+ validates it (`validate_mcp_server_name`):
 * `<namespace>/<slug>`, exactly one `/`, a reverse-DNS namespace and a slug that is not one of the
 * registry's own path words. MLflow's routes take the name as `{name:path}`, so a path carries it in
 * two segments (`…/mcp-servers/com.example/tools/versions/1.0.0`); MLflow's basic-auth reads the
 * first two segments as the name, and so does flowgate. A name MLflow would refuse is refused here
 * too (a 400 before MLflow sees it): the sub-route words it reserves (`versions`, `tags`, …) then never
 * pass for a slug, so flowgate's reading of a path and MLflow's router's cannot name different servers.
 */

/** MLflow's `_MCP_SERVER_NAME_NAMESPACE_RE`. */
const NAMESPACE = /^[a-zA-Z0-9][a-zA-Z0-9.-]*[a-zA-Z0-9]$/;
/** MLflow's `_MCP_SERVER_NAME_SLUG_RE`. */
const SLUG = /^[a-zA-Z0-9][a-zA-Z0-9._-]*[a-zA-Z0-9]$/;
/** MLflow's `_MCP_SERVER_RESERVED_SLUGS`: the registry's sub-route words. */
const RESERVED_SLUGS: ReadonlySet<string> = new Set(['aliases', 'endpoints', 'tags', 'versions']);
/** MLflow's check sets none (its column holds 256 characters); flowgate's names stop here, as a registered model's do. */
const MAX_LENGTH = 500;

/** Why MLflow would refuse this as an MCP server's name, or undefined when it takes it. */
export function mcpServerNameProblem(name: unknown): string | undefined {
  const shape = "an MCP server's name is <reverse-dns namespace>/<server slug>, such as com.example/server-name";
  if (typeof name !== 'string' || name === '') return `${shape}: it must be a non-empty string`;
  if (name.length > MAX_LENGTH) return `${shape}, at most ${MAX_LENGTH} characters`;
  const parts = name.split('/');
  if (parts.length !== 2) return `'${name}' is not one: ${shape}`;
  const [namespace, slug] = parts as [string, string];
  if (!NAMESPACE.test(namespace) || !SLUG.test(slug) || RESERVED_SLUGS.has(slug)) return `'${name}' is not one: ${shape}`;
  return undefined;
}

/** The name's place in MLflow's MCP paths: `/<namespace>/<slug>`, each segment encoded. */
export function mcpServerPathOf(name: string): string {
  return `/${name.split('/').map(encodeURIComponent).join('/')}`;
}
