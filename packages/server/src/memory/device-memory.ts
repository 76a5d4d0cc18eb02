/**
 * When a free page goes back to the device: CubeCL's dealloc policy, counted in reserves and
 * checks, never in time.
 *
 * @remarks
 * A *check* looks at every page of a stream: a fully free page gains one free check; a reserve
 * served by a page takes one away (down to zero). A page that reaches `checks` free checks is
 * given back. New pages start one check short of it ("suspected unused", as in CubeCL), so a page
 * used once is given back at the first check that finds it free, while a page that serves many
 * reserves survives that many checks. Checks run every `period` reserves of the whole device
 * (so an idle stream's pages age while others work) and on a stream whenever its last live
 * allocation is freed (the stream went idle).
 */
export interface DeallocPolicy {
  /** Free checks after which a fully free page is given back (CubeCL's `ALLOC_AFTER_FREE`, 5). */
  readonly checks: number;
  /** Reserves, counted over every stream of the device, between two checks of every stream (200). */
  readonly period: number;
}

/** The default {@link DeallocPolicy}: 5 checks, one every 200 reserves of the device. */
export const DEFAULT_DEALLOC_POLICY: DeallocPolicy = { checks: 5, period: 200 };

/** What a {@link DeviceMemory} did. Counters only grow. */
export interface DeviceMemoryStats {
  /** Streams' memories attached now. */
  readonly streams: number;
  /** Periodic checks of every stream (one per `period` reserves). */
  readonly checks: number;
  /** Explicit or out-of-memory reclaims of every free page (`releaseUnused`). */
  readonly reclaims: number;
  /** Pages given back to the device, by the policy or by reclaims. */
  readonly pagesReleased: number;
}

/** What a {@link DeviceMemory} asks of each stream's memory. @internal */
export interface StreamPages {
  /** One policy check (`force = false`), or give back every fully free page (`force = true`). */
  cleanup(force: boolean): void;
}

/**
 * The memory of one device, shared by the `MemoryManagement` of each of its streams: the clock of
 * the dealloc policy, and reclaiming across streams.
 *
 * @remarks
 * **Why shared.** Every stream carves its own pages (docs/concepts.md#streampool-streammemory-and-taint: a binding is answered for by the
 * stream that allocated it), but the device's memory is one: a stream that runs out must be able
 * to reclaim the free pages *other* streams hold, and an idle stream's free pages must age while
 * others allocate. A cap (`memoryLimit`) lives in the storage every stream allocates from; when
 * it refuses, the manager calls {@link DeviceMemory.releaseUnused} and retries once.
 * **Reclaimers** are extra holders of free memory below the managers (the WebGPU backend's
 * retained buffers); `releaseUnused` empties them too.
 * **Bound.** One entry per attached stream memory (≤ the server's stream slots) and per reclaimer.
 */
export class DeviceMemory {
  readonly policy: DeallocPolicy;
  /** Attached stream memories; detached when their stream goes away. */
  readonly #streams = new Set<StreamPages>();
  /** Holders of free memory below the managers; see the type doc. */
  readonly #reclaimers = new Set<() => void>();
  #reserves = 0;
  #checks = 0;
  #reclaims = 0;
  #released = 0;

  constructor(policy: Partial<DeallocPolicy> = {}) {
    const merged = { ...DEFAULT_DEALLOC_POLICY, ...policy };
    if (!Number.isSafeInteger(merged.checks) || merged.checks < 1) {
      throw new RangeError(`DeallocPolicy.checks must be a positive integer, got ${merged.checks}`);
    }
    if (!Number.isSafeInteger(merged.period) || merged.period < 1) {
      throw new RangeError(`DeallocPolicy.period must be a positive integer, got ${merged.period}`);
    }
    this.policy = merged;
  }

  /** @internal A stream's memory joins the device; call the result when it goes away. */
  attach(stream: StreamPages): () => void {
    this.#streams.add(stream);
    return () => void this.#streams.delete(stream);
  }

  /** Adds a holder of free memory that {@link DeviceMemory.releaseUnused} empties; returns its removal. */
  addReclaimer(reclaim: () => void): () => void {
    this.#reclaimers.add(reclaim);
    return () => void this.#reclaimers.delete(reclaim);
  }

  /** @internal Counts one reserve; every `period`-th runs a check of every stream. */
  reserved(): void {
    this.#reserves++;
    if (this.#reserves % this.policy.period === 0) this.check();
  }

  /** @internal Counts pages a stream gave back. */
  released(pages: number): void {
    this.#released += pages;
  }

  /** One policy check of every stream's pages (see {@link DeallocPolicy}). */
  check(): void {
    this.#checks++;
    for (const stream of [...this.#streams]) stream.cleanup(false);
  }

  /** Gives back every fully free page of every stream and empties every reclaimer. */
  releaseUnused(): void {
    this.#reclaims++;
    for (const stream of [...this.#streams]) stream.cleanup(true);
    for (const reclaim of [...this.#reclaimers]) reclaim();
  }

  /** Counters (see {@link DeviceMemoryStats}). */
  stats(): DeviceMemoryStats {
    return { streams: this.#streams.size, checks: this.#checks, reclaims: this.#reclaims, pagesReleased: this.#released };
  }
}
