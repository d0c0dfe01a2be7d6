import { compareVersions, NEWEST_RELEASE, isRecordedRelease } from '../authz/catalog-versions.js';

/** PyPI's JSON API for the mlflow project; a mirror serving the same API (devpi, Artifactory) may stand in. */
export const PYPI_MLFLOW_URL = 'https://pypi.org/pypi/mlflow/json';

interface PypiFile {
  readonly yanked?: boolean;
}

interface PypiProject {
  readonly info?: { readonly version?: unknown };
  readonly releases?: Record<string, readonly PypiFile[] | undefined>;
}

// Final releases only: an rc or dev build is not what operators upgrade to.
const FINAL_RELEASE = /^\d+\.\d+\.\d+$/;

/**
 * The newest final release that `pip install mlflow==X` can fetch: at least one file not yanked.
 * Without a `releases` map (some mirrors leave it out), PyPI's own `info.version`.
 */
export function newestInstallable(project: PypiProject): string | undefined {
  if (project.releases !== undefined) {
    const installable = Object.entries(project.releases)
      .filter(([version, files]) => FINAL_RELEASE.test(version) && (files ?? []).some((f) => f.yanked !== true))
      .map(([version]) => version)
      .sort(compareVersions);
    return installable[installable.length - 1];
  }
  const version = project.info?.version;
  return typeof version === 'string' && FINAL_RELEASE.test(version) ? version : undefined;
}

export interface NewestCheckIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

/**
 * `flowgate routes --check-newest`: whether the newest MLflow on PyPI is among the releases the catalog
 * was recorded against, so a new release is known the day it is installable. Exit 0 recorded, 1 not
 * (or PyPI did not answer with a release).
 */
export async function runNewestReleaseCheck(pypiUrl: string, io: NewestCheckIo): Promise<number> {
  let project: PypiProject;
  try {
    const response = await fetch(pypiUrl, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(30_000) });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    project = (await response.json()) as PypiProject;
  } catch (e) {
    // fetch's own message is only "fetch failed"; the reason (refused, DNS, TLS) is its cause.
    const cause = (e as Error).cause instanceof Error ? `: ${((e as Error).cause as Error).message}` : '';
    io.err(`flowgate: could not read MLflow's releases from ${pypiUrl}: ${(e as Error).message}${cause}\n`);
    return 1;
  }
  const newest = newestInstallable(project ?? {});
  if (newest === undefined) {
    io.err(`flowgate: ${pypiUrl} lists no installable MLflow release\n`);
    return 1;
  }
  if (isRecordedRelease(newest)) {
    io.out(`MLflow ${newest}, the newest release on PyPI, is recorded\n`);
    return 0;
  }
  io.out(
    `MLflow ${newest}, the newest release on PyPI, is not recorded (newest recorded: ${NEWEST_RELEASE}). ` +
      `Until it is, \`flowgate routes --check\` calls it unknown. Record it: ` +
      `npm run build && node scripts/mlflow-matrix.mjs record ${newest}\n`,
  );
  return 1;
}
