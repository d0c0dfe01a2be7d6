import { readFileSync, statSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from '../logging.js';
import type { ApiKey } from './api-key.js';
import { checkAgainstFixedKeys, parseKeyFile } from './key-file.js';
import { InferenceConfigError } from './document.js';
import { unreadableFile } from '../unreadable-file.js';

/** The valid keys right now. Readers take a snapshot per request; a reload swaps it whole. */
export interface KeyStore {
  current(): readonly ApiKey[];
  /** Re-reads the file now; false when the new content was rejected and the old keys stay. */
  reload(): boolean;
  close(): void;
}

export interface KeyStoreOptions {
  /** The key file (YAML or JSON), normally a mounted Kubernetes Secret. */
  file?: string;
  /** Keys that do not come from the file (e.g. an environment variable); they never change. */
  fixedKeys?: readonly ApiKey[];
  /** Where the fixed keys come from, for errors naming a clash with them. */
  fixedKeysSource?: string;
  /** Route names a key may be scoped to; a scope naming anything else is rejected. */
  knownRoutes?: ReadonlySet<string>;
  pollIntervalMs?: number;
  logger: Logger;
}

/** Holds keys that never change. */
export function staticKeyStore(keys: readonly ApiKey[]): KeyStore {
  const frozen = Object.freeze([...keys]);
  return { current: () => frozen, reload: () => true, close: () => {} };
}

/** Logged whenever no key at all is valid, at start (index.ts) and after a reload. */
export const NO_KEYS_WARNING = 'no inference keys configured: every keyed inference request will get 401';

/**
 * Loads the key file at once (throwing when it is unreadable or invalid, so a bad start fails
 * fast), then follows it. Kubernetes updates a Secret volume by swapping a `..data` symlink in the
 * file's directory, which a watch on the file itself misses, so the directory is watched, and a
 * periodic stat catches whatever the watch does not (network filesystems, dropped events).
 *
 * A file that is gone after start counts as one listing no keys: removing the Secret entry is how
 * an operator revokes a leaked sole key, and keeping it would leave the key valid until restart.
 * Other read errors (EIO, EACCES) and invalid content keep the last good keys, as they say
 * nothing about which keys should be valid.
 */
export function openKeyStore(opts: KeyStoreOptions): KeyStore {
  const fixed = opts.fixedKeys ?? [];
  const file = opts.file;
  if (!file) return staticKeyStore(fixed);

  const log = opts.logger.child({ component: 'inference-keys' });
  let lastSignature = statSignature(file);
  /** undefined while the file is gone. */
  let lastContent: string | undefined;
  try {
    lastContent = readFileSync(file, 'utf8');
  } catch (e) {
    // At start a file that cannot be read is a configuration mistake (exit 78), said with its path.
    throw new InferenceConfigError(file, [unreadableFile(file, e)]);
  }
  let lastRejected = false;
  const load = (text: string): readonly ApiKey[] => {
    const fromFile = parseKeyFile(text, file, opts.knownRoutes);
    checkAgainstFixedKeys(fromFile, fixed, file, opts.fixedKeysSource ?? 'the environment');
    return Object.freeze([...fromFile, ...fixed]);
  };
  let keys = load(lastContent);
  log.info({ file, keys: keys.length }, 'inference keys loaded');

  const reload = (): boolean => {
    let text: string | undefined;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') {
        log.error({ file, code }, 'inference key file unreadable; keeping the last good keys');
        return false;
      }
    }
    // Unchanged content is not parsed or logged again; a rejected file stays rejected.
    if (text === lastContent) return !lastRejected;
    lastContent = text;
    if (text === undefined) {
      keys = Object.freeze([...fixed]);
      lastRejected = false;
      log.error({ file, keys: keys.length }, 'inference key file is gone; no key from it is accepted until it is back');
      if (keys.length === 0) log.warn(NO_KEYS_WARNING);
      return true;
    }
    try {
      keys = load(text);
      lastRejected = false;
    } catch (e) {
      lastRejected = true;
      const problems = (e as { problems?: readonly string[] }).problems ?? ['unknown error'];
      log.error({ file, problems }, 'inference key file invalid; keeping the last good keys');
      return false;
    }
    log.info({ file, keys: keys.length, ids: keys.map((k) => k.id) }, 'inference keys reloaded');
    if (keys.length === 0) log.warn(NO_KEYS_WARNING);
    return true;
  };

  // Editors and kubelet write in several steps; one reload after the burst is enough.
  let debounce: NodeJS.Timeout | undefined;
  const scheduleReload = () => {
    clearTimeout(debounce);
    debounce = setTimeout(reload, 25);
    debounce.unref();
  };

  let watcher: FSWatcher | undefined;
  try {
    const name = basename(file);
    watcher = watch(dirname(file), { persistent: false }, (_event, changed) => {
      if (!changed || changed === name || changed.startsWith('..')) scheduleReload();
    });
    watcher.on('error', (e) => log.warn({ file, err: e.message }, 'watch on inference key directory failed; polling only'));
  } catch (e) {
    log.warn({ file, err: (e as Error).message }, 'cannot watch inference key directory; polling only');
  }

  const poll = setInterval(() => {
    const signature = statSignature(file);
    if (signature !== lastSignature) {
      lastSignature = signature;
      reload();
    }
  }, opts.pollIntervalMs ?? 10_000);
  poll.unref();

  return {
    current: () => keys,
    reload,
    close: () => {
      clearInterval(poll);
      clearTimeout(debounce);
      watcher?.close();
    },
  };
}

/** stat follows the symlink chain, so a swapped Secret shows up as a new inode. */
function statSignature(file: string): string {
  try {
    const s = statSync(file);
    return `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  } catch {
    return 'missing';
  }
}
