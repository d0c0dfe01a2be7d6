/**
 * How long a stop waits for the last spans or decision events to be exported. The exporter retries
 * an unreachable collector until its own timeout; a stop (a rolling update, SIGTERM within the pod's
 * grace period) must not wait that long for telemetry, so what is not out by then is dropped.
 */
export const SHUTDOWN_WAIT_MS = 3000;

/** Shuts a provider down, giving up waiting after `SHUTDOWN_WAIT_MS` (its export goes on unawaited). */
export function shutdownWithin(shutdown: () => Promise<void>, waitMs = SHUTDOWN_WAIT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, waitMs);
    timer.unref();
  });
  return Promise.race([shutdown().catch(() => undefined), waited]).finally(() => clearTimeout(timer));
}
