/**
 * The compiled-pipeline cache a backend's server keeps.
 *
 * @module
 */
import { type CacheStats, LruCache } from "@weft/environment";

/** Options of a {@link PipelineCache}. */
export interface PipelineCacheOptions<P> {
  /** Pipelines kept; the least recently used beyond it are evicted. Default {@link DEFAULT_PIPELINE_CAPACITY}. */
  readonly capacity?: number;
  /**
   * Called with each evicted pipeline (never an in-flight creation). The pipeline may still be
   * used by launches that fetched it before: release only what they do not need.
   */
  readonly onEvict?: (pipeline: P) => void;
}

/** Default {@link PipelineCacheOptions.capacity}. */
export const DEFAULT_PIPELINE_CAPACITY = 512;

/**
 * Compiled pipelines by the canonical source of their kernel and the device features they were
 * compiled for: a kernel compiles once per device configuration, however often it launches.
 *
 * @remarks
 * **Key.** `key` is the kernel's canonical form (`KernelDefinition.key`: its source or relative IR
 * — never tensor ids or buffer identities); `features` are the device features the compiled code
 * depends on (`shader-f16`, subgroup sizes, limits). Feature order does not matter: they are
 * sorted and deduplicated into the key.
 * **Bound.** At most `capacity` entries (default {@link DEFAULT_PIPELINE_CAPACITY}); beyond it the
 * least recently used pipeline is evicted (`onEvict`) and counted ({@link evictions}), so a
 * program that runs ever new kernels (new shapes) holds a bounded number of pipelines. An evicted
 * pipeline stays valid for whoever fetched it; the next request of its key creates it again.
 * A failing `create` caches nothing (the next call tries again) and rethrows.
 * **Async creation.** {@link getOrCreateAsync} stores the in-flight promise, so concurrent callers
 * of one key share a single creation; a rejected creation is removed.
 * **Counters.** {@link hits} and {@link misses} only grow (until {@link clear}); tests and
 * benchmarks use them to prove a kernel compiled once.
 */
export class PipelineCache<P> {
  /** Pipelines (or in-flight creations) by canonical key; see the type doc for the bound. */
  readonly #entries: LruCache<string, P | Promise<P>>;
  #hits = 0;
  #misses = 0;
  #evictions = 0;

  constructor(options: PipelineCacheOptions<P> = {}) {
    const onEvict = options.onEvict;
    this.#entries = new LruCache(options.capacity ?? DEFAULT_PIPELINE_CAPACITY, {
      onEvict: (_key, value) => {
        this.#evictions++;
        if (!(value instanceof Promise)) onEvict?.(value);
      },
    });
  }

  /** The canonical cache key of `key` compiled for `features`. */
  static canonicalKey(key: string, features: readonly string[] | string): string {
    // A string is the features already canonical (a store's, sorted and joined once): no array per lookup.
    if (typeof features === "string") return `${features}\u0000${key}`;
    const list = [...new Set(features)].sort();
    return `${list.join(",")}\u0000${key}`;
  }

  /** The pipeline for `key` on `features`, created by `create` on the first request. */
  getOrCreate(key: string, features: readonly string[] | string, create: () => P): P {
    return this.getOrCreateCanonical(PipelineCache.canonicalKey(key, features), create);
  }

  /**
   * {@link getOrCreate} for a caller that keeps the canonical key ({@link canonicalKey}) of each
   * kernel it launches: reusing one string object, a lookup hashes no new string (a kernel key is
   * hundreds of characters, and a launch looks its pipeline up every time).
   */
  getOrCreateCanonical(full: string, create: () => P): P {
    const found = this.#entries.get(full);
    if (found !== undefined && !(found instanceof Promise)) {
      this.#hits += 1;
      return found;
    }
    if (found !== undefined) {
      throw new TypeError(
        `PipelineCache.getOrCreate("${full.slice(full.indexOf("\u0000") + 1)}"): this pipeline is being created by getOrCreateAsync; ` +
          "await getOrCreateAsync for it instead, or use one creation path per cache",
      );
    }
    this.#misses += 1;
    const pipeline = create();
    this.#entries.set(full, pipeline);
    return pipeline;
  }

  /**
   * Like {@link getOrCreate} for an asynchronous `create` (e.g. `createComputePipelineAsync`):
   * concurrent requests for one key share the creation.
   */
  async getOrCreateAsync(key: string, features: readonly string[] | string, create: () => Promise<P>): Promise<P> {
    const full = PipelineCache.canonicalKey(key, features);
    const found = this.#entries.get(full);
    if (found !== undefined) {
      this.#hits += 1;
      return found;
    }
    this.#misses += 1;
    const pending = create();
    this.#entries.set(full, pending);
    try {
      const pipeline = await pending;
      if (this.#entries.peek(full) === pending) this.#entries.set(full, pipeline);
      return pipeline;
    } catch (error) {
      if (this.#entries.peek(full) === pending) this.#entries.delete(full);
      throw error;
    }
  }

  /** The cached pipeline for `key` on `features`, without creating it or touching its recency (`undefined`: none, or still being created). */
  peek(key: string, features: readonly string[] | string): P | undefined {
    const found = this.#entries.peek(PipelineCache.canonicalKey(key, features));
    return found instanceof Promise ? undefined : found;
  }

  /** Whether `key` on `features` is cached (created or being created). */
  has(key: string, features: readonly string[] | string): boolean {
    return this.#entries.has(PipelineCache.canonicalKey(key, features));
  }

  /** How many pipelines are cached (created or being created). */
  get size(): number {
    return this.#entries.size;
  }

  /** How many requests found their pipeline cached. */
  get hits(): number {
    return this.#hits;
  }

  /** How many requests created their pipeline. */
  get misses(): number {
    return this.#misses;
  }

  /** How many pipelines were evicted to stay within the capacity. */
  get evictions(): number {
    return this.#evictions;
  }

  /** The most pipelines kept. */
  get capacity(): number {
    return this.#entries.capacity;
  }

  /** Size, capacity, hits, misses and evictions (see `CacheStats`). */
  stats(): CacheStats {
    return { size: this.#entries.size, capacity: this.#entries.capacity, hits: this.#hits, misses: this.#misses, evictions: this.#evictions };
  }

  /** Forgets every pipeline (a lost device) and resets the counters. */
  clear(): void {
    this.#entries.clear();
    this.#hits = 0;
    this.#misses = 0;
    this.#evictions = 0;
  }
}
