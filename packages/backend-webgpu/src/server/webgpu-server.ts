/// <reference types="@webgpu/types" preserve="true" />
import { type CacheStats, Deferred, SlotTable, StreamId, UnsupportedError, checkChoice, checkInteger, invariant } from "@weft/environment";
import {
  DEFAULT_MIN_PAGE_SIZE,
  DeviceLostError,
  DeviceMemory,
  FailureStore,
  InvalidBindingError,
  LaunchError,
  ServerError,
  StreamPool,
  totalMemoryUsage,
  type BufferBinding,
  type ComputeServer,
  type CubeCount,
  type DeallocPolicy,
  type FailureId,
  type KernelBinding,
  type FallbackGap,
  type GroupEnd,
  type LaunchFallback,
  type LaunchMode,
  type MemoryConfiguration,
  type MemoryHandle,
  type MemoryUsage,
  type StatusCheck,
  kernelName,
  launchReads,
  launchWrites,
} from "@weft/server";
import type { WgslKernel } from "../kernel.js";
import { GpuBufferStorage } from "../memory/gpu-buffer-storage.js";
import type { StagingPoolOptions } from "../memory/staging-pool.js";
import { BindGroupCache, type BoundRange } from "./bind-group-cache.js";
import { PipelineStore, type PipelineEntry } from "./pipeline-store.js";
import { PendingRead, readSource, releasePins, type ReadSource } from "./read-batch.js";
import { Readback, type ReadCounters } from "./readback.js";
import { UniformArenas } from "./uniform-arenas.js";
import { GatedTask, ValidationGate } from "./validation-gate.js";
import {
  Dispatch,
  WebGpuStream,
  type FinishedWork,
  LaunchPin,
  type PendingStatusCheck,
  type StreamContext,
  type SubmissionCounters,
  SharedEncoder,
  SubmitCompletion,
} from "./webgpu-stream.js";

/** Tuning of a {@link WebGpuServer}; every field has a default. */
export interface WebGpuServerOptions {
  /** Regular stream slots (stream id modulo this). Default 32. */
  readonly maxStreams?: number;
  /** Dispatches recorded (by all streams, in the shared encoder) before they are submitted. Default 64. */
  readonly tasksMax?: number;
  /**
   * Bytes the unsubmitted launches (all streams') may write before they are submitted. Default
   * 64 MiB. Freed memory that unsubmitted launches use is reused only after their submit, so this
   * bounds the extra memory a loop of large launches holds while syncs wait for the end of the turn.
   */
  readonly maxPendingBytes?: number;
  /**
   * Bytes the unsubmitted launches (all streams') may bind, read or written (each launch's bound
   * ranges, counted per launch), before they are submitted: a measure of the device work the host
   * holds back.
   * Default 1 GiB.
   *
   * Why: the device starts nothing before the submit. A loop of launches that read much and write
   * little (a full sum of 2^26 f32 reads 256 MiB and writes 4 bytes) was submitted only every
   * `tasksMax` launches, so the H200 waited for 32 sums of host work (~1.3–2.9 ms) before it began
   * the first, and the loop ran at 0.27–0.53 of the limit kernel. A submit per sum is no better:
   * one `queue.submit` costs the H200's host ~45 µs (the bench's hand-written chain at one
   * dispatch per submit), more than half a sum's 72 µs on the device. 1 GiB is ~290 µs of the
   * H200's bandwidth, so a submit costs at most ~15% of the device time it carries, and the
   * device waits for at most 4 such sums before its first.
   */
  readonly maxPendingWork?: number;
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
  /** When the recorded work a read waits for is submitted (see {@link ReadSubmit}). Default `"batch"`. */
  readonly readSubmit?: ReadSubmit;
  /** Reads per early shared submit under `readSubmit: "batch"` (a positive integer). Default 8. */
  readonly readBatch?: number;
}

/**
 * When the work a read waits for is submitted.
 *
 * - `turn`: with the turn's read batch — every stream's recorded work and the
 *   copies of every read of the turn in one `queue.submit`, one map. The fewest submits; but the
 *   GPU starts only once the host has recorded the whole turn (32 served requests, say).
 * - `read`: the work recorded so far (every stream's: one shared encoder) is submitted when the
 *   read is issued, so the GPU runs it while the host records what comes next (the next request);
 *   the turn's copies and map are still shared. One more submit per read (~45 µs of host time on
 *   the H200) for the overlap.
 * - `batch` (the default): as `turn`, but every `readBatch` reads of a turn (default 8), every
 *   stream's recorded work so far is submitted in one shared submit, so the GPU runs the first
 *   requests of a wave while the host records the next ones; the copies and the map stay shared
 *   by the turn. One more submit per `readBatch` reads. A turn of fewer reads is `turn` exactly.
 *   Why the default: the serving workload (32 requests in flight) on the H200, 2026-11-30 05:39–
 *   05:41 UTC, 24 processes of 4–6 rounds interleaved: 2,227 req/s mean with `turn` against 2,578
 *   with `batch` of 8 (+16%; 2,589 with 4), p50 lower in step; the host is a VM whose rate moved
 *   1,500–3,400 req/s between processes of either mode, so this is a mean, not a floor.
 *
 * Every way a read sees every launch issued before it, and errors reach exactly the reads they
 * affect: submitting a stream early is what a stream does anyway at `tasksMax` dispatches.
 */
export type ReadSubmit = "turn" | "read" | "batch";

/** Every {@link ReadSubmit}, for validation. */
const READ_SUBMITS: readonly ReadSubmit[] = ["turn", "read", "batch"];

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
  /** Launch groups that could not run as a whole and ran their fallback instead. */
  readonly fallbacks: number;
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
  /**
   * Streams whose recorded work went into submits (every submit carries the one shared encoder,
   * which holds the work of every stream that recorded since the last submit): with `submits`,
   * how many streams' work each submit carried on average.
   */
  readonly sharedSubmitParts: number;
}

/** Default {@link WebGpuServerOptions.maxPipelines}: compiled pipelines kept per device. */
export const DEFAULT_MAX_PIPELINES = 512;
/** One launch recorded in an open launch group: encoded (or replaced) when the group's turn comes. */
class GroupLaunch {
  constructor(
    readonly entry: PipelineEntry,
    readonly count: CubeCount,
    readonly bindings: readonly KernelBinding[],
    /** Pins taken when recorded: the memory stays as it was until the group ran. */
    readonly pins: readonly LaunchPin[],
    readonly uniforms: Uint8Array | undefined,
  ) {}
}

/** An open launch group of one stream (`beginGroup` … `endGroup`; held by the stream, `WebGpuStream.openGroup`). */
export class OpenGroup {
  readonly launches = Array.of<GroupLaunch>();

  constructor(
    readonly stream: WebGpuStream,
    readonly fallback: LaunchFallback,
  ) {}
}

const roundUp = (n: number, to: number): number => Math.ceil(n / to) * to;

/**
 * The WebGPU {@link ComputeServer}: one `GPUDevice`, its one `GPUQueue`, and a pool of
 * `WebGpuStream`s (cubecl-wgpu's `WgpuServer`). The server routes: it checks each call
 * (ownership of bindings, arguments) and hands the work to the stream it belongs to, which encodes
 * and submits it; reads go to the `Readback`, and the order behind pending pipelines to the
 * `ValidationGate`.
 *
 * @remarks
 * **Order.** Everything funnels into the one queue, so order is submission order. Every stream
 * records into one shared encoder (`SharedEncoder`), whose dispatches run in recording order, so
 * a launch that consumes another stream's recorded write, or writes what another stream's recorded
 * work reads, needs no submit first. Host writes (`queue.writeBuffer`) jump ahead of unsubmitted
 * work, so recorded work that binds the written bytes is submitted before the write
 * (docs/pitfalls.md#p15).
 * **Batching.** The shared encoder is submitted every `tasksMax` dispatches (or `maxPendingBytes`
 * written, or `maxPendingWork` bound, all streams together), at flushes and before such host
 * writes; the syncs of one turn share one submit at the turn's end.
 * Reads issued in one turn are coalesced, and sealing them submits every stream's recorded work
 * and the read copies in one `queue.submit` (see `Readback`, docs/performance.md#shared-submits).
 * **Lifetimes.** A launch pins every slice it binds until its stream releases the pins (see
 * `WebGpuStream`; docs/pitfalls.md#p14).
 * **Memory.** Every stream's pages come from one `GpuBufferStorage` (the retained pool and
 * the `memoryLimit` are per device) and answer to one `DeviceMemory` (CubeCL's dealloc policy,
 * reclaiming across streams). {@link WebGpuServer.releaseUnused} gives every free page back;
 * {@link WebGpuServer.destroy} gives everything back.
 * **Validation before launch.** See `ValidationGate`: a launch of an invalid pipeline taints
 * exactly its write bindings with the {@link @weft/server!ValidationError | ValidationError}, and later launches reading those
 * bytes are skipped and taint theirs. Invalid pipelines never reach a command buffer.
 * **Launch groups.** Launches recorded between `beginGroup` and `endGroup` (a fused block) are
 * pinned and kept; the group is one gated task that waits for *every* pipeline of the group, then
 * runs the group as a whole — or, when one of them is invalid or a launch reads bytes a failure
 * claims from outside the group, none of them: the group's `LaunchFallback` runs in its place
 * inside `ValidationGate.capture`, so the tasks it submits go ahead of everything queued after
 * the group, and a failure reaches only what is computed from the op that fails. An invalid
 * group kernel is also logged in the stream's failure log (`failures(stream)`): it costs speed,
 * not correctness.
 * **Status checks** ({@link WebGpuServer.verify}). A kernel that must report a data-dependent
 * failure (`gather`'s out-of-range index) writes a status word; its writes carry a *pending*
 * claim until the word is read back (copied right after the stream's next submit, one `mapAsync`
 * per submit, by the `Readback`). Launches reading pending bytes run and their writes
 * inherit the claim; the check settles into the decoded failure or into clean bytes. The readback
 * is an outstanding promise, so every read issued after the check waits for it: a read never
 * resolves with bytes a failed check claims.
 * **Errors.** Misuse throws at the call and changes nothing: a binding this server did not
 * allocate, or one that does not name live bytes, is an `InvalidBindingError`; a bad work-group
 * count or binding layout a `LaunchError` (the same errors as `HostComputeServer`, checked by the
 * `ComputeServer` contract suite of `@weft/server/testing`). Reads reject with the taint of their
 * bytes; a failed submission taints the bytes its launches wrote. `uncapturederror` events go to the
 * failure log of the stream last used. Device loss rejects every pending read and sync with
 * {@link DeviceLostError}; every later call throws it.
 */
export class WebGpuServer implements ComputeServer<WgslKernel> {
  readonly name = "webgpu";
  readonly device: GPUDevice;
  readonly #pool: StreamPool<WebGpuStream>;
  readonly #failures: FailureStore<WebGpuStream>;
  readonly #pipelines: PipelineStore;
  readonly #config: MemoryConfiguration;
  /** The page buffers of every stream, with the retained pool and the `memoryLimit`. */
  readonly #storage: GpuBufferStorage;
  /** The device's memory: the dealloc clock and reclaiming across streams. */
  readonly memory: DeviceMemory;
  /** The uniform arenas every stream carves its launches' parameters from. */
  readonly #uniformArenas: UniformArenas;
  /** Bind groups of launches, invalidated when a page buffer is destroyed; bounded (LRU). */
  readonly #bindGroups: BindGroupCache;
  /** Work queued behind pending pipelines, in issue order. Empty in the steady state. */
  readonly #gate: ValidationGate;
  /**
   * The device's `uncapturederror` listener, removed once the device is lost or the server destroyed: Dawn's Node
   * binding holds listeners from native code, so a listener left on a destroyed device keeps this
   * server — and through it every native object it created — alive for the process (+2.6 MiB per
   * re-init on Mesa before this was removed).
   */
  readonly #onUncaptured: (event: Event) => void;
  /** The reads of the current turn and the staging pool. */
  readonly #readback: Readback;
  /** When a read's stream submits its work (`WebGpuServerOptions.readSubmit`). */
  readonly #readSubmit: ReadSubmit;
  /** Reads of a turn per early shared submit under `"batch"`. */
  readonly #readBatch: number;
  /** What every stream shares (built before the first stream is created). */
  readonly #context: StreamContext;
  /**
   * The limits every launch is checked against, read once: each attribute of Dawn's
   * `GPUSupportedLimits` is a native getter (~1.5 µs a read on the 2-core machine), and
   * `#checkLaunch` read two per launch.
   */
  readonly #limits: { readonly maxComputeWorkgroupsPerDimension: number; readonly maxStorageBuffersPerShaderStage: number };
  /**
   * Status checks issued and still queued behind the validation gate (their pending claim is not
   * recorded yet): what `pendingOf` must count too. Bounded by the queued tasks.
   */
  readonly #queuedChecks = new Set<StatusCheck>();
  /**
   * Error-scope and validation promises not settled yet; each removes itself when it settles. A
   * `SlotTable`, not a `Set`: a long-lived set with an entry per submit kept past requests' objects
   * alive into the old generation (docs/performance.md#pending-reads).
   */
  readonly #outstanding = new SlotTable<Promise<unknown>>();
  /**
   * Syncs issued this turn, settled together after the turn's shared submit (`#syncAtTurnEnd`);
   * emptied by the microtask the first of them schedules. Bounded by the syncs of one turn.
   */
  readonly #turnSyncs: Deferred<void>[] = [];
  /**
   * Rejecters of reads and syncs in flight; each removes itself when it settles. A `SlotTable`, not
   * a `Set`: with an entry per read, a set kept every request's promises, closures and results
   * alive through each scavenge into the old generation (docs/performance.md#pending-reads).
   */
  readonly #pending = new SlotTable<(error: DeviceLostError) => void>();
  /** The error every call throws once the device is lost. */
  #lost: DeviceLostError | undefined;
  /** The stream of the last call, to which uncaptured errors are attributed. */
  #lastStream: WebGpuStream | undefined;
  /** Allocations that must fail next (fault injection). */
  #injectedAllocationFailures = 0;
  /** Open launch groups by stream; an entry lives from `beginGroup` to `endGroup`. */
  readonly #counters: SubmissionCounters & ReadCounters & { deferredLaunches: number; reads: number; sharedSubmitParts: number; fallbacks: number } = {
    submits: 0,
    dispatches: 0,
    writes: 0,
    deferredLaunches: 0,
    reads: 0,
    readBatches: 0,
    readMaps: 0,
    sharedSubmitParts: 0,
    fallbacks: 0,
  };

  constructor(device: GPUDevice, options: WebGpuServerOptions = {}) {
    this.device = device;
    this.#bindGroups = new BindGroupCache(device);
    const limits = device.limits;
    this.#limits = { maxComputeWorkgroupsPerDimension: limits.maxComputeWorkgroupsPerDimension, maxStorageBuffersPerShaderStage: limits.maxStorageBuffersPerShaderStage };
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
          for (const s of this.#pool.streams()) s.submit();
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
    this.#uniformArenas = new UniformArenas(device, (buffer) => this.#bindGroups.forget(buffer));
    this.#pipelines = new PipelineStore(device, (ready) => this.#track(ready), {
      capacity: options.maxPipelines ?? DEFAULT_MAX_PIPELINES,
      onEvict: (entry) => {
        if (entry.bindGroupLayout !== undefined) this.#bindGroups.forgetLayout(entry.bindGroupLayout);
      },
    });
    // Streams are created lazily, after the context below exists.
    this.#readSubmit = checkChoice("WebGpuServer", "options.readSubmit", options.readSubmit ?? "batch", READ_SUBMITS);
    this.#readBatch = checkInteger("WebGpuServer", "options.readBatch", options.readBatch ?? 8, 1);
    this.#pool = new StreamPool<WebGpuStream>({ create: (slot) => this.#createStream(slot) }, options.maxStreams ?? 32, 0);
    this.#failures = new FailureStore(this.#pool);
    const lost = (): DeviceLostError | undefined => this.#lost;
    this.#context = {
      device,
      memory: this.#config,
      tasksMax: options.tasksMax ?? 64,
      maxPendingBytes: options.maxPendingBytes ?? 64 * 1024 * 1024,
      maxPendingWork: options.maxPendingWork ?? 1024 * 1024 * 1024,
      writesPerSubmit: options.writesPerSubmit ?? 64,
      storage: this.#storage,
      deviceMemory: this.memory,
      bindGroups: this.#bindGroups,
      counters: this.#counters,
      failures: this.#failures,
      track: (promise) => this.#track(promise),
      lost,
      encoder: new SharedEncoder(device, this.#uniformArenas),
      submitAll: () => void this.#submitAll(),
    };
    this.#gate = new ValidationGate(lost);
    this.#readback = new Readback(
      {
        device,
        failures: this.#failures,
        counters: this.#counters,
        submitAll: (tail) => this.#submitAll(tail),
        source: (binding) => this.#source(binding),
        track: (promise) => this.#track(promise),
        outstanding: () => this.#outstanding.values(),
        lost,
      },
      options.staging,
    );
    device.lost.then(
      (info) => this.#onLost(`${info.reason}: ${info.message || "no message"}`),
      () => this.#onLost("the lost promise rejected"),
    );
    this.#onUncaptured = (event) => {
      const error = (event as GPUUncapturedErrorEvent).error;
      this.#lastStream?.logFailure(new ServerError("uncaptured", `uncaptured WebGPU error: ${error.message}`));
    };
    device.addEventListener("uncapturederror", this.#onUncaptured);
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
      ...this.#counters,
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
      stagingCreated: this.#readback.stagingStats().created,
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
   * Test hook: every kernel whose key or label matches `pattern` and whose pipeline is created from
   * now on gets invalid WGSL, so the device rejects it for real (`undefined` turns it off).
   */
  injectInvalidKernels(pattern: RegExp | undefined): void {
    this.#pipelines.injectInvalid = pattern;
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
    this.#checkAlive();
    return this.#stream(stream).memory.reserve(size, stream);
  }

  create(data: Uint8Array, stream: StreamId): MemoryHandle {
    const handle = this.empty(data.byteLength, stream);
    this.write(handle.binding(), data, stream);
    return handle;
  }

  write(binding: BufferBinding, data: Uint8Array, stream: StreamId): void {
    this.#checkAlive();
    if (data.byteLength !== binding.size) {
      throw new InvalidBindingError("write", `${data.byteLength} bytes given for a binding of ${binding.size} bytes; pass exactly the binding's bytes`);
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
    const bytes = this.#gate.waiting ? data.slice() : data;
    const run = (): void => {
      try {
        this.#runWrite(s, owner, binding, bytes, padded);
      } finally {
        unpin();
      }
    };
    this.#gate.submit(new GatedTask(undefined, run, () => unpin()));
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
    for (const b of bindings) this.#owner(b, "read").memory.resolve(b);
    return this.#failures.readError(bindings);
  }

  /**
   * Whether a failure or a check may claim some byte now (`ComputeServer.hasClaims`): a live entry
   * in the failure graph or a check still queued behind a pipeline's compilation. True once the
   * device is lost (`failureOf` then throws, and callers must keep asking it).
   */
  hasClaims(): boolean {
    return this.#lost !== undefined || this.#queuedChecks.size > 0 || this.#failures.hasClaims;
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
   * **Batching.** Reads issued in the same turn are performed together when the turn ends (see
   * `Readback`); each promise gets its own copy of its bytes. A launch or write issued later
   * in the turn that writes bytes of a waiting read performs the batch first, so a read never sees
   * work issued after it. The slices are pinned from this call until the read settles, so
   * releasing the handles right away is safe.
   * **Errors.** A read of tainted bytes rejects alone, with its taint; device loss rejects every
   * pending read with {@link DeviceLostError}. The promise holds only the staging buffer
   * (docs/pitfalls.md#p4).
   */
  read(bindings: readonly BufferBinding[], stream: StreamId, into?: readonly (Uint8Array | undefined)[]): Promise<Uint8Array[]> {
    if (this.#lost) return Promise.reject(this.#lost);
    const s = this.#stream(stream);
    const unpins = Array.of<() => void>();
    try {
      for (const b of bindings) unpins.push(this.#owner(b, "read").memory.pin(b));
    } catch (error) {
      // A binding of memory that is not live (misuse): nothing may stay pinned by a read that
      // never ran, and the read rejects with it (an asynchronous call does not throw).
      for (const unpin of unpins) unpin();
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    const done = this.#pendingDeferred<Uint8Array[]>();
    this.#counters.reads++;
    const read = new PendingRead(s, bindings, done, unpins, into);
    const run = (): void => {
      if (this.#readSubmit === "read") s.flush();
      const batched = this.#readback.enqueue(read);
      // "batch": every `readBatch`-th read of the turn submits what every stream recorded so far.
      if (this.#readSubmit === "batch" && batched > 0 && batched % this.#readBatch === 0) void this.#submitAll();
    };
    const abort = (error: DeviceLostError): void => {
      done.reject(error);
      releasePins(read);
    };
    this.#gate.submit(new GatedTask(undefined, run, abort));
    return done.promise;
  }

  // ----- kernels ------------------------------------------------------------------------------

  compile(kernel: WgslKernel): void {
    this.#checkAlive();
    const entry = this.#pipelines.getOrCompile(kernel);
    if (entry.state.kind === "invalid") throw entry.state.error;
  }

  ready(kernel: WgslKernel, compile = true): boolean {
    this.#checkAlive();
    const entry = compile ? this.#pipelines.getOrCompile(kernel, false) : this.#pipelines.peek(kernel);
    return entry?.state.kind === "valid";
  }

  launch(
    kernel: WgslKernel,
    count: CubeCount,
    bindings: readonly KernelBinding[],
    stream: StreamId,
    mode: LaunchMode,
    uniforms?: Uint8Array,
  ): void {
    this.#checkAlive();
    // Misuse throws before anything is recorded, whatever the mode (as on every server).
    this.#checkLaunch(kernel, count, bindings);
    for (const kb of bindings) this.#owner(kb.binding, "launch").memory.check(kb.binding);
    const entry = this.#pipelines.getOrCompile(kernel);
    if (mode === "discard") return;
    const s = this.#stream(stream);
    // Pin every slice now: a deferred launch must find its memory as it was when issued.
    // Classes and `Array.of`, not literals, for what a launch records (docs/performance.md#allocation-sites).
    const pins = Array.of<LaunchPin>();
    try {
      for (const kb of bindings) pins.push(new LaunchPin(kb.binding.stream, this.#owner(kb.binding, "launch").memory.pin(kb.binding)));
    } catch (error) {
      for (const pin of pins) pin.unpin();
      throw error;
    }
    const group = s.openGroup;
    if (group !== undefined) {
      group.launches.push(new GroupLaunch(entry, count, bindings, pins, uniforms?.slice()));
      return;
    }
    const deferred = this.#gate.waiting || entry.state.kind === "pending";
    const data = uniforms !== undefined && deferred ? uniforms.slice() : uniforms;
    if (deferred) this.#counters.deferredLaunches++;
    const abort = (): void => {
      for (const pin of pins) pin.unpin();
    };
    this.#gate.submit(new GatedTask(entry, () => this.#runLaunch(s, entry, count, bindings, pins, data), abort));
  }

  /**
   * Verifies the status words a launch just issued on `stream` wrote (see {@link StatusCheck} and
   * the type doc): in issue order, the check's writes get a pending claim (unless the launch
   * already failed or was skipped: its writes carry that failure), and the words are read back
   * after `stream`'s next submit.
   */
  verify(check: StatusCheck, stream: StreamId): void {
    this.#checkAlive();
    const s = this.#stream(stream);
    const unpin = this.#owner(check.status, "verify").memory.pin(check.status);
    this.#queuedChecks.add(check);
    const run = (): void => {
      this.#queuedChecks.delete(check);
      if (this.#failures.checkReads([check.status]) !== undefined) {
        unpin();
        return;
      }
      const id = this.#failures.suspect(new LaunchError(`${check.what}: its status was not read back yet`), check.writes, check.what);
      if (id === undefined) {
        unpin();
        return;
      }
      s.addCheck({ id, check, unpin });
    };
    const abort = (): void => {
      this.#queuedChecks.delete(check);
      unpin();
    };
    this.#gate.submit(new GatedTask(undefined, run, abort));
  }

  beginGroup(stream: StreamId, fallback: LaunchFallback): void {
    this.#checkAlive();
    const s = this.#stream(stream);
    if (s.openGroup !== undefined) {
      throw new LaunchError(`beginGroup: stream ${stream} already has an open launch group; end it first (groups do not nest)`);
    }
    s.openGroup = new OpenGroup(s, fallback);
  }

  endGroup(stream: StreamId, end: GroupEnd): void {
    const s = this.#stream(stream);
    const group = s.openGroup;
    if (group === undefined) throw new LaunchError(`endGroup: stream ${stream} has no open launch group; call beginGroup first`);
    s.openGroup = undefined;
    const drop = (): void => {
      for (const l of group.launches) for (const pin of l.pins) pin.unpin();
      group.fallback.discard();
    };
    if (end === "abort" || group.launches.length === 0) {
      drop();
      return;
    }
    const deferred = this.#gate.waiting || group.launches.some((l) => l.entry.state.kind === "pending");
    if (deferred) this.#counters.deferredLaunches += group.launches.length;
    this.#gate.submit(new GatedTask(group.launches.map((l) => l.entry), () => this.#runGroup(group), drop));
  }

  // ----- submission ---------------------------------------------------------------------------

  flush(stream: StreamId): void {
    this.#checkAlive();
    const s = this.#stream(stream);
    this.#gate.submit(new GatedTask(undefined, () => s.flush(), () => undefined));
  }

  async sync(stream: StreamId): Promise<void> {
    if (this.#lost) throw this.#lost;
    this.#stream(stream);
    const done = this.#pendingDeferred<void>();
    this.#gate.submit(new GatedTask(undefined, () => this.#syncAtTurnEnd(done), (error) => done.reject(error)));
    await done.promise;
  }

  memoryUsage(): MemoryUsage {
    // Retained (freed, kept for reuse) buffers are device memory this server still holds.
    return totalMemoryUsage(this.#pool.streams(), (s) => s.memory.usage(), this.#storage.stats().retainedBytes);
  }

  /**
   * Performs the open read batch, submits every stream's pending work and destroys every free page,
   * retained buffer and kept staging buffer (`weft.releaseUnused()`).
   */
  releaseUnused(): void {
    this.#checkAlive();
    this.#readback.sealOpen();
    for (const s of this.#pool.streams()) s.flush();
    this.memory.releaseUnused();
    this.#readback.purge();
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
    for (const s of this.#pool.streams()) s.submit();
    this.#onLost("the server was destroyed (its device was disposed or replaced)");
    for (const s of this.#pool.streams()) s.memory.dispose();
    this.#storage.destroyAll();
    this.#readback.purge();
    this.#uniformArenas.destroyAll();
    this.#pipelines.clear();
    this.#bindGroups.clear();
  }

  // ----- routing ------------------------------------------------------------------------------

  #createStream(slot: StreamId): WebGpuStream {
    if (this.#lost) throw this.#lost;
    return new WebGpuStream(slot, this.#context);
  }

  #stream(id: StreamId): WebGpuStream {
    const s = this.#pool.getOrCreate(id);
    this.#lastStream = s;
    return s;
  }

  /** The stream whose memory holds `binding`; a binding no stream of this server allocated is misuse. */
  #owner(binding: BufferBinding, op: string): WebGpuStream {
    const owner = this.#pool.tryGet(binding.stream);
    if (owner === undefined) {
      throw new InvalidBindingError(
        op,
        `allocation ${binding.allocation} names stream ${binding.stream}, which allocated nothing on this server; ` +
          "bindings must come from handles of this WebGpuServer",
      );
    }
    return owner;
  }

  /** Where `binding`'s bytes live (for the readback's copies). */
  #source(binding: BufferBinding): ReadSource {
    const owner = this.#pool.tryGet(binding.stream);
    invariant(owner, "a read's bindings were checked to belong to this server");
    const resolved = owner.memory.resolve(binding);
    return readSource(resolved.resource, resolved.offset, binding.size);
  }

  /**
   * Settles `done` once every stream's work recorded so far has completed on the device: the
   * first sync of a turn schedules one microtask that makes one shared submit (`#submitShared`)
   * and settles every sync of the turn with that submit's completion (the one its streams' pins
   * wait on; the queue is asked once when there was nothing to submit). A loop
   * that syncs after every launch (`void device.sync()`) thus costs one submit per `tasksMax`
   * launches (or per `maxPendingBytes` written, or `maxPendingWork` bound), not one per
   * iteration (docs/performance.md#shared-submits).
   */
  #syncAtTurnEnd(done: Deferred<void>): void {
    this.#turnSyncs.push(done);
    if (this.#turnSyncs.length > 1) return;
    queueMicrotask(() => {
      const waiting = this.#turnSyncs.splice(0);
      // After loss every pending sync was rejected already (`#onLost`).
      if (this.#lost !== undefined) return;
      let submitted: SharedSubmit | undefined;
      try {
        submitted = this.#submitShared();
      } catch (error) {
        // Encoding or submitting failed at once (nothing was submitted): the turn's syncs reject
        // with it rather than wait for a completion that nobody asked for.
        for (const d of waiting) d.reject(error);
        return;
      }
      const settle = (): void => {
        for (const d of waiting) this.#lost ? d.reject(this.#lost) : d.resolve();
      };
      const fail = (error: unknown): void => {
        for (const d of waiting) d.reject(this.#lost ?? new DeviceLostError(String(error), { cause: error }));
      };
      // The submit just made covers every earlier one (the queue runs in order): wait on its
      // completion, which the streams' pins wait on too, rather than ask the queue a second time.
      if (submitted !== undefined) submitted.completion.onDone(settle, fail);
      else this.device.queue.onSubmittedWorkDone().then(settle, fail);
    });
  }

  /** `#submitShared`'s validation scope (`null` at once when there was nothing to submit). */
  #submitAll(tail?: GPUCommandBuffer): Promise<GPUError | null> {
    return this.#submitShared(tail)?.scope ?? Promise.resolve(null);
  }

  /**
   * Submits every stream's recorded work (the shared encoder, whose dispatches run in recording
   * order), then `tail` (a readback's copies), in one `queue.submit`, then starts one readback of
   * every stream's pending status checks; `tail` goes last, after everything it copies.
   * Returns the submit's validation scope and completion, or `undefined` when there was nothing
   * to submit. See docs/performance.md#shared-submits.
   */
  #submitShared(tail?: GPUCommandBuffer): SharedSubmit | undefined {
    const parts: FinishedWork[] = [];
    const checks: PendingStatusCheck[] = [];
    const streams = this.#pool.streams();
    const encoder = this.#context.encoder;
    const anyWork = tail !== undefined || encoder.open;
    let shared: ReturnType<SharedEncoder["finish"]>;
    // One validation scope around every finish and the submit (`WebGpuStream.finish`).
    if (anyWork) this.device.pushErrorScope("validation");
    try {
      for (const s of streams) {
        const work = s.finish();
        if (work !== undefined) parts.push(work);
        if (s.hasPendingChecks) checks.push(...s.takeChecks());
      }
      if (anyWork) {
        const commands: GPUCommandBuffer[] = [];
        shared = encoder.finish();
        if (shared !== undefined) commands.push(shared.commands);
        if (tail !== undefined) commands.push(tail);
        this.device.queue.submit(commands);
      }
    } catch (error) {
      if (anyWork) void this.device.popErrorScope().catch(() => undefined);
      throw error;
    }
    let submitted: SharedSubmit | undefined;
    if (anyWork) {
      const scope = this.device.popErrorScope();
      this.#counters.submits++;
      this.#counters.sharedSubmitParts += parts.length;
      const completion = new SubmitCompletion(this.device.queue);
      for (const p of parts) p.submitted(scope, completion);
      shared?.release(this.#lost !== undefined);
      submitted = { scope, completion };
    }
    if (checks.length > 0) this.#readback.readChecks(checks);
    return submitted;
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

  #checkAlive(): void {
    if (this.#lost) throw this.#lost;
  }

  #checkLaunch(kernel: WgslKernel, count: CubeCount, bindings: readonly KernelBinding[]): void {
    const limits = this.#limits;
    const max = limits.maxComputeWorkgroupsPerDimension;
    if (count.some((c) => !Number.isInteger(c) || c < 0 || c > max)) {
      throw new LaunchError(
        `launch of '${kernelName(kernel)}': work-group count [${count.join(", ")}] exceeds the device's ` +
          `maxComputeWorkgroupsPerDimension (${max}) or is not a non-negative integer; split the dispatch over y/z`,
      );
    }
    if (bindings.length > limits.maxStorageBuffersPerShaderStage) {
      throw new LaunchError(
        `launch of '${kernelName(kernel)}' binds ${bindings.length} storage buffers; the device allows ` +
          `${limits.maxStorageBuffersPerShaderStage} per shader stage; split the kernel`,
      );
    }
    for (const kb of bindings) {
      if (kb.binding.offset % this.#config.alignment !== 0) {
        throw new LaunchError(
          `launch of '${kernelName(kernel)}': binding at offset ${kb.binding.offset} of allocation ` +
            `${kb.binding.allocation} is not a multiple of the storage offset alignment (${this.#config.alignment}); ` +
            "bind the whole allocation and pass the offset as a uniform",
        );
      }
    }
  }

  /**
   * Runs a submitted group (see the type doc): every launch as recorded, or — when it cannot run as
   * a whole — its fallback, whose tasks go ahead of the work queued after the group, and the
   * taint of the writes the fallback could not produce.
   */
  #runGroup(group: OpenGroup): void {
    const failure = this.#groupFailure(group);
    if (failure === undefined) {
      group.fallback.discard();
      for (const l of group.launches) this.#runLaunch(group.stream, l.entry, l.count, l.bindings, l.pins, l.uniforms);
      return;
    }
    this.#counters.fallbacks++;
    if (failure.kind === "validation") group.stream.logFailure(failure);
    let gaps: readonly FallbackGap[];
    try {
      gaps = this.#gate.capture(() => group.fallback.run(failure));
    } catch (error) {
      const cause = error instanceof ServerError ? error : new LaunchError(`a launch group's fallback failed: ${String(error)}`, { cause: error });
      gaps = group.launches.flatMap((l) => l.bindings.filter((b) => b.access !== "read").map((b) => ({ binding: b.writes ?? b.binding, error: cause })));
    }
    for (const l of group.launches) for (const pin of l.pins) pin.unpin();
    for (const gap of gaps) this.#failures.failLaunch(gap.error, [gap.binding]);
  }

  /**
   * Why `group` cannot run as a whole, or `undefined`: an invalid pipeline, or a launch reading,
   * from outside the group, bytes a failure claims.
   */
  #groupFailure(group: OpenGroup): ServerError | undefined {
    if (!this.#failures.hasClaims) {
      // No byte is claimed anywhere: only an invalid pipeline can stop the group.
      for (const l of group.launches) if (l.entry.state.kind === "invalid") return l.entry.state.error;
      return undefined;
    }
    const writtenInGroup = new Set<number>();
    for (const l of group.launches) {
      if (l.entry.state.kind === "invalid") return l.entry.state.error;
      const external = l.bindings.filter((b) => b.access !== "write" && !writtenInGroup.has(b.binding.allocation)).map((b) => b.binding);
      const hit = this.#failures.checkReads(external);
      if (hit !== undefined) return hit.error;
      for (const b of l.bindings) if (b.access !== "read") writtenInGroup.add(b.binding.allocation);
    }
    return undefined;
  }

  /** A launch whose turn came: checks its reads' taint, resolves its ranges, aligns, hands it to its stream. */
  #runLaunch(
    s: WebGpuStream,
    entry: PipelineEntry,
    count: CubeCount,
    bindings: readonly KernelBinding[],
    pins: readonly LaunchPin[],
    uniforms: Uint8Array | undefined,
  ): void {
    const writes = launchWrites(bindings);
    // Reads issued before this launch must copy their bytes before it may overwrite them.
    this.#readback.sealOverlapping(writes);
    const releaseAll = (): void => {
      for (const pin of pins) pin.unpin();
    };
    // While no failure or check is live (the common case) no read can be claimed: no list of reads.
    const reads = this.#failures.hasClaims ? launchReads(bindings) : NO_BINDINGS;
    const readFailure = this.#failures.checkReads(reads);
    // Bytes of unsettled status checks: the launch runs, its writes inherit the checks.
    const pending = readFailure === undefined ? this.#failures.pendingOf(reads) : NO_FAILURES;
    if (readFailure !== undefined) {
      this.#failures.skipLaunch(readFailure, writes, `kernel '${kernelName(entry.kernel)}'`);
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
    const ranges = Array.of<BoundRange>();
    for (const kb of bindings) {
      const owner = this.#pool.tryGet(kb.binding.stream);
      invariant(owner, "a launch's bindings were checked to belong to this server");
      const range = owner.bound(kb.binding);
      if (range instanceof ServerError) {
        this.#failures.failLaunch(range, writes);
        releaseAll();
        return;
      }
      ranges.push(range);
    }
    const { pipeline, bindGroupLayout } = entry;
    invariant(pipeline !== undefined && bindGroupLayout !== undefined, "a launch runs only once its pipeline is valid");
    try {
      // No cross-stream submit first: every stream records into the one shared encoder, whose
      // dispatches run in recording order, so a launch that uses another stream's recorded writes
      // (or writes what another stream's recorded work reads) is ordered after them already.
      s.dispatch(new Dispatch(pipeline, bindGroupLayout, ranges, uniforms, count, bindings, writes, pins));
    } catch (error) {
      this.#failures.failLaunch(
        new LaunchError(`encoding kernel '${kernelName(entry.kernel)}' failed: ${String(error)}`, { cause: error }),
        writes,
      );
      releaseAll();
      return;
    }
    if (pending.length === 0) this.#failures.written(writes);
    else this.#failures.writtenFrom(pending, writes, `kernel '${entry.kernel.label ?? entry.kernel.key}'`);
  }

  /** A host write whose turn came: submits what it must follow, then lets the writing stream write. */
  #runWrite(s: WebGpuStream, owner: WebGpuStream, binding: BufferBinding, data: Uint8Array, padded: number): void {
    const bindings = Array.of(binding); // not `[binding]`: one write per request (docs/performance.md#allocation-sites)
    this.#readback.sealOverlapping(bindings);
    // The write jumps ahead of unsubmitted work: recorded work that binds the bytes (any stream's,
    // all in the shared encoder) must be submitted first.
    if (this.#context.encoder.refers(binding.allocation)) void this.#submitAll();
    const r = owner.memory.resolve(binding);
    let bytes = data;
    if (padded !== data.byteLength) {
      bytes = new Uint8Array(padded);
      bytes.set(data);
    }
    s.writeBuffer(r.resource, r.offset, bytes);
    this.#failures.written(bindings);
  }

  /**
   * A deferred for a read or sync in flight: in `#pending` (so device loss rejects it) until it
   * settles, however — it leaves through the deferred's settle hook, not `promise.finally` (two
   * promises more per read).
   */
  #pendingDeferred<T>(): Deferred<T> {
    let key = -1;
    const done = new Deferred<T>(() => void this.#pending.take(key));
    key = this.#pending.add((error) => done.reject(error));
    return done;
  }

  #track(promise: Promise<unknown>): void {
    let key = -1;
    const leave = (): void => void this.#outstanding.take(key);
    key = this.#outstanding.add(promise.then(leave, leave));
  }

  #onLost(reason: string): void {
    if (this.#lost) return;
    const error = new DeviceLostError(reason);
    this.#lost = error;
    this.device.removeEventListener("uncapturederror", this.#onUncaptured);
    // Each rejecter takes its own entry out as its read or sync settles.
    for (const reject of this.#pending.values()) reject(error);
    this.#readback.abort(error);
    this.#gate.abortAll(error);
  }
}

/** What one shared submit left to wait on: its validation scope and its completion on the device. */
interface SharedSubmit {
  readonly scope: Promise<GPUError | null>;
  readonly completion: SubmitCompletion;
}

/** The empty binding list (no reads to check): shared, never written to. */
const NO_BINDINGS: readonly BufferBinding[] = Object.freeze([]);
/** The empty list of pending checks: shared, never written to. */
const NO_FAILURES: readonly FailureId[] = Object.freeze([]);


/** Whether two bindings name a common byte of one allocation. */
function overlap(a: BufferBinding, b: BufferBinding): boolean {
  return a.allocation === b.allocation && a.stream === b.stream && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}
