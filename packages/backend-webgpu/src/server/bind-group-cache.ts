/// <reference types="@webgpu/types" preserve="true" />

/** One bound storage range: a buffer's identity, offset and size. */
export interface BoundRange {
  readonly buffer: GPUBuffer;
  readonly offset: number;
  readonly size: number;
}

/** Bind groups kept by default (least recently used beyond it are dropped). */
export const BIND_GROUP_CACHE_LIMIT = 4096;

/**
 * Bind groups keyed by `(pipeline layout, buffers, offsets, sizes)`, so a launch that binds the
 * same ranges as an earlier one (a steady-state loop: the same pages and slices come back) skips
 * `createBindGroup`.
 *
 * @remarks
 * **Why.** Creating a bind group is a driver call with validation on every launch; with memory
 * reused from pools the same ranges recur, so caching turns it into a lookup of a few integers.
 * **Identity.** Buffers and layouts get process-unique numbers through `WeakMap`s, never reused,
 * so a key can never name a different buffer than the one it was built from.
 * **Invalidation.** {@link BindGroupCache.forget} drops every group that binds a buffer; the
 * storage calls it right before destroying that buffer, so a cached group never refers to a
 * destroyed buffer. {@link BindGroupCache.forgetLayout} drops every group of an evicted
 * pipeline's layout, so an evicted pipeline is not kept alive by its bind groups.
 * **Bounded** by `limit` entries (least recently used dropped first); `#byBuffer` and `#byLayout`
 * hold exactly the cached groups, per buffer and layout id.
 */
export class BindGroupCache {
  /** Cached groups by the hash of their key; a bucket holds the groups whose keys collide. */
  readonly #buckets = new Map<number, CachedGroup[]>();
  /**
   * Every cached group, least recently used first, to within a quarter of `limit` lookups: a hit
   * moves its group to the end only when the group was last placed there more than `limit / 4`
   * lookups ago. A steady-state loop hits the same few groups on every launch, and moving each on
   * every hit (a `Map` delete and set) churned the map's table for nothing. A group a hit does not
   * move was placed at most `limit / 4` lookups before, so in a full cache at least
   * `limit - limit / 4 - 1` groups stand before it in eviction order.
   */
  readonly #order = new Map<CachedGroup, true>();
  /** Lookups so far (hits and misses): the clock of {@link BindGroupCache.#order}. */
  #tick = 0;
  /** Buffer id → groups that bind it. Entries removed with their last group. */
  readonly #byBuffer = new Map<number, Set<CachedGroup>>();
  /** Layout id → groups built on it. Entries removed with their last group. */
  readonly #byLayout = new Map<number, Set<CachedGroup>>();
  readonly #ids = new WeakMap<object, number>();
  /** Scratch: the key of the group being looked up (copied into the entry on a miss). */
  readonly #key: number[] = [];
  #nextId = 1;
  #hits = 0;
  #misses = 0;
  #evictions = 0;

  constructor(
    private readonly device: GPUDevice,
    private readonly limit = BIND_GROUP_CACHE_LIMIT,
  ) {}

  /** Groups served from the cache. */
  get hits(): number {
    return this.#hits;
  }

  /** Groups created. */
  get misses(): number {
    return this.#misses;
  }

  /** Cached groups now. */
  get size(): number {
    return this.#order.size;
  }

  /** Groups dropped to stay within the limit (invalidations by `forget` are not counted). */
  get evictions(): number {
    return this.#evictions;
  }

  /** The most groups kept. */
  get capacity(): number {
    return this.limit;
  }

  #id(o: object): number {
    let id = this.#ids.get(o);
    if (id === undefined) {
      id = this.#nextId++;
      this.#ids.set(o, id);
    }
    return id;
  }

  /**
   * The bind group of `layout` with `ranges` at bindings `0..n-1` and, when given, `uniform` at
   * binding `n`: a uniform arena bound at offset 0 with `size` bytes, whose actual offset is the
   * launch's dynamic offset (`setBindGroup(0, group, [offset])`). The arena is part of the key,
   * never the offset, so launches with parameters hit the cache like any other.
   */
  get(layout: GPUBindGroupLayout, ranges: readonly BoundRange[], uniform?: { readonly buffer: GPUBuffer; readonly size: number }): GPUBindGroup {
    // Every launch asks: the key is a list of integers (ids, offsets, sizes) in a reused array
    // and its hash, so a hit allocates nothing (it was a string built per launch).
    const key = this.#key;
    key.length = 0;
    const layoutId = this.#id(layout);
    key.push(layoutId, ranges.length);
    for (let i = 0; i < ranges.length; i++) {
      const r = ranges[i] as BoundRange;
      key.push(this.#id(r.buffer), r.offset, r.size);
    }
    if (uniform !== undefined) key.push(this.#id(uniform.buffer), uniform.size);
    const hash = hashKey(key);
    const tick = ++this.#tick;
    const bucket = this.#buckets.get(hash);
    if (bucket !== undefined) {
      for (let b = 0; b < bucket.length; b++) {
        const hit = bucket[b] as CachedGroup;
        if (!sameKey(hit.key, key)) continue;
        this.#hits++;
        if (tick - hit.placed > this.limit >> 2) {
          hit.placed = tick;
          this.#order.delete(hit);
          this.#order.set(hit, true);
        }
        return hit.group;
      }
    }
    this.#misses++;
    const buffers = ranges.map((r) => this.#id(r.buffer));
    const entries: GPUBindGroupEntry[] = ranges.map((r, i) => ({ binding: i, resource: { buffer: r.buffer, offset: r.offset, size: r.size } }));
    if (uniform !== undefined) {
      buffers.push(this.#id(uniform.buffer));
      entries.push({ binding: ranges.length, resource: { buffer: uniform.buffer, offset: 0, size: uniform.size } });
    }
    const group = this.device.createBindGroup({ layout, entries });
    const cached: CachedGroup = { key: key.slice(), hash, group, buffers, layout: layoutId, placed: tick };
    if (bucket === undefined) this.#buckets.set(hash, [cached]);
    else bucket.push(cached);
    this.#order.set(cached, true);
    for (const b of buffers) addEntry(this.#byBuffer, b, cached);
    addEntry(this.#byLayout, layoutId, cached);
    if (this.#order.size > this.limit) {
      const oldest = this.#order.keys().next();
      if (!oldest.done) {
        this.#evictions++;
        this.#remove(oldest.value);
      }
    }
    return group;
  }

  /** Drops every group built on `layout` (an evicted pipeline's). */
  forgetLayout(layout: GPUBindGroupLayout): void {
    const id = this.#ids.get(layout);
    if (id === undefined) return;
    for (const cached of [...(this.#byLayout.get(id) ?? [])]) this.#remove(cached);
  }

  /** Drops every group (a destroyed server). */
  clear(): void {
    this.#buckets.clear();
    this.#order.clear();
    this.#byBuffer.clear();
    this.#byLayout.clear();
  }

  /** Drops every group that binds `buffer` (call before destroying it). */
  forget(buffer: GPUBuffer): void {
    const id = this.#ids.get(buffer);
    if (id === undefined) return;
    for (const cached of [...(this.#byBuffer.get(id) ?? [])]) this.#remove(cached);
  }

  #remove(cached: CachedGroup): void {
    if (!this.#order.delete(cached)) return;
    const bucket = this.#buckets.get(cached.hash);
    if (bucket !== undefined) {
      const at = bucket.indexOf(cached);
      if (at >= 0) bucket.splice(at, 1);
      if (bucket.length === 0) this.#buckets.delete(cached.hash);
    }
    for (const b of cached.buffers) removeEntry(this.#byBuffer, b, cached);
    removeEntry(this.#byLayout, cached.layout, cached);
  }
}

/** One cached bind group: its key (see `BindGroupCache.get`), the key's hash, and what it binds. */
interface CachedGroup {
  readonly key: readonly number[];
  readonly hash: number;
  readonly group: GPUBindGroup;
  readonly buffers: readonly number[];
  readonly layout: number;
  /** The lookup (`#tick`) at which the group was last placed at the end of `#order`. */
  placed: number;
}

/** A 32-bit hash of a key of non-negative integers (each mixed in as its low and high 32 bits). */
function hashKey(key: readonly number[]): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    const v = key[i] as number;
    h = Math.imul(h ^ (v >>> 0), 0x01000193);
    h = Math.imul(h ^ Math.floor(v / 0x100000000), 0x01000193);
  }
  return h >>> 0;
}

function sameKey(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function addEntry(index: Map<number, Set<CachedGroup>>, id: number, cached: CachedGroup): void {
  const set = index.get(id);
  if (set === undefined) index.set(id, new Set([cached]));
  else set.add(cached);
}

function removeEntry(index: Map<number, Set<CachedGroup>>, id: number, cached: CachedGroup): void {
  const set = index.get(id);
  set?.delete(cached);
  if (set !== undefined && set.size === 0) index.delete(id);
}
