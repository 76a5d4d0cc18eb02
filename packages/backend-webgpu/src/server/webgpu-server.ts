/// <reference types="@webgpu/types" preserve="true" />
import { type CacheStats, Deferred, StreamId, UnsupportedError, invariant } from "@weft/environment";
import {
  DeviceLostError,
  DeviceMemory,
  FailureStore,
  LaunchError,
  DEFAULT_MIN_PAGE_SIZE,
  MemoryManagement,
  ServerError,
  StreamPool,
  type BufferBinding,
  type ComputeServer,
  type DeallocPolicy,
  type CubeCount,
  type KernelBinding,
  type LaunchMode,
  type MemoryConfiguration,
  type MemoryHandle,
  type MemoryUsage,
  type StatusCheck,
} from "@weft/server";
import { BufferUsage, MapMode } from "../device/gpu-constants.js";
import type { WgslKernel } from "../kernel.js";
import { GpuBufferStorage } from "../memory/gpu-buffer-storage.js";
import { StagingPool, type StagingPoolOptions } from "../memory/staging-pool.js";
import { BindGroupCache, type BoundRange } from "./bind-group-cache.js";
import { Fifo } from "./fifo.js";
import { PipelineStore, type PipelineEntry } from "./pipeline-store.js";
import { ReadBatch, completeReads, planReadCopies, readBytes, releasePins, type PendingRead, type ReadSource } from "./read-batch.js";
import { WebGpuStream, type PendingStatusCheck, type UniformArena } from "./webgpu-stream.js";

/** Tuning of a {@link WebGpuServer}; every field has a default. */
export interface WebGpuServerOptions {
  /** Regular stream slots (stream id modulo this). Default 32. */
  readonly maxStreams?: number;
  /** Dispatches recorded per stream before it is submitted. Default 64. */
  readonly tasksMax?: number;
  /** Host writes between two submits during bulk uploads (docs/pitfalls.md#p15). Default 64. */
  readonly writesPerSubmit?: number;
  /** Bytes of the largest shared page. Default min(64 MiB, maxStorageBufferBindingSize). */
  readonly pageSize?: number;
  /** Bytes of a stream's first page; pages double from it up to `pageSize`. Default 256 KiB. */
  readonly minPageSize?: number;
  /**
   * Bytes of freed pages the server keeps for reuse, over all streams, before destroying the
   * oldest (see `GpuBufferStorage`). Default 128 MiB (at most maxBufferSize).
   */
  readonly retainedBytes?: number;
  /**
   * The device's memory cap: page buffers (in use, free, retained) never take more. Beyond it an
   * allocation reclaims every free page and then fails with a typed, transient
   * `OutOfMemoryError`, before the native allocator is asked. Default: none.
   */
  readonly memoryLimit?: number;
  /** When free pages go back to the device (see `DeallocPolicy`). */
  readonly dealloc?: Partial<DeallocPolicy>;
  /** Compiled pipelines kept (least recently used evicted first). Default 512 (`DEFAULT_MAX_PIPELINES`). */
  readonly maxPipelines?: number;
  /** Bounds of the pool of readback staging buffers (see `StagingPool`). */
  readonly staging?: StagingPoolOptions;
}

/** Counters for tests and benchmarks. They only grow. */
export interface WebGpuServerStats {
  /** `queue.submit` calls (command buffers of launches and copies, and the periodic empty ones). */
  readonly submits: number;
  /** Dispatches encoded. */
  readonly dispatches: number;
  /** `queue.writeBuffer` calls. */
  readonly writes: number;
  /** Pipelines created (cache misses, re-creations after an eviction included). */
  readonly pipelines: number;
  /** Gauge: pipelines held in the cache now (at most `maxPipelines`). */
  readonly pipelinesHeld: number;
  /** Pipelines evicted to stay within `maxPipelines`. */
  readonly pipelineEvictions: number;
  /** Pipeline lookups served from the cache (every launch, compile or discard of a known kernel). */
  readonly pipelineHits: number;
  /** Launches that waited for a pipeline's validation before being encoded. */
  readonly deferredLaunches: number;
  /** Page buffers created (`createBuffer` for memory; staging and uniform buffers not counted). */
  readonly buffersCreated: number;
  /** Page allocations served by a retained (freed) buffer instead of a new one. */
  readonly buffersReused: number;
  /** Page buffers destroyed (only under pressure or at `cleanup`). */
  readonly buffersDestroyed: number;
  /** Bind groups created. */
  readonly bindGroups: number;
  /** Launches whose bind group came from the cache. */
  readonly bindGroupHits: number;
  /** Gauge: bind groups held in the cache now. */
  readonly bindGroupsHeld: number;
  /** Bind groups evicted to stay within the cache's capacity. */
  readonly bindGroupEvictions: number;
  /** `read` calls accepted (each settles once). */
  readonly reads: number;
  /**
   * Read batches performed: each is one submit of every copy of the reads issued in one turn
   * (counted in `submits` too), after the flush of the streams they depend on.
   */
  readonly readBatches: number;
  /** `mapAsync` calls: one per read batch (more only when a batch exceeds `maxBufferSize`). */
  readonly readMaps: number;
  /** Staging buffers created for reads (the rest came from the staging pool). */
  readonly stagingCreated: number;
}

/** One unit of work waiting, in issue order, behind a pipeline whose validation is pending. */
interface DeferredTask {
  /** The pipeline it needs validated first, if any. */
  readonly waitFor: PipelineEntry | undefined;
  /** Performs the work (encode, write, read copy, flush). Never throws: it records failures. */
  readonly run: () => void;
  /** Called instead of `run` when the device is lost first. */
  readonly abort: (error: DeviceLostError) => void;
}

/** Default {@link WebGpuServerOptions.maxPipelines}: compiled pipelines kept per device. */
export const DEFAULT_MAX_PIPELINES = 512;

/** Bytes of one uniform arena buffer; a launch's uniforms take a region of one. */
const UNIFORM_ARENA = 64 * 1024;

const roundUp = (n: number, to: number): number => Math.ceil(n / to) * to;

/**
 * The WebGPU {@link ComputeServer}: one `GPUDevice`, its one `GPUQueue`, and per-stream command
 * encoders, memory and taint claims (cubecl-wgpu's `WgpuServer` + `WgpuStream`).
 *
 * @remarks
 * **Order.** Everything funnels into the one queue, so order is submission order. Before work of
 * stream S touches an allocation, every *other* stream whose unsubmitted encoder refers to that
 * allocation is submitted first (producers before consumers, readers before a later writer).
 * Host writes (`queue.writeBuffer`) jump ahead of unsubmitted encoders, so the writing stream and
 * those streams are submitted before every write (docs/pitfalls.md#p15); during bulk uploads an empty submit
 * follows every `writesPerSubmit` writes.
 * **Batching.** Dispatches accumulate in the stream's encoder; it is submitted every `tasksMax`
 * dispatches, and at reads, syncs, writes and flushes. Reads issued in one turn are coalesced
 * (`ReadBatch`): one flush of the streams they depend on, one submit of every copy into one
 * pooled staging buffer (`StagingPool`), one `mapAsync`, sealed by a single microtask per
 * batch (no timer, no `onSubmittedWorkDone`), or earlier when later work would overwrite bytes a
 * waiting read has not copied yet.
 * **Lifetimes.** A launch pins every slice it binds. Pins on the stream's own slices are released
 * at submit (the queue orders any later reuse); pins on other streams' slices are released when
 * the consumer's submission completes (`onSubmittedWorkDone`, docs/pitfalls.md#p14). A page is destroyed only
 * after its stream's pending encoder was submitted.
 * **Validation before launch.** A pipeline is created inside a `validation` error scope and is
 * `pending` until the scope pops. While any launch waits on a pending pipeline, every later
 * launch, write, read copy and flush is queued behind it, in issue order, and runs when the
 * validation settles; a launch of an invalid pipeline taints exactly its write bindings with the
 * {@link @weft/server!ValidationError | ValidationError}, and later launches reading those bytes are skipped and taint theirs.
 * Invalid pipelines never reach a command buffer, so they never poison other launches.
 * **Errors.** Reads reject with the taint of their bytes (`FailureStore.readError`), checked when
 * the read is issued and again after every outstanding error scope settled (one wait per batch),
 * so an error is never reported one read late; a tainted read rejects alone, the rest of its batch
 * resolves. A failed submission taints the bytes its launches wrote.
 * **Status checks** ({@link WebGpuServer.verify}). A kernel that must report a data-dependent
 * failure (`gather`'s out-of-range index) writes a status word; its writes carry a *pending*
 * claim until the word is read back (copied right after the stream's next submit, one `mapAsync`
 * per submit). Launches reading pending bytes run and their writes inherit the claim; the check
 * settles into the decoded failure or into clean bytes. The readback is an outstanding promise,
 * so every read issued after the check waits for it (and a read seals after flushing every stream
 * with checks not yet copied): a read never resolves with bytes a failed check claims.
 * `uncapturederror` events go to the failure log of the stream last used. Device loss rejects
 * every pending read and sync with {@link DeviceLostError}; every later call throws it.
 */
export class WebGpuServer implements ComputeServer<WgslKernel> {
  readonly name = "webgpu";
  readonly device: GPUDevice;
  readonly #pool: StreamPool<WebGpuStream>;
  readonly #failures: FailureStore<WebGpuStream>;
  readonly #pipelines: PipelineStore;
  readonly #config: MemoryConfiguration;
  readonly #tasksMax: number;
  readonly #writesPerSubmit: number;
  /** The page buffers of every stream, with the retained pool and the `memoryLimit`. */
  readonly #storage: GpuBufferStorage;
  /** The device's memory: the dealloc clock and reclaiming across streams. */
  readonly memory: DeviceMemory;
  /** Bind groups of launches, invalidated when a page buffer is destroyed; bounded (LRU). */
  readonly #bindGroups: BindGroupCache;
  /** Work queued behind a pending pipeline, in issue order. Empty in the steady state. */
  readonly #deferred = new Fifo<DeferredTask>();
  /**
   * Status checks issued and still queued behind a deferred task (their pending claim is not
   * recorded yet): what `pendingOf` must count too. Bounded by the queued tasks.
   */
  readonly #queuedChecks = new Set<StatusCheck>();
  /** Whether a drain of `#deferred` is scheduled or running. */
  #draining = false;
  /** Error-scope and validation promises not settled yet; each removes itself when it settles. */
  readonly #outstanding = new Set<Promise<unknown>>();
  /** Rejecters of reads and syncs in flight; each removes itself when it settles. */
  readonly #pending = new Set<(error: DeviceLostError) => void>();
  /** Free staging buffers (MAP_READ | COPY_DST) by size class; bounded by its options. */
  readonly #staging: StagingPool;
  /**
   * The reads issued in the current turn, not yet copied; sealed at the end of the turn (one
   * microtask) or before work that writes their bytes. `undefined` when none waits.
   */
  #batch: ReadBatch | undefined;
  /** Free uniform arenas (buffer and host mirror), at most 8. */
  readonly #uniformArenas: UniformArena[] = [];
  /** The error every call throws once the device is lost. */
  #lost: DeviceLostError | undefined;
  /** The stream of the last call, to which uncaptured errors are attributed. */
  #lastStream: WebGpuStream | undefined;
  /** Allocations that must fail next (fault injection). */
  #injectedAllocationFailures = 0;
  #stats = { submits: 0, dispatches: 0, writes: 0, deferredLaunches: 0, reads: 0, readBatches: 0, readMaps: 0 };

  constructor(device: GPUDevice, options: WebGpuServerOptions = {}) {
    this.device = device;
    this.#tasksMax = options.tasksMax ?? 64;
    this.#writesPerSubmit = options.writesPerSubmit ?? 64;
    this.#bindGroups = new BindGroupCache(device);
    this.#staging = new StagingPool(device, options.staging);
    const limits = device.limits;
    const alignment = Math.max(4, limits.minStorageBufferOffsetAlignment, limits.minUniformBufferOffsetAlignment);
    const maxBinding = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
    const maxPage = Math.floor(maxBinding / alignment) * alignment;
    const pageSize = Math.min(options.pageSize ?? 64 * 1024 * 1024, maxPage);
    const page = Math.max(alignment, Math.floor(pageSize / alignment) * alignment);
    this.#config = { pageSize: page, minPageSize: Math.min(options.minPageSize ?? DEFAULT_MIN_PAGE_SIZE, page), alignment, maxAllocation: maxPage };
    this.memory = new DeviceMemory(options.dealloc);
    this.#storage = new GpuBufferStorage(
      device,
      {
        // A free page has no pin, so no unsubmitted encoder refers to it; submitting the streams
        // that hold work first keeps destruction after every command recorded so far regardless.
        beforeDestroy: () => {
          for (const s of this.#pool.streams()) this.#submitEncoder(s);
        },
        onDestroy: (buffer) => this.#bindGroups.forget(buffer),
        onOutOfMemory: (_buffer, error) => this.#lastStream?.logFailure(error),
        track: (scope) => this.#track(scope),
        takeInjectedFailure: () => {
          if (this.#injectedAllocationFailures <= 0) return false;
          this.#injectedAllocationFailures--;
          return true;
        },
      },
      "weft page",
      {
        ...(options.retainedBytes === undefined ? {} : { retainedBytes: options.retainedBytes }),
        ...(options.memoryLimit === undefined ? {} : { capacity: options.memoryLimit }),
      },
    );
    this.memory.addReclaimer(() => this.#storage.purge());
    this.#pipelines = new PipelineStore(device, (ready) => this.#track(ready), {
      capacity: options.maxPipelines ?? DEFAULT_MAX_PIPELINES,
      onEvict: (entry) => this.#bindGroups.forgetLayout(entry.bindGroupLayout),
    });
    this.#pool = new StreamPool<WebGpuStream>({ create: (slot) => this.#createStream(slot) }, options.maxStreams ?? 32, 0);
    this.#failures = new FailureStore(this.#pool);
    device.lost.then(
      (info) => this.#onLost(`${info.reason}: ${info.message || "no message"}`),
      () => this.#onLost("the lost promise rejected"),
    );
    device.addEventListener("uncapturederror", (event) => {
      const error = (event as GPUUncapturedErrorEvent).error;
      this.#lastStream?.logFailure(new ServerError("generic", `uncaptured WebGPU error: ${error.message}`));
    });
  }

  /** The memory layout every stream uses (page size, alignment, largest allocation). */
  get memoryConfiguration(): MemoryConfiguration {
    return this.#config;
  }

  /** Counters (see {@link WebGpuServerStats}). */
  stats(): WebGpuServerStats {
    const st = this.#storage.stats();
    const pipelines = this.#pipelines.stats();
    return {
      ...this.#stats,
      pipelines: pipelines.misses,
      pipelineHits: pipelines.hits,
      pipelinesHeld: pipelines.size,
      pipelineEvictions: pipelines.evictions,
      buffersCreated: st.created,
      buffersReused: st.reused,
      buffersDestroyed: st.destroyed,
      bindGroups: this.#bindGroups.misses,
      bindGroupHits: this.#bindGroups.hits,
      bindGroupsHeld: this.#bindGroups.size,
      bindGroupEvictions: this.#bindGroups.evictions,
      stagingCreated: this.#staging.stats().created,
    };
  }

  /** The pipeline cache: pipelines held, capacity, hits, misses, evictions. */
  pipelineStats(): CacheStats {
    return this.#pipelines.stats();
  }

  /** The bind-group cache: groups held, capacity, hits, misses, evictions. */
  bindGroupStats(): CacheStats {
    return { size: this.#bindGroups.size, capacity: this.#bindGroups.capacity, hits: this.#bindGroups.hits, misses: this.#bindGroups.misses, evictions: this.#bindGroups.evictions };
  }

  /** Failures logged on `stream` outside any launch (uncaptured errors, failed submissions). */
  failures(stream: StreamId): readonly ServerError[] {
    return [...(this.#pool.tryGet(stream)?.failures ?? [])];
  }

  /** Whether the device was lost (every call then throws {@link DeviceLostError}). */
  get lost(): boolean {
    return this.#lost !== undefined;
  }

  /**
   * Test hook: the next `count` page allocations fail as if the device were out of memory
   * (each reserve reclaims and retries once, so one injected failure is absorbed by the retry).
   */
  injectAllocationFailures(count: number): void {
    this.#injectedAllocationFailures = count;
  }

  // ----- memory -------------------------------------------------------------------------------

  empty(size: number, stream: StreamId): MemoryHandle {
    this.#checkAlive("empty");
    return this.#stream(stream).memory.reserve(size, stream);
  }

  create(data: Uint8Array, stream: StreamId): MemoryHandle {
    const handle = this.empty(data.byteLength, stream);
    this.write(handle.binding(), data, stream);
    return handle;
  }

  write(binding: BufferBinding, data: Uint8Array, stream: StreamId): void {
    this.#checkAlive("write");
    if (data.byteLength !== binding.size) {
      throw new LaunchError(
        `write: ${data.byteLength} bytes given for a binding of ${binding.size} bytes; pass exactly the binding's bytes`,
      );
    }
    if (binding.offset % 4 !== 0) {
      throw new UnsupportedError(
        "writes at offsets that are not multiples of 4 bytes",
        `write to allocation ${binding.allocation} at offset ${binding.offset}; write the whole allocation or a 4-byte-aligned range`,
      );
    }
    const owner = this.#owner(binding, "write");
    const s = this.#stream(stream);
    const padded = roundUp(data.byteLength, 4);
    if (padded !== data.byteLength && this.#padStaysInside(owner, binding, padded)) {
      throw new UnsupportedError(
        "writes of a length that is not a multiple of 4 bytes inside an allocation",
        `write of ${binding.size} bytes at offset ${binding.offset} of allocation ${binding.allocation}; ` +
          "write up to the allocation's end or a multiple of 4 bytes",
      );
    }
    const unpin = owner.memory.pin(binding);
    const bytes = this.#deferred.length > 0 ? data.slice() : data;
    this.#submitTask({
      waitFor: undefined,
      run: () => {
        try {
          this.#runWrite(s, owner, binding, bytes, padded);
        } finally {
          unpin();
        }
      },
      abort: () => unpin(),
    });
  }

  /**
   * The error a read of `bindings` issued now would reject with, or `undefined` when every byte is
   * clean (`ComputeServer.failureOf`): what the fusion engine asks before running a fused block,
   * so that only outputs computed from a failure carry it. Synchronous and side-effect free.
   *
   * It answers from the failures recorded so far: a launch still waiting for its pipeline's
   * validation, or one whose error scope has not settled, is not known yet (its outputs are
   * tainted when it settles, and a fused block that read them then fails whole).
   * @throws DeviceLostError after the device was lost; InvalidBindingError for memory not live.
   */
  failureOf(bindings: readonly BufferBinding[]): ServerError | undefined {
    if (this.#lost) throw this.#lost;
    for (const b of bindings) this.#owner(b, "read");
    return this.#failures.readError(bindings);
  }

  /**
   * Whether a deferred check not settled yet claims a byte of `bindings`
   * (`ComputeServer.pendingOf`), counting checks still queued behind a pipeline's compilation.
   * Synchronous and side-effect free.
   * @throws DeviceLostError after the device was lost; InvalidBindingError for memory not live.
   */
  pendingOf(bindings: readonly BufferBinding[]): boolean {
    if (this.#lost) throw this.#lost;
    for (const b of bindings) this.#owner(b, "read");
    for (const check of this.#queuedChecks) if (check.writes.some((w) => bindings.some((b) => overlap(w, b)))) return true;
    return this.#failures.pendingOf(bindings).length > 0;
  }

  /**
   * Reads `bindings` once every launch and write issued before this call, on `stream` and on the
   * streams that produced the bytes, has run.
   *
   * @remarks
   * **Batching.** Reads issued in the same turn are performed together when the turn ends (a
   * microtask): one flush of the streams involved, one submit of every copy into one pooled
   * staging buffer, one `mapAsync`; each promise then gets its own copy of its bytes. A launch or
   * write issued later in the turn that writes bytes of a waiting read performs the batch first,
   * so a read never sees work issued after it. The slices are pinned from this call until the
   * read settles, so releasing the handles right away is safe.
   * **Errors.** A read of tainted bytes rejects alone, with its taint, checked when issued and
   * again once the error scopes outstanding at the copy settled; device loss rejects every
   * pending read with {@link DeviceLostError}. The promise holds only the staging buffer (docs/pitfalls.md#p4).
   */
  read(bindings: readonly BufferBinding[], stream: StreamId): Promise<Uint8Array[]> {
    if (this.#lost) return Promise.reject(this.#lost);
    const s = this.#stream(stream);
    const owners = bindings.map((b) => this.#owner(b, "read"));
    const unpins: (() => void)[] = [];
    try {
      bindings.forEach((b, i) => unpins.push((owners[i] as WebGpuStream).memory.pin(b)));
    } catch (error) {
      // A binding of memory that is not live: nothing may stay pinned by a read that never ran.
      for (const unpin of unpins) unpin();
      throw error;
    }
    const done = new Deferred<Uint8Array[]>();
    const reject = (error: DeviceLostError) => done.reject(error);
    this.#pending.add(reject);
    this.#stats.reads++;
    const settle = done.promise.finally(() => this.#pending.delete(reject));
    const read: PendingRead = { stream: s, bindings, done, unpins };
    this.#submitTask({
      waitFor: undefined,
      run: () => this.#enqueueRead(read),
      abort: (error) => {
        done.reject(error);
        releasePins(read);
      },
    });
    return settle;
  }

  // ----- kernels ------------------------------------------------------------------------------

  compile(kernel: WgslKernel): void {
    this.#checkAlive("compile");
    const entry = this.#pipelines.getOrCompile(kernel);
    if (entry.state.kind === "invalid") throw entry.state.error;
  }

  launch(
    kernel: WgslKernel,
    count: CubeCount,
    bindings: readonly KernelBinding[],
    stream: StreamId,
    mode: LaunchMode,
    uniforms?: Uint8Array,
  ): void {
    this.#checkAlive("launch");
    const entry = this.#pipelines.getOrCompile(kernel);
    if (mode === "discard") return;
    this.#checkLaunch(kernel, count, bindings);
    const s = this.#stream(stream);
    // Pin every slice now: a deferred launch must find its memory as it was when issued.
    const pins = bindings.map((kb) => ({ stream: kb.binding.stream, unpin: this.#owner(kb.binding, "launch").memory.pin(kb.binding) }));
    const data = uniforms === undefined ? undefined : this.#deferred.length > 0 || entry.state.kind === "pending" ? uniforms.slice() : uniforms;
    const deferred = this.#deferred.length > 0 || entry.state.kind === "pending";
    if (deferred) this.#stats.deferredLaunches++;
    this.#submitTask({
      waitFor: entry,
      run: () => this.#runLaunch(s, entry, count, bindings, pins, data),
      abort: () => {
        for (const pin of pins) pin.unpin();
      },
    });
  }

  /**
   * Verifies the status words a launch just issued on `stream` wrote (see {@link StatusCheck} and
   * the type doc): in issue order, the check's writes get a pending claim (unless the launch
   * already failed or was skipped: its writes carry that failure), and the words are read back
   * after `stream`'s next submit.
   */
  verify(check: StatusCheck, stream: StreamId): void {
    this.#checkAlive("verify");
    const s = this.#stream(stream);
    const unpin = this.#owner(check.status, "verify").memory.pin(check.status);
    this.#queuedChecks.add(check);
    this.#submitTask({
      waitFor: undefined,
      run: () => {
        this.#queuedChecks.delete(check);
        if (this.#failures.checkReads([check.status]) !== undefined) {
          unpin();
          return;
        }
        const id = this.#failures.suspect(new LaunchError(`${check.what}: its status was not read back yet`), check.writes);
        if (id === undefined) {
          unpin();
          return;
        }
        s.pendingChecks.push({ id, check, unpin });
      },
      abort: () => {
        this.#queuedChecks.delete(check);
        unpin();
      },
    });
  }

  // ----- submission ---------------------------------------------------------------------------

  flush(stream: StreamId): void {
    this.#checkAlive("flush");
    const s = this.#stream(stream);
    this.#submitTask({ waitFor: undefined, run: () => this.#flushStream(s), abort: () => undefined });
  }

  async sync(stream: StreamId): Promise<void> {
    if (this.#lost) throw this.#lost;
    const s = this.#stream(stream);
    const done = new Deferred<void>();
    const reject = (error: DeviceLostError) => done.reject(error);
    this.#pending.add(reject);
    this.#submitTask({
      waitFor: undefined,
      run: () => {
        this.#flushStream(s);
        this.device.queue.onSubmittedWorkDone().then(
          () => (this.#lost ? done.reject(this.#lost) : done.resolve()),
          (error: unknown) => done.reject(this.#lost ?? new DeviceLostError(String(error), { cause: error })),
        );
      },
      abort: (error) => done.reject(error),
    });
    try {
      await done.promise;
    } finally {
      this.#pending.delete(reject);
    }
  }

  memoryUsage(): MemoryUsage {
    // Retained (freed, kept for reuse) buffers are device memory this server still holds.
    let bytesReserved = this.#storage.stats().retainedBytes;
    let bytesInUse = 0;
    let pages = 0;
    let slices = 0;
    let liveAllocations = 0;
    let streams = 0;
    for (const s of this.#pool.streams()) {
      const u = s.memory.usage();
      bytesInUse += u.bytesInUse;
      bytesReserved += u.bytesReserved;
      pages += u.pages;
      slices += u.slices;
      liveAllocations += u.liveAllocations;
      streams += u.streams;
    }
    return { bytesInUse, bytesReserved, pages, slices, liveAllocations, streams };
  }

  /**
   * Performs the open read batch, submits every stream's pending work and destroys every free page,
   * retained buffer and kept staging buffer (`weft.releaseUnused()`).
   */
  releaseUnused(): void {
    this.#checkAlive("releaseUnused");
    if (this.#batch !== undefined) this.#sealReads(this.#batch);
    for (const s of this.#pool.streams()) this.#flushStream(s);
    this.memory.releaseUnused();
    this.#staging.purge();
  }

  /** The same as {@link WebGpuServer.releaseUnused}. */
  cleanup(): void {
    this.releaseUnused();
  }

  /**
   * Gives everything this server holds back: submits pending work, destroys every page (in use
   * or not), retained and staging buffer and uniform arena, and forgets every pipeline and bind
   * group. Every later call throws {@link DeviceLostError} ("the server was destroyed"); pending
   * reads and syncs reject with it. The `GPUDevice` itself belongs to whoever created it.
   */
  destroy(): void {
    if (this.#lost !== undefined) return;
    // Reads not sealed yet are rejected (and unpinned) by the loss below; sealed ones release
    // their pins when their copies complete.
    for (const s of this.#pool.streams()) this.#submitEncoder(s);
    this.#onLost("the server was destroyed (its device was disposed or replaced)");
    for (const s of this.#pool.streams()) s.memory.dispose();
    this.#storage.destroyAll();
    this.#staging.purge();
    for (const arena of this.#uniformArenas.splice(0)) arena.buffer.destroy();
    this.#pipelines.clear();
    this.#bindGroups.clear();
  }

  // ----- internals ----------------------------------------------------------------------------

  #createStream(slot: StreamId): WebGpuStream {
    if (this.#lost) throw this.#lost;
    const stream: WebGpuStream = new WebGpuStream(slot, undefined as unknown as MemoryManagement<GPUBuffer>);
    stream.storage = this.#storage;
    stream.memory = new MemoryManagement<GPUBuffer>(this.#storage, this.#config, slot, {
      onFree: (allocation) => stream.claims.forget(allocation, this.#failures.graph),
      device: this.memory,
    });
    return stream;
  }

  #stream(id: StreamId): WebGpuStream {
    const s = this.#pool.getOrCreate(id);
    this.#lastStream = s;
    return s;
  }

  /**
   * Whether padding `binding` to `padded` bytes stays inside its allocation, i.e. would overwrite
   * bytes of the allocation the write does not own. Past the allocation's end the padding lands
   * in the slice's own alignment padding (slices are aligned to at least 4 bytes), which is safe.
   */
  #padStaysInside(owner: WebGpuStream, binding: BufferBinding, padded: number): boolean {
    try {
      owner.memory.resolve({ ...binding, size: padded });
      return true;
    } catch {
      return false;
    }
  }

  /** The stream whose memory holds `binding`; a binding no stream allocated is misuse. */
  #owner(binding: BufferBinding, op: string): WebGpuStream {
    const owner = this.#pool.tryGet(binding.stream);
    if (owner === undefined) {
      throw new LaunchError(
        `${op}: allocation ${binding.allocation} names stream ${binding.stream}, which allocated nothing on this server; ` +
          "bindings must come from handles of this WebGpuServer",
      );
    }
    return owner;
  }

  #checkAlive(op: string): void {
    if (this.#lost) throw this.#lost;
    invariant(op.length > 0, "an operation name is required");
  }

  #checkLaunch(kernel: WgslKernel, count: CubeCount, bindings: readonly KernelBinding[]): void {
    const limits = this.device.limits;
    const max = limits.maxComputeWorkgroupsPerDimension;
    if (count.some((c) => !Number.isInteger(c) || c < 0 || c > max)) {
      throw new LaunchError(
        `launch of '${kernel.label ?? kernel.key}': work-group count [${count.join(", ")}] exceeds the device's ` +
          `maxComputeWorkgroupsPerDimension (${max}) or is not a non-negative integer; split the dispatch over y/z`,
      );
    }
    if (bindings.length > limits.maxStorageBuffersPerShaderStage) {
      throw new LaunchError(
        `launch of '${kernel.label ?? kernel.key}' binds ${bindings.length} storage buffers; the device allows ` +
          `${limits.maxStorageBuffersPerShaderStage} per shader stage; split the kernel`,
      );
    }
    for (const kb of bindings) {
      if (kb.binding.offset % this.#config.alignment !== 0) {
        throw new LaunchError(
          `launch of '${kernel.label ?? kernel.key}': binding at offset ${kb.binding.offset} of allocation ` +
            `${kb.binding.allocation} is not a multiple of the storage offset alignment (${this.#config.alignment}); ` +
            "bind the whole allocation and pass the offset as a uniform",
        );
      }
    }
  }

  /** Runs `task` now when nothing waits, else queues it behind the waiting work. */
  #submitTask(task: DeferredTask): void {
    if (this.#lost) {
      task.abort(this.#lost);
      return;
    }
    if (this.#deferred.length === 0 && task.waitFor?.state.kind !== "pending") {
      task.run();
      return;
    }
    this.#deferred.push(task);
    if (!this.#draining) {
      this.#draining = true;
      void this.#drain();
    }
  }

  /** Runs queued tasks in order, waiting for each one's pipeline validation first. */
  async #drain(): Promise<void> {
    await Promise.resolve();
    for (;;) {
      const head = this.#deferred.peek();
      if (head === undefined || this.#lost) {
        this.#draining = false;
        return;
      }
      if (head.waitFor?.state.kind === "pending") await head.waitFor.ready;
      // Device loss while waiting aborted (and removed) every queued task, this one included.
      if (this.#deferred.peek() !== head) continue;
      this.#deferred.shift();
      if (this.#lost) head.abort(this.#lost);
      else head.run();
    }
  }

  #runLaunch(
    s: WebGpuStream,
    entry: PipelineEntry,
    count: CubeCount,
    bindings: readonly KernelBinding[],
    pins: readonly { stream: StreamId; unpin: () => void }[],
    uniforms: Uint8Array | undefined,
  ): void {
    const reads = bindings.filter((kb) => kb.access !== "write").map((kb) => kb.binding);
    const writes = bindings.filter((kb) => kb.access !== "read").map((kb) => kb.binding);
    // Reads issued before this launch must copy their bytes before it may overwrite them.
    if (this.#batch?.overlaps(writes)) this.#sealReads(this.#batch);
    const releaseAll = () => {
      for (const pin of pins) pin.unpin();
    };
    const readFailure = this.#failures.checkReads(reads);
    // Bytes of unsettled status checks: the launch runs, its writes inherit the checks.
    const pending = readFailure === undefined ? this.#failures.pendingOf(reads) : [];
    if (readFailure !== undefined) {
      this.#failures.skipLaunch(readFailure, writes, `kernel '${entry.kernel.label ?? entry.kernel.key}'`);
      releaseAll();
      return;
    }
    if (entry.state.kind === "invalid") {
      this.#failures.failLaunch(entry.state.error, writes);
      releaseAll();
      return;
    }
    if (count[0] === 0 || count[1] === 0 || count[2] === 0) {
      this.#failures.written(writes);
      releaseAll();
      return;
    }
    const ranges: BoundRange[] = [];
    for (const kb of bindings) {
      const owner = this.#pool.tryGet(kb.binding.stream);
      invariant(owner, "a launch's bindings were checked to belong to this server");
      const r = owner.memory.resolve(kb.binding);
      const oom = owner.storage?.failure(r.resource);
      if (oom !== undefined) {
        this.#failures.failLaunch(oom, writes);
        releaseAll();
        return;
      }
      ranges.push({ buffer: r.resource, offset: r.offset, size: Math.min(Math.max(4, roundUp(r.size, 4)), r.resource.size - r.offset) });
    }
    try {
      this.#align(s, bindings);
      const region = uniforms === undefined ? undefined : this.#uniformRegion(s, uniforms);
      const bindGroup = this.#bindGroups.get(entry.bindGroupLayout, ranges, region);
      s.encoder ??= this.device.createCommandEncoder();
      s.pass ??= s.encoder.beginComputePass();
      s.pass.setPipeline(entry.pipeline);
      if (region === undefined) s.pass.setBindGroup(0, bindGroup);
      else s.pass.setBindGroup(0, bindGroup, [region.offset]);
      s.pass.dispatchWorkgroups(count[0], count[1], count[2]);
    } catch (error) {
      this.#failures.failLaunch(
        new LaunchError(`encoding kernel '${entry.kernel.label ?? entry.kernel.key}' failed: ${String(error)}`, { cause: error }),
        writes,
      );
      releaseAll();
      return;
    }
    this.#stats.dispatches++;
    s.dispatches++;
    for (const kb of bindings) s.encodedAllocations.add(kb.binding.allocation);
    s.submissionWrites.push(...writes);
    for (const pin of pins) (pin.stream === s.id ? s.submitPins : s.foreignPins).push(pin.unpin);
    this.#failures.written(writes);
    if (pending.length > 0) this.#failures.inherit(pending, writes, `kernel '${entry.kernel.label ?? entry.kernel.key}'`);
    if (s.dispatches >= this.#tasksMax) this.#flushStream(s);
  }

  /**
   * A region of one of `s`'s uniform arenas holding `data` padded to 16 bytes: the bytes go to the
   * arena's host mirror now and reach the GPU with the arena's one `writeBuffer` right before `s`'s
   * next submit ({@link WebGpuServer.#writeUniforms}); the arena is recycled after that
   * submission completes. The launch binds `buffer` with `size` bytes at dynamic offset `offset`.
   */
  #uniformRegion(s: WebGpuStream, data: Uint8Array): { readonly buffer: GPUBuffer; readonly offset: number; readonly size: number } {
    const size = roundUp(Math.max(16, data.byteLength), 16);
    if (size > UNIFORM_ARENA) {
      throw new LaunchError(`uniforms of ${data.byteLength} bytes exceed the ${UNIFORM_ARENA}-byte limit; pass them in a storage buffer`);
    }
    const align = this.device.limits.minUniformBufferOffsetAlignment;
    let arena = s.uniformBuffers[s.uniformBuffers.length - 1];
    let offset = roundUp(s.uniformCursor, align);
    if (arena === undefined || offset + size > UNIFORM_ARENA) {
      arena = this.#uniformArenas.pop() ?? {
        buffer: this.device.createBuffer({ label: "weft uniforms", size: UNIFORM_ARENA, usage: BufferUsage.UNIFORM | BufferUsage.COPY_DST }),
        mirror: new Uint8Array(UNIFORM_ARENA),
      };
      s.uniformBuffers.push(arena);
      offset = 0;
    }
    s.uniformCursor = offset + size;
    arena.mirror.set(data, offset);
    if (size > data.byteLength) arena.mirror.fill(0, offset + data.byteLength, offset + size);
    return { buffer: arena.buffer, offset, size };
  }

  /**
   * Writes the used part of each of `s`'s uniform arenas from its mirror: one `writeBuffer` per
   * arena, queued before the submit of the commands that read them (queue order). Every arena but
   * the last is full up to its last region; the last up to `uniformCursor`.
   */
  #writeUniforms(s: WebGpuStream): void {
    const arenas = s.uniformBuffers;
    for (let i = 0; i < arenas.length; i++) {
      const arena = arenas[i] as UniformArena;
      const used = i === arenas.length - 1 ? s.uniformCursor : UNIFORM_ARENA;
      if (used > 0) this.device.queue.writeBuffer(arena.buffer, 0, arena.mirror.buffer, arena.mirror.byteOffset, roundUp(used, 4));
    }
  }

  /** Submits every other stream whose unsubmitted encoder refers to one of `bindings`' allocations. */
  #align(s: WebGpuStream, bindings: readonly (BufferBinding | KernelBinding)[]): void {
    for (const other of this.#pool.streams()) {
      if (other === s || !other.hasPendingWork) continue;
      if (bindings.some((b) => other.encodedAllocations.has("binding" in b ? b.binding.allocation : b.allocation))) this.#flushStream(other);
    }
  }

  #runWrite(s: WebGpuStream, owner: WebGpuStream, binding: BufferBinding, data: Uint8Array, padded: number): void {
    if (this.#batch?.overlaps([binding])) this.#sealReads(this.#batch);
    this.#align(s, [binding]);
    this.#flushStream(s);
    if (owner !== s) this.#flushStream(owner);
    const r = owner.memory.resolve(binding);
    let bytes = data;
    if (padded !== data.byteLength) {
      bytes = new Uint8Array(padded);
      bytes.set(data);
    }
    this.device.queue.writeBuffer(r.resource, r.offset, bytes.buffer, bytes.byteOffset, padded);
    this.#stats.writes++;
    this.#failures.written([binding]);
    s.writesSinceSubmit++;
    if (s.writesSinceSubmit >= this.#writesPerSubmit) {
      this.device.queue.submit([]);
      this.#stats.submits++;
      s.writesSinceSubmit = 0;
    }
  }

  /**
   * Adds a read to the current turn's batch (opening one, and scheduling its seal at the end of
   * the turn, when none is open). A read of tainted bytes rejects here, alone.
   */
  #enqueueRead(read: PendingRead): void {
    const tainted = this.#failures.readError(read.bindings);
    if (tainted !== undefined) {
      read.done.reject(tainted);
      releasePins(read);
      return;
    }
    let batch = this.#batch;
    if (batch === undefined) {
      const opened = new ReadBatch();
      this.#batch = batch = opened;
      queueMicrotask(() => this.#sealReads(opened));
    }
    batch.add(read);
  }

  /**
   * Performs `batch` if it is still the open one: flushes every stream its reads depend on, copies
   * every binding into its aligned range of one staging buffer in one submit, maps it once and
   * lets {@link completeReads} settle each read. A read larger than a staging buffer can be
   * rejects alone; a failure to encode rejects the batch's reads.
   */
  #sealReads(batch: ReadBatch): void {
    if (this.#batch !== batch) return;
    this.#batch = undefined;
    if (this.#lost) {
      batch.abort(this.#lost);
      return;
    }
    try {
      this.#performReads(batch);
    } catch (error) {
      // Settled reads ignore this; the others must not wait forever.
      batch.abort(this.#lost ?? new LaunchError(`performing a batch of ${batch.reads.length} reads failed: ${String(error)}`, { cause: error }));
    }
  }

  /** The body of `#sealReads` for a live device (see there). */
  #performReads(batch: ReadBatch): void {
    for (const r of batch.reads) this.#align(r.stream, r.bindings);
    for (const s of batch.streams) this.#flushStream(s);
    // Status checks not copied out yet start now, so the reads below wait for them.
    for (const s of this.#pool.streams()) if (s.pendingChecks.length > 0) this.#flushStream(s);
    const maxGroup = Math.floor(this.device.limits.maxBufferSize / 4) * 4;
    const reads: PendingRead[] = [];
    const sources: ReadSource[][] = [];
    for (const r of batch.reads) {
      const mine = r.bindings.map((b): ReadSource => {
        const owner = this.#pool.tryGet(b.stream);
        invariant(owner, "a read's bindings were checked to belong to this server");
        const resolved = owner.memory.resolve(b);
        return { buffer: resolved.resource, offset: resolved.offset, size: b.size };
      });
      if (readBytes(mine) > maxGroup) {
        r.done.reject(
          new UnsupportedError(
            "reads larger than one staging buffer",
            `a read of ${r.bindings.length} bindings needs ${readBytes(mine)} bytes; the device's maxBufferSize is ` +
              `${this.device.limits.maxBufferSize}; read the bindings in separate calls`,
          ),
        );
        releasePins(r);
        continue;
      }
      reads.push(r);
      sources.push(mine);
    }
    if (reads.length === 0) return;
    const plan = planReadCopies(sources, maxGroup);
    const staging: { buffer: GPUBuffer; bytes: number }[] = [];
    // One scope around the staging buffers, the copies and the submit: an error there means no
    // read of the batch got its bytes (completeReads then rejects them all with it).
    this.device.pushErrorScope("validation");
    let thrown: { error: unknown } | undefined;
    try {
      for (const g of plan.groups) staging.push({ buffer: this.#staging.acquire(Math.max(4, g.bytes)), bytes: g.bytes });
      const encoder = this.device.createCommandEncoder({ label: "weft readback" });
      plan.groups.forEach((g, i) => {
        const target = staging[i];
        invariant(target !== undefined, "one staging buffer per group");
        for (const c of g.copies) encoder.copyBufferToBuffer(c.buffer, c.sourceOffset, target.buffer, c.stagingOffset, c.length);
      });
      this.device.queue.submit([encoder.finish()]);
    } catch (error) {
      thrown = { error };
    }
    const copyScope = this.device.popErrorScope();
    if (thrown !== undefined) {
      void copyScope.catch(() => undefined);
      for (const st of staging) st.buffer.destroy();
      const failure = new LaunchError(`encoding the copies of ${reads.length} reads failed: ${String(thrown.error)}`, { cause: thrown.error });
      for (const r of reads) {
        r.done.reject(failure);
        releasePins(r);
      }
      return;
    }
    this.#stats.submits++;
    this.#stats.readBatches++;
    this.#stats.readMaps += staging.filter((st) => st.bytes > 0).length;
    const outstanding = [...this.#outstanding];
    void completeReads(reads, plan, {
      staging,
      settled: Promise.all(outstanding),
      copyScope,
      lateError: (bindings) => this.#failures.readError(bindings),
      lost: () => this.#lost,
      release: (buffer) => this.#staging.release(buffer),
      copyFailed: (error) => new LaunchError(`the copy submit of ${reads.length} reads failed: ${error.message}`),
    });
  }

  /** Submits `s`'s encoder if it holds work, then cleans up its free memory. */
  #flushStream(s: WebGpuStream): void {
    if (!s.hasPendingWork) {
      for (const unpin of s.submitPins.splice(0)) unpin();
      return;
    }
    // Free pages go back under the memory's dealloc policy (see `MemoryManagement`), not here.
    this.#submitEncoder(s);
  }

  /**
   * Ends the pass and submits `s`'s encoder (no cleanup: page destruction calls this), then starts
   * the readback of the status checks its launches wrote.
   */
  #submitEncoder(s: WebGpuStream): void {
    this.#submitCommands(s);
    if (s.pendingChecks.length > 0) this.#readChecks(s.pendingChecks.splice(0));
  }

  /** The body of {@link WebGpuServer.#submitEncoder}: the encoder's submit. */
  #submitCommands(s: WebGpuStream): void {
    const encoder = s.encoder;
    if (encoder === undefined) return;
    s.pass?.end();
    s.pass = undefined;
    s.encoder = undefined;
    s.dispatches = 0;
    s.encodedAllocations.clear();
    const writes = s.submissionWrites;
    s.submissionWrites = [];
    this.#writeUniforms(s);
    this.device.pushErrorScope("validation");
    const commands = encoder.finish();
    const finishScope = this.device.popErrorScope();
    this.#submit([commands], s, writes, finishScope);
  }

  /**
   * `queue.submit` plus the release of `s`'s pins and uniform arenas. When the command buffer came
   * from `encoder.finish()`, its scope is passed in: a finish-time error is the root cause (Dawn's
   * real message), and the submit's own "invalid command buffer" error only follows from it, so the
   * writes are tainted once, with the first error.
   */
  #submit(commands: GPUCommandBuffer[], s: WebGpuStream, writes: BufferBinding[], finishScope?: Promise<GPUError | null>): void {
    this.device.pushErrorScope("validation");
    this.device.queue.submit(commands);
    const submitScope = this.device.popErrorScope();
    const scope =
      finishScope === undefined
        ? submitScope
        : Promise.all([finishScope, submitScope]).then(([finished, submitted]) => finished ?? submitted);
    this.#trackSubmission(s, scope, writes);
    this.#stats.submits++;
    s.writesSinceSubmit = 0;
    for (const unpin of s.submitPins.splice(0)) unpin();
    const foreign = s.foreignPins.splice(0);
    const arenas = s.uniformBuffers.splice(0);
    s.uniformCursor = 0;
    if (foreign.length === 0 && arenas.length === 0) return;
    this.device.queue.onSubmittedWorkDone().then(
      () => {
        for (const unpin of foreign) unpin();
        for (const arena of arenas) {
          if (this.#uniformArenas.length < 8 && !this.#lost) {
            this.#uniformArenas.push(arena);
          } else {
            this.#bindGroups.forget(arena.buffer);
            arena.buffer.destroy();
          }
        }
      },
      () => undefined,
    );
  }

  /**
   * Copies the status words of `checks` into one staging buffer (one submit, after the submit of
   * the launches that wrote them), maps it, and settles each check with its decoded failure (or
   * as clean). Tracked as outstanding, so reads wait for it. A failure to copy or map settles every
   * check as failed with that error: an unverified output must never read as valid.
   */
  #readChecks(checks: readonly PendingStatusCheck[]): void {
    const bytes = 8 * checks.length;
    const finish = (settle: (c: PendingStatusCheck, i: number) => void): void => {
      checks.forEach((c, i) => {
        settle(c, i);
        c.unpin();
      });
    };
    const failAll = (reason: string, cause?: unknown): void =>
      finish((c) => this.#failures.settle(c.id, this.#lost ?? new LaunchError(`${c.check.what}: its status could not be read back (${reason})`, { cause })));
    let staging: GPUBuffer;
    this.device.pushErrorScope("validation");
    try {
      staging = this.#staging.acquire(bytes);
      const encoder = this.device.createCommandEncoder({ label: "weft status checks" });
      checks.forEach((c, i) => {
        const owner = this.#pool.tryGet(c.check.status.stream);
        invariant(owner, "a status binding was checked to belong to this server");
        const r = owner.memory.resolve(c.check.status);
        encoder.copyBufferToBuffer(r.resource, r.offset, staging, 8 * i, 8);
      });
      this.device.queue.submit([encoder.finish()]);
      this.#stats.submits++;
    } catch (error) {
      void this.device.popErrorScope().catch(() => undefined);
      failAll(String(error), error);
      return;
    }
    const scope = this.device.popErrorScope();
    const buffer = staging;
    const done = Promise.all([scope, buffer.mapAsync(MapMode.READ, 0, bytes)]).then(
      ([error]) => {
        if (error !== null) {
          buffer.unmap();
          buffer.destroy();
          failAll(error.message);
          return;
        }
        const words = new Uint32Array(buffer.getMappedRange(0, bytes).slice(0));
        buffer.unmap();
        this.#staging.release(buffer);
        finish((c, i) => this.#failures.settle(c.id, c.check.decode(words.subarray(2 * i, 2 * i + 2))));
      },
      (error: unknown) => {
        buffer.destroy();
        failAll(String(error), error);
      },
    );
    this.#track(done);
  }

  /** A submission whose scope reports an error taints what its launches wrote. */
  #trackSubmission(s: WebGpuStream, scope: Promise<GPUError | null>, writes: BufferBinding[]): void {
    this.#track(
      scope.then((error) => {
        if (error === null || this.#lost) return;
        const failure = new LaunchError(`a submission of stream ${s.id} failed: ${error.message}`);
        s.logFailure(failure);
        this.#failures.failLaunch(failure, writes);
      }),
    );
  }

  #track(promise: Promise<unknown>): void {
    const settled: Promise<unknown> = promise.then(
      (): void => void this.#outstanding.delete(settled),
      (): void => void this.#outstanding.delete(settled),
    );
    this.#outstanding.add(settled);
  }

  #onLost(reason: string): void {
    if (this.#lost) return;
    const error = new DeviceLostError(reason);
    this.#lost = error;
    for (const reject of [...this.#pending]) reject(error);
    this.#pending.clear();
    const batch = this.#batch;
    this.#batch = undefined;
    batch?.abort(error);
    for (const task of this.#deferred.takeAll()) task.abort(error);
  }
}

/** Whether two bindings name a common byte of one allocation. */
function overlap(a: BufferBinding, b: BufferBinding): boolean {
  return a.allocation === b.allocation && a.stream === b.stream && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}
