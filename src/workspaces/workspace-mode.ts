import type { Logger } from '../logging.js';
import type { UpstreamJson } from '../upstream/json-client.js';

/** MLflow's answer naming its features; `workspaces_enabled` since 3.11 (older releases have no workspaces). */
const SERVER_INFO = '/api/3.0/mlflow/server-info';

/** How often MLflow is asked again once it has said. */
const REASK_MS = 1000;

/**
 * Whether the MLflow behind flowgate runs with workspaces: asked at start (and, until MLflow has said,
 * again as requests come, at most once a second), then followed from every readiness probe's answer
 * and asked again for a request naming a workspace when the last word is over a second old (the entry
 * does that), so a restart of MLflow with or without `--enable-workspaces` is followed. An answer that
 * does not say keeps what was known.
 */
export function createWorkspaceMode(upstream: UpstreamJson, logger: Logger, now: () => number = Date.now) {
  let enabled = false;
  let known = false;
  /** One question at a time, and at most one a second (a burst of readiness probes asks once). */
  let asking: Promise<void> | undefined;
  let askedAt = -Infinity;
  /** When MLflow last said (asked, or a readiness probe's answer read). */
  let saidAt = -Infinity;

  async function ask(): Promise<void> {
    let on: boolean | undefined;
    try {
      const answer = await upstream.call('GET', SERVER_INFO, {});
      if (answer.status === 404) on = false;
      else if (answer.status === 200) on = (answer.json as { workspaces_enabled?: unknown } | undefined)?.workspaces_enabled === true;
    } catch {
      return;
    }
    if (on !== undefined) learn(on);
  }

  function learn(on: boolean): void {
    saidAt = now();
    const changed = !known || on !== enabled;
    known = true;
    if (!changed) return;
    enabled = on;
    logger.info({ workspaces: on }, on ? 'MLflow runs with workspaces: grants are kept per workspace' : 'MLflow runs without workspaces');
  }

  return {
    get enabled(): boolean {
      return enabled;
    },
    /**
     * The start of MLflow's `server-info` answer as the readiness probe read it: followed without a
     * call of its own (a flag the answer does not hold within what was read changes nothing).
     */
    observe(text: string): void {
      const flag = /"workspaces_enabled"\s*:\s*(true|false)/.exec(text);
      if (flag) learn(flag[1] === 'true');
    },
    /** Whether MLflow has said yet: until it has, a request naming a workspace is not decided. */
    get known(): boolean {
      return known;
    },
    /** Whether what MLflow said is at most `ms` old. */
    saidWithin(ms: number): boolean {
      return now() - saidAt <= ms;
    },
    refresh(): Promise<void> {
      if (asking) return asking;
      if (now() - askedAt < REASK_MS) return Promise.resolve();
      askedAt = now();
      asking = ask().finally(() => {
        asking = undefined;
      });
      return asking;
    },
  };
}

export type WorkspaceMode = ReturnType<typeof createWorkspaceMode>;

