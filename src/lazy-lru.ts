import { LRUCache } from 'lru-cache';

/**
 * An lru-cache made on its first write. lru-cache allocates all of its `max` slots when it is built
 * (two arrays of `max` entries on the JavaScript heap, four with a TTL: 160–320 KB at 10k), and most of
 * flowgate's caches stay empty in a given deployment (look-ups of MLflow features it does not use,
 * imported passwords, pattern grants): their slots would be memory held from the start, and marked by
 * every full collection.
 */
export class LazyLru<K extends {}, V extends {}> {
  #cache: LRUCache<K, V> | undefined;
  readonly #options: LRUCache.Options<K, V, unknown>;

  constructor(options: LRUCache.Options<K, V, unknown>) {
    this.#options = options;
  }

  get size(): number {
    return this.#cache?.size ?? 0;
  }

  get(key: K): V | undefined {
    return this.#cache?.get(key);
  }

  set(key: K, value: V): void {
    (this.#cache ??= new LRUCache<K, V>(this.#options)).set(key, value);
  }

  delete(key: K): boolean {
    return this.#cache?.delete(key) ?? false;
  }

  clear(): void {
    this.#cache?.clear();
  }

  *entries(): Generator<[K, V]> {
    if (this.#cache) yield* this.#cache.entries();
  }
}
