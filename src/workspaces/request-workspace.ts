import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { DEFAULT_WORKSPACE } from './names.js';

/**
 * The workspace the request being served acts in, for the edges that key or ask by it: the policy
 * store and index (grants are keyed per workspace), flowgate's look-ups to MLflow (they carry the
 * caller's `X-MLFLOW-WORKSPACE`) and their caches. Entered once per request, and only when MLflow
 * runs with workspaces: without them nothing is entered and every key is the default workspace's.
 */
const storage = new AsyncLocalStorage<string>();

/** The request's workspace, or undefined outside a request in a non-default workspace. */
export function currentWorkspace(): string | undefined {
  return storage.getStore();
}

/** Whether any work ever entered a named workspace: until then no context anywhere carries one. */
let entered = false;

/** Runs `fn` acting in `workspace` (the default workspace enters nothing: it is what no workspace means). */
export function inWorkspace<T>(workspace: string, fn: () => T): T {
  if (workspace === DEFAULT_WORKSPACE) return storage.exit(fn);
  entered = true;
  return storage.run(workspace, fn);
}

/**
 * `fn`, bound to act in the current request's workspace wherever it is called from: for the work an
 * after-hook does once MLflow's answer has streamed in. Stream events run in the context of whatever
 * made their socket, and a pooled connection to MLflow opened while another request was served in
 * workspace `ws-v` carries `ws-v` for its life: a default-workspace request's hook must be bound to
 * "no workspace" just as firmly, or it keys its grants in `ws-v`.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- AsyncResource.bind's own signature
export function keepingWorkspace<F extends (...args: any[]) => unknown>(fn: F): F {
  return entered ? (AsyncResource.bind(fn) as F) : fn;
}
