import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { checkApiKey } from '../../src/inference/api-key.js';
import { openKeyStore, type KeyStore } from '../../src/inference/keys.js';
import { InferenceConfigError } from '../../src/inference/document.js';
import { parseKeyList } from '../../src/inference/key-file.js';
import { createLogger } from '../../src/logging.js';

const OLD = 'old-key-aaaaaaaaaaaaaaaa';
const NEW = 'new-key-bbbbbbbbbbbbbbbb';
const keysYaml = (...entries: Array<[string, string]>) => `keys:\n${entries.map(([id, v]) => `  - id: ${id}\n    value: ${v}\n`).join('')}`;

function captureLogs() {
  const lines: string[] = [];
  return { lines, logger: createLogger('debug', { write: (s: string) => void lines.push(s) }) };
}

/**
 * The layout kubelet gives a Secret volume: `keys.yaml -> ..data/keys.yaml`, `..data -> ..<timestamp>`;
 * an update writes a new timestamped directory and renames a fresh `..data` link over the old one.
 */
const volumes: string[] = [];
afterAll(() => {
  for (const dir of volumes) rmSync(dir, { recursive: true, force: true });
});

function secretVolume(initial: string) {
  const dir = mkdtempSync(join(tmpdir(), 'fg-inf-keys-'));
  volumes.push(dir);
  let generation = 0;
  const publish = (content: string) => {
    generation += 1;
    const version = `..2026_01_01_00_00_0${generation}`;
    mkdirSync(join(dir, version));
    writeFileSync(join(dir, version, 'keys.yaml'), content);
    symlinkSync(version, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    if (generation > 1) rmSync(join(dir, `..2026_01_01_00_00_0${generation - 1}`), { recursive: true });
  };
  publish(initial);
  symlinkSync('..data/keys.yaml', join(dir, 'keys.yaml'));
  return { file: join(dir, 'keys.yaml'), publish };
}

const works = (store: KeyStore, key: string) => checkApiKey(['x-api-key', key], store.current(), { route: 'iris', model: 'iris' }).ok;

describe('inference key store', () => {
  let store: KeyStore | undefined;
  afterEach(() => store?.close());

  it('follows a rotation through a swapped Secret volume without restart: both keys, then only the new', async () => {
    const volume = secretVolume(keysYaml(['old', OLD]));
    const { logger } = captureLogs();
    store = openKeyStore({ file: volume.file, logger, pollIntervalMs: 60_000 }); // the watch alone must see it
    expect(works(store, OLD)).toBe(true);
    expect(works(store, NEW)).toBe(false);

    volume.publish(keysYaml(['old', OLD], ['new', NEW]));
    await vi.waitFor(() => expect(works(store!, NEW)).toBe(true), { timeout: 3000 });
    expect(works(store, OLD)).toBe(true);

    volume.publish(keysYaml(['new', NEW]));
    await vi.waitFor(() => expect(works(store!, OLD)).toBe(false), { timeout: 3000 });
    expect(works(store, NEW)).toBe(true);
  });

  it('picks up a change by polling when no watch event arrives', async () => {
    const volume = secretVolume(keysYaml(['old', OLD]));
    store = openKeyStore({ file: volume.file, logger: captureLogs().logger, pollIntervalMs: 50 });
    volume.publish(keysYaml(['new', NEW]));
    await vi.waitFor(() => expect(works(store!, NEW)).toBe(true), { timeout: 3000 });
    expect(works(store, OLD)).toBe(false);
  });

  it('keeps the last good keys when the new file is invalid, logs that without the keys, and recovers', async () => {
    const volume = secretVolume(keysYaml(['old', OLD]));
    const { lines, logger } = captureLogs();
    store = openKeyStore({ file: volume.file, logger, pollIntervalMs: 50 });

    volume.publish(`keys:\n  - id: broken\n    value: ${NEW}\n    sha256: nothex\n`);
    await vi.waitFor(() => expect(lines.join('')).toContain('inference key file invalid; keeping the last good keys'), { timeout: 3000 });
    expect(works(store, OLD)).toBe(true);
    expect(works(store, NEW)).toBe(false);
    expect(store.reload()).toBe(false);
    expect(lines.join('')).not.toContain(NEW);
    expect(lines.join('')).not.toContain(OLD);

    volume.publish(keysYaml(['new', NEW]));
    await vi.waitFor(() => expect(works(store!, NEW)).toBe(true), { timeout: 3000 });
    expect(works(store, OLD)).toBe(false);
    expect(lines.join('')).not.toContain(NEW);
  });

  it('logs a rejected file without a key that a typo made a field name', async () => {
    const volume = secretVolume(keysYaml(['old', OLD]));
    const { lines, logger } = captureLogs();
    store = openKeyStore({ file: volume.file, logger, pollIntervalMs: 50 });
    volume.publish(`keys:\n  - { id: new, value:${NEW} }\n`); // no space after the colon
    await vi.waitFor(() => expect(lines.join('')).toContain('inference key file invalid; keeping the last good keys'), { timeout: 3000 });
    expect(lines.join('')).not.toContain(NEW);
    expect(lines.join('')).toContain('an unknown field (not named, as it may hold a key)');
    expect(works(store, OLD)).toBe(true);
  });

  it('fails fast when the file is invalid or missing at start', () => {
    const volume = secretVolume('keys:\n  - id: a\n');
    expect(() => openKeyStore({ file: volume.file, logger: captureLogs().logger })).toThrow(/set exactly one of value and sha256/);
    const missing = join(volume.file, '..', 'nosuch.yaml');
    expect(() => openKeyStore({ file: missing, logger: captureLogs().logger })).toThrow(InferenceConfigError);
    expect(() => openKeyStore({ file: missing, logger: captureLogs().logger })).toThrow(`${missing} does not exist`);
  });

  describe('revoking the last key without restart', () => {
    it('stops accepting it once the file lists no keys, and warns', async () => {
      const volume = secretVolume(keysYaml(['leaked', OLD]));
      const { lines, logger } = captureLogs();
      store = openKeyStore({ file: volume.file, logger, pollIntervalMs: 50 });
      volume.publish('keys: []\n');
      await vi.waitFor(() => expect(works(store!, OLD)).toBe(false), { timeout: 3000 });
      expect(store.current()).toEqual([]);
      expect(lines.join('')).toContain('no inference keys configured');
    });

    it('stops accepting it once keys.yaml is gone from the Secret, says so, and takes the file back', async () => {
      const volume = secretVolume(keysYaml(['leaked', OLD]));
      const { lines, logger } = captureLogs();
      const ENV = 'env-key-cccccccccccccccc';
      store = openKeyStore({ file: volume.file, fixedKeys: parseKeyList(ENV), logger, pollIntervalMs: 50 });
      // kubelet removes the entry's link when the Secret no longer holds it.
      volume.publish('unused: true\n');
      unlinkSync(volume.file);
      await vi.waitFor(() => expect(works(store!, OLD)).toBe(false), { timeout: 3000 });
      expect(works(store, ENV)).toBe(true);
      expect(lines.join('')).toContain('inference key file is gone; no key from it is accepted until it is back');
      expect(store.reload()).toBe(true);

      volume.publish(keysYaml(['new', NEW]));
      symlinkSync('..data/keys.yaml', volume.file);
      await vi.waitFor(() => expect(works(store!, NEW)).toBe(true), { timeout: 3000 });
      expect(works(store, OLD)).toBe(false);
    });

    it('keeps the last good keys on a read error that is not a missing file', async () => {
      const volume = secretVolume(keysYaml(['old', OLD]));
      const { lines, logger } = captureLogs();
      store = openKeyStore({ file: volume.file, logger, pollIntervalMs: 50 });
      unlinkSync(volume.file);
      mkdirSync(volume.file); // EISDIR: the file is there but cannot be read
      await vi.waitFor(() => expect(lines.join('')).toContain('inference key file unreadable; keeping the last good keys'), { timeout: 3000 });
      expect(works(store, OLD)).toBe(true);
    });
  });

  it('adds fixed keys (from the environment) to the file keys, across reloads', async () => {
    const volume = secretVolume(keysYaml(['old', OLD]));
    const ENV = 'env-key-cccccccccccccccc';
    store = openKeyStore({ file: volume.file, fixedKeys: parseKeyList(ENV), logger: captureLogs().logger, pollIntervalMs: 50 });
    expect(works(store, ENV)).toBe(true);
    volume.publish(keysYaml(['new', NEW]));
    await vi.waitFor(() => expect(works(store!, NEW)).toBe(true), { timeout: 3000 });
    expect(works(store, ENV)).toBe(true);
  });

  describe('a key or id both in the file and in the environment', () => {
    const ENV = 'env-key-cccccccccccccccc';
    const scoped = (id: string, value: string) => `keys:\n  - { id: ${id}, value: ${value}, routes: [iris] }\n`;
    const open = (file: string, logger = captureLogs().logger) =>
      openKeyStore({ file, fixedKeys: parseKeyList(ENV), fixedKeysSource: 'FLOWGATE_INFERENCE_API_KEYS', knownRoutes: new Set(['iris', 'fraud']), logger, pollIntervalMs: 50 });

    it.each([
      ['the same key and id', scoped('env-1', ENV), ['keys[0].id: "env-1" is also the id of a key from FLOWGATE_INFERENCE_API_KEYS', 'keys[0]: same key as "env-1" from FLOWGATE_INFERENCE_API_KEYS; give each key once']],
      ['the same key', scoped('team-a', ENV), ['keys[0]: same key as "env-1" from FLOWGATE_INFERENCE_API_KEYS; give each key once']],
      ['the same id', scoped('env-1', NEW), ['keys[0].id: "env-1" is also the id of a key from FLOWGATE_INFERENCE_API_KEYS']],
    ])('is refused at start: %s', (_label, text, problems) => {
      const volume = secretVolume(text);
      let error: unknown;
      try {
        store = open(volume.file);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InferenceConfigError);
      expect((error as InferenceConfigError).problems).toEqual(problems);
      expect(String(error)).not.toContain(ENV);
    });

    it('is refused on reload, keeping the last good keys and logging no key', async () => {
      const volume = secretVolume(scoped('team-a', OLD));
      const { lines, logger } = captureLogs();
      store = open(volume.file, logger);
      volume.publish(scoped('team-a', ENV));
      await vi.waitFor(() => expect(lines.join('')).toContain('inference key file invalid; keeping the last good keys'), { timeout: 3000 });
      expect(lines.join('')).toContain('same key as \\"env-1\\" from FLOWGATE_INFERENCE_API_KEYS');
      expect(lines.join('')).not.toContain(ENV);
      expect(store.current().map((k) => k.id)).toEqual(['team-a', 'env-1']);
      expect(works(store, OLD)).toBe(true);
    });
  });

  it('serves only fixed keys when there is no file', () => {
    store = openKeyStore({ fixedKeys: parseKeyList(OLD), logger: captureLogs().logger });
    expect(works(store, OLD)).toBe(true);
    expect(works(store, NEW)).toBe(false);
  });
});
