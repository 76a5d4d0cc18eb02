/**
 * What a bounded cache reports: its size, its capacity and what happened to it. Plain numbers,
 * so `weft.stats()` can list every cache of a device the same way.
 */
export interface CacheStats {
  /** Entries held now (never more than `capacity`). */
  readonly size: number;
  /** The most entries the cache holds; beyond it the least recently used entry is evicted. */
  readonly capacity: number;
  /** Lookups that found their entry. */
  readonly hits: number;
  /** Lookups that did not (each usually followed by a creation). */
  readonly misses: number;
  /** Entries dropped to stay within `capacity` (explicit deletes and `clear` are not counted). */
  readonly evictions: number;
}

/** Options of an {@link LruCache}. */
export interface LruCacheOptions<K, V> {
  /**
   * Called with every entry the cache evicts to stay within its capacity (not for `delete` or
   * `clear`), after it left the cache: release what the value holds here.
   */
  readonly onEvict?: (key: K, value: V) => void;
}

/**
 * A map with a capacity: beyond it, the least recently used entry is evicted. What every cache
 * of Weft that is keyed by something users can vary without limit (shapes, scalars, graph
 * structures) is built on, so nothing grows with the number of distinct requests.
 *
 * @remarks
 * **Why our own.** `@weft/environment` has no dependencies, and a `Map` keeps insertion order:
 * re-inserting an entry on every hit makes that order the recency order, so the oldest key is
 * always the least recently used one — an LRU in a few lines, with the counters
 * ({@link CacheStats}) the caches report.
 * **Recency.** {@link LruCache.get} and {@link LruCache.getOrCreate} refresh an entry;
 * {@link LruCache.peek} and {@link LruCache.has} do not.
 * **Bound.** At most `capacity` entries, always: {@link LruCache.set} evicts before it returns.
 * **Eviction is not destruction.** An evicted value may still be used by whoever fetched it
 * before (a launch waiting for a pipeline, say); `onEvict` must only release what is safe to
 * release while such users finish, and the next lookup of the key creates a new value.
 */
export class LruCache<K, V> {
  /** Entries, least recently used first (see the type doc). */
  readonly #entries = new Map<K, V>();
  readonly #onEvict: ((key: K, value: V) => void) | undefined;
  #capacity: number;
  #hits = 0;
  #misses = 0;
  #evictions = 0;

  constructor(capacity: number, options: LruCacheOptions<K, V> = {}) {
    this.#capacity = LruCache.#checkCapacity(capacity);
    this.#onEvict = options.onEvict;
  }

  static #checkCapacity(capacity: number): number {
    if (!Number.isSafeInteger(capacity) || capacity < 1) {
      throw new RangeError(`LruCache: capacity must be a positive integer, got ${capacity}`);
    }
    return capacity;
  }

  /** The most entries held. */
  get capacity(): number {
    return this.#capacity;
  }

  /** Changes the capacity, evicting the least recently used entries beyond the new one. */
  set capacity(capacity: number) {
    this.#capacity = LruCache.#checkCapacity(capacity);
    this.#trim();
  }

  /** Entries held now. */
  get size(): number {
    return this.#entries.size;
  }

  /** The value of `key`, refreshed as the most recently used; counts a hit or a miss. */
  get(key: K): V | undefined {
    const value = this.#entries.get(key);
    if (value === undefined) {
      this.#misses++;
      return undefined;
    }
    this.#hits++;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  /** The value of `key` without refreshing it or counting anything. */
  peek(key: K): V | undefined {
    return this.#entries.get(key);
  }

  /** Whether `key` is held (no refresh, no count). */
  has(key: K): boolean {
    return this.#entries.has(key);
  }

  /** Stores `value` under `key` as the most recently used entry, evicting beyond the capacity. */
  set(key: K, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    this.#trim();
  }

  /**
   * The value of `key` (a hit), else `create()` stored under it (a miss). A `create` that throws
   * stores nothing.
   */
  getOrCreate(key: K, create: () => V): V {
    const found = this.get(key);
    if (found !== undefined) return found;
    const value = create();
    this.set(key, value);
    return value;
  }

  /** Removes `key` (not counted as an eviction, no `onEvict`). Returns whether it was held. */
  delete(key: K): boolean {
    return this.#entries.delete(key);
  }

  /** Removes every entry (no `onEvict`); the counters are kept. */
  clear(): void {
    this.#entries.clear();
  }

  /** The values, least recently used first. */
  values(): IterableIterator<V> {
    return this.#entries.values();
  }

  /** The keys, least recently used first. */
  keys(): IterableIterator<K> {
    return this.#entries.keys();
  }

  /** Size, capacity and counters (see {@link CacheStats}). */
  stats(): CacheStats {
    return { size: this.#entries.size, capacity: this.#capacity, hits: this.#hits, misses: this.#misses, evictions: this.#evictions };
  }

  #trim(): void {
    while (this.#entries.size > this.#capacity) {
      const oldest = this.#entries.entries().next();
      if (oldest.done === true) return;
      const [key, value] = oldest.value;
      this.#entries.delete(key);
      this.#evictions++;
      this.#onEvict?.(key, value);
    }
  }
}
