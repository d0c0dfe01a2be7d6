import { parseArgs } from 'node:util';
import { ROUTE_CATALOG } from '../authz/catalog.js';
import { NEWEST_RELEASE, OLDEST_RELEASE, RECORDED_RELEASES, routesOf } from '../authz/catalog-versions.js';
import { unclassifiedRoutes } from '../authz/mlflow-rules.js';
import { createRouteMatcher } from '../authz/route-matcher.js';
import type { RouteEntry } from '../authz/types.js';
import { connectMlflow } from '../upstream/mlflow-connection.js';
import { readMlflowVersion } from '../upstream/mlflow-version.js';
import { PYPI_MLFLOW_URL, runNewestReleaseCheck } from './newest-mlflow-release.js';

const USAGE =
  'usage: flowgate routes --check [--url URL]   (default URL: FLOWGATE_UPSTREAM_URL and FLOWGATE_UPSTREAM_STATIC_PREFIX)\n' +
  `       flowgate routes --check-newest [--pypi-url URL]   whether the newest MLflow on PyPI is recorded (default URL: ${PYPI_MLFLOW_URL})\n`;

export interface RoutesCheckIo {
  readonly env: NodeJS.ProcessEnv;
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** The catalog checked; flowgate's own unless a test hands another. */
  readonly catalog?: readonly RouteEntry[];
}

/**
 * `flowgate routes --check`: asks a running MLflow its version and says whether this flowgate's
 * catalog classifies every route of that release, from the routes recorded for it
 * (src/authz/catalog-versions.json). For operators about to upgrade MLflow: a route flowgate does
 * not classify is denied to everyone. Exit 0 every route classified, 1 not (or the release was not
 * recorded, or MLflow did not tell its version), 2 usage. `--check-newest` asks PyPI instead
 * (newest-mlflow-release.ts), so a release is recorded before anyone runs it.
 */
export async function runRoutesCheck(args: string[], io: RoutesCheckIo): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: { check: { type: 'boolean' }, url: { type: 'string' }, 'check-newest': { type: 'boolean' }, 'pypi-url': { type: 'string' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    io.err(`flowgate: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values['check-newest'] && !values.check && values.url === undefined) {
    return runNewestReleaseCheck(values['pypi-url'] ?? PYPI_MLFLOW_URL, io);
  }
  if (!values.check || values['check-newest'] || values['pypi-url'] !== undefined) {
    io.err(USAGE);
    return 2;
  }
  const upstreamUrl = (values.url ?? io.env.FLOWGATE_UPSTREAM_URL ?? 'http://127.0.0.1:5000').replace(/\/+$/, '');
  const staticPrefix = values.url === undefined ? (io.env.FLOWGATE_UPSTREAM_STATIC_PREFIX ?? '') : '';
  const mlflow = connectMlflow({ upstreamUrl, staticPrefix, timeoutMs: 10_000 });
  let version: string | undefined;
  try {
    version = await readMlflowVersion(mlflow, 10_000);
  } finally {
    await mlflow.close();
  }
  if (version === undefined) {
    io.err(`flowgate: MLflow at ${upstreamUrl}${staticPrefix} did not answer GET /version with a version\n`);
    return 1;
  }
  const routes = routesOf(version);
  if (routes === undefined) {
    io.out(
      `MLflow ${version}: not a release this flowgate was checked against (${RECORDED_RELEASES.join(', ')}; ` +
        `supported: ${OLDEST_RELEASE} to ${NEWEST_RELEASE}). Its routes are unknown here; any route the catalog ` +
        `does not classify is denied to everyone.\n`,
    );
    return 1;
  }
  const unclassified = unclassifiedRoutes(createRouteMatcher(io.catalog ?? ROUTE_CATALOG), routes);
  if (unclassified.length === 0) {
    io.out(`MLflow ${version}: all ${routes.length} routes classified\n`);
    return 0;
  }
  io.out(`MLflow ${version}: ${unclassified.length} of ${routes.length} routes not classified (denied to everyone):\n`);
  for (const route of unclassified) io.out(`  ${route}\n`);
  return 1;
}
