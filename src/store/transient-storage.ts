import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * An AsyncLocalStorage switched on only while one of its runs is under way. On Node 20 an enabled
 * storage installs promise hooks that run for every promise in the process, so a store whose
 * transactions are rare (the bootstrap admin at start, admin writes, the readiness write) would
 * otherwise tax every request for the life of the process.
 */
export interface TransientStorage<T> {
  getStore(): T | undefined;
  run<R>(value: T, fn: () => Promise<R>): Promise<R>;
}

export function transientStorage<T>(): TransientStorage<T> {
  const storage = new AsyncLocalStorage<T>();
  let running = 0;
  return {
    getStore: () => (running === 0 ? undefined : storage.getStore()),
    async run<R>(value: T, fn: () => Promise<R>): Promise<R> {
      running++;
      try {
        return await storage.run(value, fn);
      } finally {
        // What `fn` left running past its end is outside the transaction, which has ended.
        if (--running === 0) storage.disable();
      }
    },
  };
}
