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

/** One entry of an {@link LruCache}: its key and value, between its neighbours in recency order. */
interface LruNode<K, V> {
  readonly key: K;
  value: V;
  /** The next less recently used entry (`undefined` for the least recently used). */
  older: LruNode<K, V> | undefined;
  /** The next more recently used entry (`undefined` for the most recently used). */
  newer: LruNode<K, V> | undefined;
}

/**
 * A map with a capacity: beyond it, the least recently used entry is evicted. What every cache
 * of Weft that is keyed by something users can vary without limit (shapes, scalars, graph
 * structures) is built on, so nothing grows with the number of distinct requests.
 *
 * @remarks
 * **Why our own.** `@weft/environment` has no dependencies; this is a `Map` from keys to entries
 * that are also linked in recency order, with the counters ({@link CacheStats}) the caches report.
 * **Why a list, not the `Map`'s order.** Re-inserting an entry on every hit (delete, then set)
 * also keeps a `Map` in recency order, but V8 then leaves a deleted slot per hit and rebuilds
 * the whole table every few hundred hits. The caches of the launch path (compiled kernels,
 * pipelines, launch plans) are hit on every launch: on the 2-core machine (2026-11-30) those
 * rebuilds were ~2% of a CPU serving request in a `perf` profile, and the cache itself another
 * 1.5%. A hit now relinks one entry: no `Map` write, nothing allocated.
 * **Recency.** {@link LruCache.get} and {@link LruCache.getOrCreate} refresh an entry;
 * {@link LruCache.peek} and {@link LruCache.has} do not.
 * **Bound.** At most `capacity` entries, always: {@link LruCache.set} evicts before it returns.
 * **Eviction is not destruction.** An evicted value may still be used by whoever fetched it
 * before (a launch waiting for a pipeline, say); `onEvict` must only release what is safe to
 * release while such users finish, and the next lookup of the key creates a new value.
 */
export class LruCache<K, V> {
  /** Entries by key; the same entries are linked from {@link LruCache.#oldest} to `#newest`. */
  readonly #entries = new Map<K, LruNode<K, V>>();
  /** The least recently used entry. */
  #oldest: LruNode<K, V> | undefined;
  /** The most recently used entry. */
  #newest: LruNode<K, V> | undefined;
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

  /** Entries evicted to stay within the capacity so far (as in {@link LruCache.stats}, without building it). */
  get evictions(): number {
    return this.#evictions;
  }

  /** Entries held now. */
  get size(): number {
    return this.#entries.size;
  }

  /** The value of `key`, refreshed as the most recently used (a hit), or `undefined` (a miss). */
  get(key: K): V | undefined {
    const node = this.#entries.get(key);
    if (node === undefined) {
      this.#misses++;
      return undefined;
    }
    this.#hits++;
    this.#refresh(node);
    return node.value;
  }

  /** The value of `key` without refreshing it or counting anything. */
  peek(key: K): V | undefined {
    return this.#entries.get(key)?.value;
  }

  /** Whether `key` is held (no refresh, no count). */
  has(key: K): boolean {
    return this.#entries.has(key);
  }

  /** Stores `value` under `key` as the most recently used entry, evicting beyond the capacity. */
  set(key: K, value: V): void {
    const found = this.#entries.get(key);
    if (found !== undefined) {
      found.value = value;
      this.#refresh(found);
      return;
    }
    const node: LruNode<K, V> = { key, value, older: undefined, newer: undefined };
    this.#entries.set(key, node);
    this.#append(node);
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
    const node = this.#entries.get(key);
    if (node === undefined) return false;
    this.#entries.delete(key);
    this.#unlink(node);
    return true;
  }

  /** Removes every entry (no `onEvict`); the counters are kept. */
  clear(): void {
    this.#entries.clear();
    this.#oldest = undefined;
    this.#newest = undefined;
  }

  /** The values, least recently used first. */
  *values(): IterableIterator<V> {
    for (let node = this.#oldest; node !== undefined; node = node.newer) yield node.value;
  }

  /** The keys, least recently used first. */
  *keys(): IterableIterator<K> {
    for (let node = this.#oldest; node !== undefined; node = node.newer) yield node.key;
  }

  /** Size, capacity and counters (see {@link CacheStats}). */
  stats(): CacheStats {
    return { size: this.#entries.size, capacity: this.#capacity, hits: this.#hits, misses: this.#misses, evictions: this.#evictions };
  }

  /** Makes `node` (held) the most recently used entry. */
  #refresh(node: LruNode<K, V>): void {
    if (node === this.#newest) return;
    this.#unlink(node);
    this.#append(node);
  }

  /** Takes `node` out of the recency list. */
  #unlink(node: LruNode<K, V>): void {
    if (node.older === undefined) this.#oldest = node.newer;
    else node.older.newer = node.newer;
    if (node.newer === undefined) this.#newest = node.older;
    else node.newer.older = node.older;
    node.older = undefined;
    node.newer = undefined;
  }

  /** Puts `node` (unlinked) at the most recently used end. */
  #append(node: LruNode<K, V>): void {
    node.older = this.#newest;
    node.newer = undefined;
    if (this.#newest === undefined) this.#oldest = node;
    else this.#newest.newer = node;
    this.#newest = node;
  }

  #trim(): void {
    while (this.#entries.size > this.#capacity) {
      const oldest = this.#oldest;
      if (oldest === undefined) return;
      this.#entries.delete(oldest.key);
      this.#unlink(oldest);
      this.#evictions++;
      this.#onEvict?.(oldest.key, oldest.value);
    }
  }
}
