import { spawn, type ChildProcess } from 'node:child_process';

/** Process groups still running, killed if the test process exits without stopping them. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // Already gone.
  }
}

export interface SupervisedGroup {
  /** The last of what the server printed (stdout and stderr), for failure messages. */
  readonly logs: () => string;
  /** SIGTERM, then SIGKILL after `graceMs` and for any straggler in the group; idempotent. */
  readonly stop: () => Promise<void>;
}

/**
 * A watchdog that kills the group once the test process is gone, however it went (a signal, SIGKILL, a
 * runner that timed out): a shell blocked reading a pipe only this process holds, which reads end-of-file
 * when the process dies. Killed first on a normal stop, so it never fires at a group id used again.
 */
function watchdogFor(pgid: number): ChildProcess {
  const dog = spawn('sh', ['-c', `read _; kill -KILL -${pgid} 2>/dev/null`], { stdio: ['pipe', 'ignore', 'ignore'] });
  dog.on('error', () => undefined);
  dog.unref();
  (dog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return dog;
}

/**
 * A server started with `detached: true` (its own process group, so the processes it forks go with
 * it): keeps its last `keptChunks` pieces of output, stops the whole group, and kills it if the
 * test process exits first (or dies without exiting: `watchdogFor`).
 */
export function superviseGroup(child: ChildProcess, keptChunks: number, graceMs: number): SupervisedGroup {
  const pgid = child.pid;
  if (pgid === undefined) throw new Error('could not spawn the server');
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const group of liveGroups) killGroup(group, 'SIGKILL');
    });
  }
  liveGroups.add(pgid);
  const watchdog = watchdogFor(pgid);
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > keptChunks) output.splice(0, output.length - keptChunks);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      watchdog.kill('SIGKILL');
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((r) => child.once('exit', () => r()));
        killGroup(pgid, 'SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, graceMs))]);
      }
      killGroup(pgid, 'SIGKILL');
      liveGroups.delete(pgid);
    })());
  return { logs: () => output.join(''), stop };
}
