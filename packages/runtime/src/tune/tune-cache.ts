/**
 * The autotune result cache: in memory, backed by a persistent {@link TuneStore}.
 *
 * @module
 */
import { type CacheStats, LruCache } from "@weft/environment";
import type { AutotuneKey } from "./autotune-key.js";
import { defaultTuneStore } from "./tune-store.js";
import type { TuneRecord, TuneStore } from "./tune-store.js";
import { LIBRARY_VERSION } from "./version.js";

/** How a {@link TuneCache} is set up. */
export interface TuneCacheOptions {
  /** The adapter the results were measured on (vendor, architecture, driver): part of every key. */
  readonly adapter: string;
  /** The library version; default {@link LIBRARY_VERSION}. Part of every key. */
  readonly version?: string;
  /** Where results persist; default {@link defaultTuneStore}(`directory`). */
  readonly store?: TuneStore;
  /** The cache folder for the default Node file store; default `$WEFT_CACHE_DIR` or the OS temp folder. */
  readonly directory?: string;
  /** Results kept in memory (least recently used dropped first; the store keeps them all). Default 1024. */
  readonly capacity?: number;
}

/**
 * Tuning results by adapter, kernel (tunable-set name), autotune key and library version: read
 * synchronously from memory, written through to a persistent store.
 *
 * @remarks
 * **Why.** Tuning costs seconds; its result holds for as long as the adapter and the library
 * stay the same, across processes and page loads.
 * **Keys.** {@link TuneCache.storeKey}: adapter, version, kernel and key, so a result measured on
 * another adapter or by another release is never returned.
 * **Loading.** {@link load} reads the store once (later calls share the first); {@link get} answers
 * from memory only, so a result persisted by an earlier process is visible once `load` settled.
 * **Bound.** At most `capacity` results in memory (default 1024; least recently used dropped first,
 * counted as evictions): a program with ever new matmul shapes holds a bounded set. A dropped
 * result stays in the store; `get` answers from memory only, so its key tunes again if needed.
 */
export class TuneCache {
  readonly adapter: string;
  readonly version: string;
  readonly store: TuneStore;
  /** Results of this adapter and version, by `storeKey`; see the type doc for the bound. */
  readonly #memory: LruCache<string, TuneRecord>;
  #loading: Promise<void> | undefined;
  #loaded = false;
  #generation = 0;

  constructor(options: TuneCacheOptions) {
    this.adapter = options.adapter;
    this.version = options.version ?? LIBRARY_VERSION;
    this.store = options.store ?? defaultTuneStore(options.directory);
    this.#memory = new LruCache(options.capacity ?? 1024);
  }

  /** Results in memory, capacity, hits, misses and evictions. */
  stats(): CacheStats {
    return this.#memory.stats();
  }

  /** The key a result is stored under: adapter, library version, kernel and autotune key. */
  static storeKey(adapter: string, version: string, kernel: string, key: AutotuneKey): string {
    return JSON.stringify([adapter, version, kernel, key]);
  }

  /**
   * A number that changes whenever what {@link get} answers may have changed: a result stored, the
   * persisted results loaded, the cache cleared. Callers that memoize a choice made from this cache
   * (the WebGPU matmul launch cache) compare it instead of asking again.
   */
  get generation(): number {
    return this.#generation;
  }

  /** Whether {@link load} has completed. */
  get loaded(): boolean {
    return this.#loaded;
  }

  /**
   * Reads the persisted results of this adapter and version into memory (once). A store that
   * cannot be read leaves the cache empty rather than failing: results are only an optimisation.
   */
  load(): Promise<void> {
    this.#loading ??= this.store.loadAll().then(
      (records) => {
        for (const [key, record] of records) {
          const parsed = parseStoreKey(key);
          if (parsed !== undefined && parsed[0] === this.adapter && parsed[1] === this.version && !this.#memory.has(key)) {
            this.#memory.set(key, record);
          }
        }
        this.#loaded = true;
        this.#generation++;
      },
      () => {
        this.#loaded = true;
      },
    );
    return this.#loading;
  }

  /** The result for `kernel` at `key`, from memory. */
  get(kernel: string, key: AutotuneKey): TuneRecord | undefined {
    return this.#memory.get(TuneCache.storeKey(this.adapter, this.version, kernel, key));
  }

  /** Stores a result in memory and persists it; resolves once persisted. */
  async set(kernel: string, key: AutotuneKey, record: TuneRecord): Promise<void> {
    const full = TuneCache.storeKey(this.adapter, this.version, kernel, key);
    this.#memory.set(full, record);
    this.#generation++;
    await this.store.put(full, record);
  }

  /** How many results are in memory. */
  get size(): number {
    return this.#memory.size;
  }

  /** Forgets every result, in memory and in the store. */
  async clear(): Promise<void> {
    this.#memory.clear();
    this.#generation++;
    await this.store.clear();
  }
}

function parseStoreKey(key: string): [string, string, string, string] | undefined {
  try {
    const parsed: unknown = JSON.parse(key);
    if (Array.isArray(parsed) && parsed.length === 4 && parsed.every((p) => typeof p === "string")) {
      return parsed as [string, string, string, string];
    }
  } catch {
    // Not one of ours.
  }
  return undefined;
}
