/// <reference types="@webgpu/types" preserve="true" />
import { invariant, type StreamId } from "@weft/environment";
import {
  type BindingAccess,
  ClaimedStream,
  LaunchError,
  MemoryManagement,
  type AllocationId,
  type BufferBinding,
  type DeviceLostError,
  type DeviceMemory,
  type FailureId,
  type FailureStore,
  type MemoryConfiguration,
  type ServerError,
  type StatusCheck,
} from "@weft/server";
import type { GpuBufferStorage } from "../memory/gpu-buffer-storage.js";
import type { BindGroupCache, BoundRange } from "./bind-group-cache.js";
import type { UniformArena, UniformArenas } from "./uniform-arenas.js";
import type { OpenGroup } from "./webgpu-server.js";

/** How many failures a stream's log keeps (the oldest are dropped). */
export const FAILURE_LOG_LIMIT = 32;

const roundUp = (n: number, to: number): number => Math.ceil(n / to) * to;

/** The server's submission counters; streams add to them. They only grow. */
export interface SubmissionCounters {
  /** `queue.submit` calls. */
  submits: number;
  /** Dispatches encoded. */
  dispatches: number;
  /** `queue.writeBuffer` calls of host writes. */
  writes: number;
}

/**
 * What every stream of one server shares: the device, the server's settings, and the server-wide
 * services a stream reports to. Built once by the server, before its first stream.
 */
export interface StreamContext {
  readonly device: GPUDevice;
  /** The memory layout every stream's manager uses. */
  readonly memory: MemoryConfiguration;
  /** Dispatches recorded (every stream's, in the shared encoder) before they are submitted. */
  readonly tasksMax: number;
  /** Bytes written by the recorded launches (every stream's) before they are submitted. */
  readonly maxPendingBytes: number;
  /** Bytes bound by the recorded launches (every stream's) before they are submitted. */
  readonly maxPendingWork: number;
  /** Host writes between two submits during bulk uploads (docs/pitfalls.md#p15). */
  readonly writesPerSubmit: number;
  /** The page buffers every stream's memory takes its pages from (one per server). */
  readonly storage: GpuBufferStorage;
  /** The device's memory: the dealloc clock every stream's manager answers to. */
  readonly deviceMemory: DeviceMemory;
  readonly bindGroups: BindGroupCache;
  readonly counters: SubmissionCounters;
  /** Where launches' failures are recorded (the server's store over its pool of streams). */
  readonly failures: FailureStore<WebGpuStream>;
  /** Registers a promise (an error scope) whose settlement reads must wait for. */
  track(promise: Promise<unknown>): void;
  /** The device-loss error, once the device is lost. */
  lost(): DeviceLostError | undefined;
  /** The one encoder every stream records its dispatches into between two submits. */
  readonly encoder: SharedEncoder;
  /**
   * Submits every stream's recorded work (the shared encoder) in one `queue.submit` and starts the
   * readback of every pending status check: what a stream's `flush` does (the server's shared submit).
   */
  submitAll(): void;
}

/**
 * The one command encoder, and its one compute pass, that every stream of a server records its
 * dispatches into between two submits, with the uniform parameters of every launch and the
 * allocations they bind; each stream keeps its own bookkeeping of what it recorded (pins, writes,
 * status checks) and settles it when the encoder is submitted.
 *
 * @remarks
 * **Why shared.** An encoder and a pass per stream cost `createCommandEncoder`, `beginComputePass`,
 * `end` and `finish` per stream per submit: in a serving turn, 32 request streams made 32 of each
 * per submit (~36 µs of native calls per request on the 2-core machine's Dawn, measured with
 * `WEFT_PROBE_NATIVE=1 node .device/profile-host.mjs serving webgpu`); now one of each per submit.
 * **Order.** Dispatches run in the order they were recorded, whatever their streams: WebGPU orders
 * a pass's dispatches, and Dawn places the barriers a later dispatch needs to see an earlier one's
 * writes. So cross-stream dependencies inside one encoder are ordered by construction.
 * **Invariants.** `open` iff something was encoded since the last {@link SharedEncoder.finish};
 * the counters count what was encoded since then and are reset by it.
 */
export class SharedEncoder {
  readonly #device: GPUDevice;
  readonly #arenas: UniformArenas;
  /** The device's `minUniformBufferOffsetAlignment`, read once (a native getter; see `WebGpuServer`). */
  readonly #uniformAlignment: number;
  #encoder: GPUCommandEncoder | undefined;
  #pass: GPUComputePassEncoder | undefined;
  /** The pipeline the open pass has set (a pass keeps it between dispatches); reset at finish. */
  #passPipeline: GPUComputePipeline | undefined;
  /**
   * Uniform arenas holding the parameters of the encoded launches (every stream's): their bytes
   * are gathered in each arena's host mirror and written with one `writeBuffer` per arena right
   * before the submit; given back to the server's arenas right after it (see `UniformArenas`: a
   * later `writeBuffer` into one is ordered after that submit on the queue).
   */
  #uniformBuffers: UniformArena[] = [];
  /** Next free byte of the last of `#uniformBuffers`; reset at finish. */
  #uniformCursor = 0;
  /** Dispatches encoded since the last finish (the `tasksMax` budget). */
  dispatches = 0;
  /** Bytes the encoded launches write (the `maxPendingBytes` budget). */
  pendingBytes = 0;
  /** Bytes the encoded launches bind (the `maxPendingWork` budget). */
  pendingWork = 0;
  /**
   * The allocations the encoded launches bind (any stream's), `[0, #referCount)`: a host write
   * into one of them must wait for this encoder's submit (a `queue.writeBuffer` jumps ahead of
   * unsubmitted work). Emptied at finish; bounded by the bindings of `tasksMax` launches. An array
   * kept at its size, not a `Set`: a set cleared every submit reallocated its table and grew it
   * again, tables that outlived a scavenge and filled the old generation (docs/performance.md#one-launch-fewer).
   */
  readonly #refers: AllocationId[] = [];
  #referCount = 0;

  /** Records that an encoded launch binds `allocation`. */
  refer(allocation: AllocationId): void {
    this.#refers[this.#referCount++] = allocation;
  }

  /** Whether an encoded launch binds `allocation` (a linear scan: host writes ask, launches do not). */
  refers(allocation: AllocationId): boolean {
    const refers = this.#refers;
    for (let i = 0; i < this.#referCount; i++) if (refers[i] === allocation) return true;
    return false;
  }

  /** How many bindings the encoded launches recorded (tests). */
  get referCount(): number {
    return this.#referCount;
  }

  constructor(device: GPUDevice, arenas: UniformArenas) {
    this.#device = device;
    this.#arenas = arenas;
    this.#uniformAlignment = device.limits.minUniformBufferOffsetAlignment;
  }

  /** Whether commands were encoded since the last finish. */
  get open(): boolean {
    return this.#encoder !== undefined;
  }

  /**
   * The open compute pass, begun (with its encoder) on first use after a finish, with `pipeline`
   * set. `setPipeline` is called only when the pass's last dispatch used another pipeline: a
   * pass keeps its pipeline between dispatches, each call crosses into Dawn (~1 µs on the null
   * adapter), and the requests of a serving wave, each on its own stream, launch one kernel after
   * another into this one pass.
   */
  passWith(pipeline: GPUComputePipeline): GPUComputePassEncoder {
    this.#encoder ??= this.#device.createCommandEncoder();
    const pass = (this.#pass ??= this.#encoder.beginComputePass());
    if (this.#passPipeline !== pipeline) {
      pass.setPipeline(pipeline);
      this.#passPipeline = pipeline;
    }
    return pass;
  }

  /**
   * A region of one of the uniform arenas holding `data` padded to 16 bytes: the bytes go to the
   * arena's host mirror now and reach the GPU with the arena's one `writeBuffer` at
   * {@link SharedEncoder.finish}. The launch binds `buffer` with `size` bytes at dynamic offset `offset`.
   */
  uniformRegion(data: Uint8Array): { readonly buffer: GPUBuffer; readonly offset: number; readonly size: number } {
    const arenas = this.#arenas;
    const size = roundUp(Math.max(16, data.byteLength), 16);
    if (size > arenas.arenaBytes) {
      throw new LaunchError(`uniforms of ${data.byteLength} bytes exceed the ${arenas.arenaBytes}-byte limit; pass them in a storage buffer`);
    }
    const align = this.#uniformAlignment;
    let arena = this.#uniformBuffers[this.#uniformBuffers.length - 1];
    let offset = roundUp(this.#uniformCursor, align);
    if (arena === undefined || offset + size > arenas.arenaBytes) {
      arena = arenas.acquire();
      this.#uniformBuffers.push(arena);
      offset = 0;
    }
    this.#uniformCursor = offset + size;
    arena.mirror.set(data, offset);
    if (size > data.byteLength) arena.mirror.fill(0, offset + data.byteLength, offset + size);
    return { buffer: arena.buffer, offset, size };
  }

  /**
   * Writes the used part of each uniform arena from its mirror (one `writeBuffer` per arena,
   * queued before the submit of the commands that read them), ends the pass and finishes the
   * encoder for the caller's submit; `undefined` when nothing was encoded. The caller submits the
   * commands, then calls `release` (which gives the arenas back).
   */
  finish(): { readonly commands: GPUCommandBuffer; readonly release: (lost: boolean) => void } | undefined {
    const encoder = this.#encoder;
    if (encoder === undefined) return undefined;
    const used = this.#uniformBuffers;
    for (let i = 0; i < used.length; i++) {
      const arena = used[i] as UniformArena;
      const bytes = i === used.length - 1 ? this.#uniformCursor : this.#arenas.arenaBytes;
      if (bytes > 0) this.#device.queue.writeBuffer(arena.buffer, 0, arena.mirror.buffer, arena.mirror.byteOffset, roundUp(bytes, 4));
    }
    const pass = this.#pass;
    this.#uniformBuffers = [];
    this.#uniformCursor = 0;
    this.#pass = undefined;
    this.#passPipeline = undefined;
    this.#encoder = undefined;
    this.dispatches = 0;
    this.pendingBytes = 0;
    this.pendingWork = 0;
    this.#referCount = 0;
    const arenas = this.#arenas;
    // The queue orders any later write into these arenas after this submit's launches read them.
    const release = (lost: boolean): void => {
      for (const arena of used) arenas.recycle(arena, lost);
    };
    let commands: GPUCommandBuffer;
    try {
      pass?.end();
      commands = encoder.finish();
    } catch (error) {
      // Nothing of this encoder will be submitted: its arenas go back now, not never.
      release(false);
      throw error;
    }
    return { commands, release };
  }
}

/** A status check waiting for the submit of the launch that writes its status (see `WebGpuServer.verify`). */
export interface PendingStatusCheck {
  /** The pending check in the error graph. */
  readonly id: FailureId;
  readonly check: StatusCheck;
  /** Releases the pin that keeps the status bytes alive until they are read back. */
  readonly unpin: () => void;
}

/**
 * A slice a launch pinned, and the stream whose memory holds it.
 *
 * @remarks
 * This and the other per-launch records here ({@link Dispatch}, {@link FinishedWork}, the bound
 * ranges) are classes, built with `new`: V8 allocates an object literal's objects in the old
 * generation for good once a phase kept most of them alive, and a served request then leaves old
 * garbage that keeps its young objects through scavenges (docs/performance.md#allocation-sites).
 */
export class LaunchPin {
  constructor(
    readonly stream: StreamId,
    readonly unpin: () => void,
  ) {}
}

/** One dispatch, as the server hands it to the stream that encodes it. */
export class Dispatch {
  constructor(
    readonly pipeline: GPUComputePipeline,
    readonly layout: GPUBindGroupLayout,
    /** The bound storage ranges, in binding order. */
    readonly ranges: readonly BoundRange[],
    /** The launch's uniforms (binding `ranges.length`), if any. */
    readonly uniforms: Uint8Array | undefined,
    readonly count: readonly [number, number, number],
    /** Every binding of the dispatch (any stream's allocations), with how it binds it. */
    readonly bindings: readonly { readonly binding: { readonly allocation: AllocationId }; readonly access: BindingAccess }[],
    /** The bytes it writes: tainted if its submission fails. */
    readonly writes: readonly BufferBinding[],
    /** Its pins, released at submit (own slices) or when the submission completes (others'). */
    readonly pins: readonly LaunchPin[],
  ) {}
}

/** A {@link BoundRange} (a class: see {@link LaunchPin}). */
class PaddedRange implements BoundRange {
  constructor(
    readonly buffer: GPUBuffer,
    readonly offset: number,
    readonly size: number,
  ) {}
}

/**
 * A stream's share of the shared encoder, finished, on its way into the `queue.submit` that carries
 * every stream's recorded work (see `WebGpuServer`'s shared submits).
 */
export class FinishedWork {
  constructor(
    /**
     * Called exactly once, right after the submit that carried the shared encoder, with that submit's
     * validation scope: releases the stream's pins and uniform arenas on the submit's schedule and
     * taints the work's writes if the submit (or this finish) failed.
     */
    readonly submitted: (scope: Promise<GPUError | null>, completion: SubmitCompletion) => void,
  ) {}
}

/**
 * The completion of one `queue.submit` on the device, asked of the queue at most once
 * (`onSubmittedWorkDone`) however many streams' work the submit carried. What for: a stream
 * holding pins of another stream's memory releases them when its work completed, and in a serving
 * turn every one of the 32 request streams holds pins of the weights' stream — one native call
 * and one promise per stream per submit before, one per submit now.
 */
export class SubmitCompletion {
  readonly #queue: GPUQueue;
  #callbacks: (() => void)[] | undefined;
  /** The `failed` callbacks given to {@link SubmitCompletion.onDone}, created with the first. */
  #failures: ((error: unknown) => void)[] | undefined;

  constructor(queue: GPUQueue) {
    this.#queue = queue;
  }

  /**
   * Runs `f` once the submit's work has completed on the device, in the order the callbacks were
   * given. Call it right after the submit (the queue's answer covers the work submitted before it
   * is asked). When the queue's answer is an error (the device is lost), `f` never runs and
   * `failed`, when given, runs with the error: nothing completes then, and the lost device frees
   * everything. A sync waits here too (`WebGpuServer.sync`), so a sync that submits asks the
   * queue once, not twice.
   */
  onDone(f: () => void, failed?: (error: unknown) => void): void {
    let callbacks = this.#callbacks;
    if (callbacks === undefined) {
      const waiting = Array.of<() => void>(); // not `[]`: docs/performance.md#allocation-sites
      callbacks = this.#callbacks = waiting;
      this.#queue.onSubmittedWorkDone().then(
        () => {
          for (const c of waiting) c();
        },
        (error: unknown) => {
          for (const c of this.#failures ?? []) c(error);
        },
      );
    }
    callbacks.push(f);
    if (failed !== undefined) (this.#failures ??= []).push(failed);
  }
}

/**
 * One server stream: what it recorded into the shared encoder and not yet submitted (the
 * allocations its dispatches refer to, its pins, its writes, its uniform regions, its status
 * checks), its memory and its taint claims — and the work on them: encoding a dispatch, writing
 * host bytes in order, and asking for the submit. cubecl-wgpu's `WgpuStream`, less the encoder:
 * every stream records into the server's one {@link SharedEncoder}, so a turn in which 32 streams
 * record is one encoder and one pass, not 32 of each.
 *
 * @remarks
 * **Why per stream.** Every stream funnels into the one `GPUQueue`; what a stream keeps is the
 * bookkeeping of what it has recorded and not yet submitted, settled when the shared encoder is
 * submitted ({@link WebGpuStream.finish}).
 * **Bounded state.** Everything "since the last submit" is cleared at the shared submit, which
 * happens at least every `tasksMax` dispatches of all streams together (and once their launches
 * write `maxPendingBytes` or bind `maxPendingWork`), so no stream holds more than `tasksMax`
 * launches' worth of entries. `failures` keeps the last {@link FAILURE_LOG_LIMIT}.
 * **StreamMemory.** Taint claims on this stream's allocations live in `claims` (`ClaimedStream`),
 * so the shared `FailureStore` finds them through the pool.
 * **Lifetimes.** Pins on this stream's own slices are released at submit (the queue orders any
 * later reuse); pins on other streams' slices when the submission completes
 * (`onSubmittedWorkDone`, docs/pitfalls.md#p14). A page is destroyed only after the shared
 * encoder was submitted.
 */
export class WebGpuStream extends ClaimedStream {
  /** The slot's synthetic id; the `stream` of every allocation of this stream's memory. */
  readonly id: StreamId;
  /** This stream's pages and slices. */
  readonly memory: MemoryManagement<GPUBuffer>;
  /** The server's buffers behind `memory` (retained pool, out-of-memory failures), shared by every stream. */
  readonly storage: GpuBufferStorage;
  /** Failures that reached this stream outside any launch (uncaptured errors, failed submits). */
  readonly failures: ServerError[] = [];
  /**
   * The launch group open on this stream (`beginGroup` … `endGroup`), owned by the server. A field,
   * not a server map: a map set and emptied around every fused block reallocated its table, a
   * table that outlived a scavenge and filled the old generation (docs/performance.md#one-launch-fewer).
   */
  openGroup: OpenGroup | undefined = undefined;
  readonly #ctx: StreamContext;
  /** Whether this stream encoded a dispatch into the shared encoder since its last finish. */
  #recorded = false;
  /** The one dynamic offset of a dispatch with uniforms, reused (`setBindGroup` copies it). */
  readonly #dynamicOffsets = [0];
  /** Host writes since the last submit of any kind; reset at every submit. */
  #writesSinceSubmit = 0;
  /** Bytes the unsubmitted encoder writes; tainted if its submission fails; cleared at submit. */
  #submissionWrites: BufferBinding[] = [];
  /** Pins on this stream's own slices held until the encoder is submitted; released at submit. */
  #submitPins: (() => void)[] = [];
  /** Pins on other streams' slices, released when this stream's next submission completes. */
  #foreignPins: (() => void)[] = [];
  /**
   * Status checks of launches in the unsubmitted encoder (`WebGpuServer.verify`): their status
   * words are copied out right after the encoder's submit and read back then. Cleared at submit.
   */
  readonly #pendingChecks: PendingStatusCheck[] = [];

  constructor(id: StreamId, ctx: StreamContext) {
    super();
    this.id = id;
    this.#ctx = ctx;
    this.storage = ctx.storage;
    this.memory = new MemoryManagement<GPUBuffer>(ctx.storage, ctx.memory, id, {
      onFree: (allocation) => this.claims.forget(allocation, ctx.failures.graph),
      device: ctx.deviceMemory,
    });
  }

  /** Whether this stream recorded work not submitted yet, or a status check waits for its submit. */
  get hasPendingWork(): boolean {
    return this.#recorded || this.#pendingChecks.length > 0;
  }

  /** Whether status checks wait for this stream's next submit (a read must flush it first). */
  get hasPendingChecks(): boolean {
    return this.#pendingChecks.length > 0;
  }

  /** Adds a status check of a launch recorded on this stream; it is read back after the next submit. */
  addCheck(check: PendingStatusCheck): void {
    this.#pendingChecks.push(check);
  }

  /**
   * The range a launch binds for `binding` of this stream's memory (4-byte padded, inside its
   * buffer), or the out-of-memory failure of the page behind it.
   *
   * The padding cannot pass the buffer's end when the range starts at a multiple of 4 and holds a
   * byte: every page is a multiple of 4 bytes (`GpuBufferStorage`) and the range lies inside it.
   * Only otherwise is the buffer's size read: `GPUBuffer.size` is a native getter (~0.3 µs), and
   * a served request binds ~18 ranges.
   */
  bound(binding: BufferBinding): BoundRange | ServerError {
    const r = this.memory.resolve(binding);
    const oom = this.storage.failure(r.resource);
    if (oom !== undefined) return oom;
    const padded = Math.max(4, roundUp(r.size, 4));
    const size = r.size > 0 && r.offset % 4 === 0 ? padded : Math.min(padded, r.resource.size - r.offset);
    return new PaddedRange(r.resource, r.offset, size);
  }

  /**
   * Encodes `dispatch` in the shared compute pass and takes over its pins; submits every stream's
   * work once the shared encoder holds `tasksMax` dispatches (or its launches write
   * `maxPendingBytes` or bind `maxPendingWork`). Throws (recording nothing of it) when encoding fails.
   */
  dispatch(dispatch: Dispatch): void {
    const shared = this.#ctx.encoder;
    const region = dispatch.uniforms === undefined ? undefined : shared.uniformRegion(dispatch.uniforms);
    const bindGroup = this.#ctx.bindGroups.get(dispatch.layout, dispatch.ranges, region);
    const pass = shared.passWith(dispatch.pipeline);
    if (region === undefined) pass.setBindGroup(0, bindGroup);
    else {
      this.#dynamicOffsets[0] = region.offset;
      pass.setBindGroup(0, bindGroup, this.#dynamicOffsets);
    }
    pass.dispatchWorkgroups(dispatch.count[0], dispatch.count[1], dispatch.count[2]);
    this.#ctx.counters.dispatches++;
    this.#recorded = true;
    shared.dispatches++;
    for (const { binding } of dispatch.bindings) shared.refer(binding.allocation);
    this.#submissionWrites.push(...dispatch.writes);
    for (const pin of dispatch.pins) (pin.stream === this.id ? this.#submitPins : this.#foreignPins).push(pin.unpin);
    for (const w of dispatch.writes) shared.pendingBytes += w.size;
    for (const r of dispatch.ranges) shared.pendingWork += r.size;
    if (shared.dispatches >= this.#ctx.tasksMax || shared.pendingBytes >= this.#ctx.maxPendingBytes || shared.pendingWork >= this.#ctx.maxPendingWork) this.#ctx.submitAll();
  }

  /**
   * Writes host bytes into `buffer` at `offset` (`queue.writeBuffer`). The caller has submitted
   * every encoder that refers to those bytes: a write jumps ahead of unsubmitted encoders. During
   * bulk uploads an empty submit follows every `writesPerSubmit` writes (docs/pitfalls.md#p15).
   */
  writeBuffer(buffer: GPUBuffer, offset: number, bytes: Uint8Array): void {
    this.#ctx.device.queue.writeBuffer(buffer, offset, bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#ctx.counters.writes++;
    this.#writesSinceSubmit++;
    if (this.#writesSinceSubmit >= this.#ctx.writesPerSubmit) {
      this.#ctx.device.queue.submit([]);
      this.#ctx.counters.submits++;
      this.#writesSinceSubmit = 0;
    }
  }

  /**
   * Submits the shared encoder (every stream's recorded work, this one's among it) when this
   * stream recorded work or waits for status checks, and starts reading back the checks; else
   * releases the pins it holds. Free pages go back under the device memory's dealloc policy
   * (see `MemoryManagement`), not here.
   */
  flush(): void {
    if (!this.hasPendingWork) {
      for (const unpin of this.#submitPins.splice(0)) unpin();
      return;
    }
    this.#ctx.submitAll();
  }

  /**
   * Submits the shared encoder, if this stream recorded work or the encoder is open, and starts
   * the readback of status checks — without touching memory: what the shared storage calls before
   * it destroys a page, and the server before it is destroyed.
   */
  submit(): void {
    if (this.hasPendingWork || this.#ctx.encoder.open) this.#ctx.submitAll();
  }

  /** Records a failure in the bounded log. */
  logFailure(error: ServerError): void {
    this.failures.push(error);
    if (this.failures.length > FAILURE_LOG_LIMIT) this.failures.shift();
  }

  /**
   * Settles this stream's share of the shared encoder, leaving
   * nothing recorded, for the submit the server makes next (`WebGpuServer`'s shared submits);
   * `undefined` when this stream recorded nothing. The caller finishes the shared encoder, submits
   * it before any other queue operation, then calls `submitted` once. Status checks stay pending:
   * take them with {@link WebGpuStream.takeChecks} after the submit.
   *
   * **Validation scope.** The caller opens one `validation` error scope before its first `finish`
   * and pops it after the `queue.submit`, and passes that scope to `submitted`: one scope per
   * submit, not one per stream per submit (32 streams in a serving turn made 33 scopes, each a
   * native push and pop and a promise Dawn settles on a later tick). Nothing is attributed less
   * exactly: an invalid command buffer fails its whole `queue.submit` (WebGPU validates a submit as
   * a unit), so every stream in it is tainted whichever scope saw the error; the scope reports the
   * first error, the finish-time one (Dawn's real message), before the submit's own "invalid
   * command buffer".
   */
  finish(): FinishedWork | undefined {
    if (!this.#recorded) return undefined;
    this.#recorded = false;
    const writes = this.#submissionWrites;
    this.#submissionWrites = Array.of();
    const submitPins = this.#submitPins.splice(0);
    const foreign = this.#foreignPins.splice(0);
    let done = false;
    const submitted = (submitScope: Promise<GPUError | null>, completion: SubmitCompletion): void => {
      invariant(!done, "a finished stream's work is submitted once");
      done = true;
      // The scope spans every finish and the submit (see `finish`): in a shared submit, another
      // stream's invalid command buffer fails the whole submit, so this work did not run either
      // and its writes are tainted with that error (never a silent wrong result; see
      // docs/performance.md#shared-submits).
      this.#trackSubmission(submitScope, writes);
      this.#writesSinceSubmit = 0;
      for (const unpin of submitPins) unpin();
      if (foreign.length === 0) return;
      completion.onDone(() => {
        for (const unpin of foreign) unpin();
      });
    };
    return new FinishedWork(submitted);
  }

  /** The status checks waiting for this stream's submit, taken out (the caller reads them back after that submit). */
  takeChecks(): PendingStatusCheck[] {
    return this.#pendingChecks.splice(0);
  }

  /** A submission whose scope reports an error taints what its launches wrote. */
  #trackSubmission(scope: Promise<GPUError | null>, writes: BufferBinding[]): void {
    this.#ctx.track(
      scope.then((error) => {
        if (error === null || this.#ctx.lost() !== undefined) return;
        const failure = new LaunchError(`a submission of stream ${this.id} failed: ${error.message}`);
        this.logFailure(failure);
        this.#ctx.failures.failLaunch(failure, writes);
      }),
    );
  }
}
