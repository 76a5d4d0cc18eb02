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
 * reused from pools the same ranges recur, so caching turns it into a string lookup.
 * **Identity.** Buffers and layouts get process-unique numbers through `WeakMap`s, never reused,
 * so a key can never name a different buffer than the one it was built from.
 * **Invalidation.** {@link BindGroupCache.forget} drops every group that binds a buffer; the
 * storage calls it right before destroying that buffer, so a cached group never refers to a
 * destroyed buffer. {@link BindGroupCache.forgetLayout} drops every group of an evicted
 * pipeline's layout, so an evicted pipeline is not kept alive by its bind groups.
 * **Bounded** by `limit` entries (least recently used dropped first); `#byBuffer` holds exactly
 * the keys of `#groups`, per buffer id.
 */
export class BindGroupCache {
  /** Key → group and the buffer ids it binds; insertion order is recency (hits re-insert). */
  readonly #groups = new Map<string, { readonly group: GPUBindGroup; readonly buffers: readonly number[]; readonly layout: number }>();
  /** Buffer id → keys of `#groups` that bind it. Entries removed with their last key. */
  readonly #byBuffer = new Map<number, Set<string>>();
  /** Layout id → keys of `#groups` built on it. Entries removed with their last key. */
  readonly #byLayout = new Map<number, Set<string>>();
  readonly #ids = new WeakMap<object, number>();
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
    return this.#groups.size;
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
    // Every launch asks: a hit builds the key and nothing else (the entries and the list of
    // buffer ids are built on a miss only).
    const layoutId = this.#id(layout);
    let key = `${layoutId}`;
    for (let i = 0; i < ranges.length; i++) {
      const r = ranges[i] as BoundRange;
      key += `|${this.#id(r.buffer)}:${r.offset}:${r.size}`;
    }
    if (uniform !== undefined) key += `|u${this.#id(uniform.buffer)}:${uniform.size}`;
    const hit = this.#groups.get(key);
    if (hit !== undefined) {
      this.#hits++;
      this.#groups.delete(key);
      this.#groups.set(key, hit);
      return hit.group;
    }
    this.#misses++;
    const buffers = ranges.map((r) => this.#id(r.buffer));
    const entries: GPUBindGroupEntry[] = ranges.map((r, i) => ({ binding: i, resource: { buffer: r.buffer, offset: r.offset, size: r.size } }));
    if (uniform !== undefined) {
      buffers.push(this.#id(uniform.buffer));
      entries.push({ binding: ranges.length, resource: { buffer: uniform.buffer, offset: 0, size: uniform.size } });
    }
    const group = this.device.createBindGroup({ layout, entries });
    this.#groups.set(key, { group, buffers, layout: layoutId });
    for (const b of buffers) addKey(this.#byBuffer, b, key);
    addKey(this.#byLayout, layoutId, key);
    if (this.#groups.size > this.limit) {
      const oldest = this.#groups.keys().next();
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
    for (const key of [...(this.#byLayout.get(id) ?? [])]) this.#remove(key);
  }

  /** Drops every group (a destroyed server). */
  clear(): void {
    this.#groups.clear();
    this.#byBuffer.clear();
    this.#byLayout.clear();
  }

  /** Drops every group that binds `buffer` (call before destroying it). */
  forget(buffer: GPUBuffer): void {
    const id = this.#ids.get(buffer);
    if (id === undefined) return;
    for (const key of [...(this.#byBuffer.get(id) ?? [])]) this.#remove(key);
  }

  #remove(key: string): void {
    const entry = this.#groups.get(key);
    if (entry === undefined) return;
    this.#groups.delete(key);
    for (const b of entry.buffers) removeKey(this.#byBuffer, b, key);
    removeKey(this.#byLayout, entry.layout, key);
  }
}

function addKey(index: Map<number, Set<string>>, id: number, key: string): void {
  const keys = index.get(id);
  if (keys === undefined) index.set(id, new Set([key]));
  else keys.add(key);
}

function removeKey(index: Map<number, Set<string>>, id: number, key: string): void {
  const keys = index.get(id);
  keys?.delete(key);
  if (keys !== undefined && keys.size === 0) index.delete(id);
}
