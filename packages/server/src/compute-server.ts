import type { StreamId } from "@weft/environment";
import type { AllocationId, BufferBinding } from "./binding.js";
import type { ServerError } from "./errors/server-error.js";

/**
 * A reference-counted handle on one allocation of a server's memory.
 *
 * @remarks
 * **Why explicit counts.** JavaScript has no destructors, so every holder of a handle says when it
 * stops holding it: `retain()` for each new holder, `release()` exactly once per holder.
 * **Invariants.**
 * - `canMut()` is true exactly when one reference exists: only then may a kernel write the memory
 *   in place (an aliased or shared handle is never written in place).
 * - The allocation is reused only when no handle *and* no binding (an in-flight launch, a
 *   cross-stream pin) refers to it.
 * - Using a handle after its last `release()` throws.
 */
export interface MemoryHandle {
  readonly allocation: AllocationId;
  /** Size in bytes. */
  readonly size: number;
  /** The stream that allocated it; its `StreamMemory` answers for the bytes. */
  readonly stream: StreamId;
  /** How many holders have retained it and not released it. */
  readonly refs: number;
  retain(): void;
  release(): void;
  /** True exactly when `refs === 1`. */
  canMut(): boolean;
  /**
   * Keeps the handle usable (`retain`, `binding`) and its bytes alive until the returned function
   * is called, without counting as a reference: `canMut` ignores holds. What a launch group's
   * fallback takes on its block's tensors (`BlockFallback`): it runs before any later launch, so
   * the next block may still write in place into them. Call the returned function exactly once.
   */
  hold(): () => void;
  /** The binding for bytes `[offset, offset + size)` of this allocation (default: all of it). */
  binding(offset?: number, size?: number): BufferBinding;
}

/** A server's memory, as `weft.memory()` and the benchmarks report it. */
export interface MemoryUsage {
  /** Bytes held by live allocations (handles or bindings refer to them). */
  readonly bytesInUse: number;
  /** Bytes reserved from the device (pages), in use or free. */
  readonly bytesReserved: number;
  /** Number of pages (device buffers) reserved. */
  readonly pages: number;
  /** Number of slices carved out of pages, in use or free. */
  readonly slices: number;
  /** Number of live allocations. */
  readonly liveAllocations: number;
  /**
   * Stream slots holding reserved memory (at least one page). Bounded by the server's slots
   * (docs/concepts.md#streampool-streammemory-and-taint: stream ids map onto `maxStreams` slots), and back to 0 once every page was given
   * back, however many task streams ran.
   */
  readonly streams: number;
}

/** Whether a launch runs (`execute`) or only compiles its kernel and is dropped (`discard`). */
export type LaunchMode = "execute" | "discard";

/**
 * What a kernel does with one buffer it binds. Reads are checked for taint before the launch;
 * writes are tainted when the launch fails, and released (`written`) when it is enqueued.
 */
export type BindingAccess = "read" | "write" | "read-write";

/** One buffer a launch binds, in binding order. */
export interface KernelBinding {
  readonly binding: BufferBinding;
  readonly access: BindingAccess;
  /**
   * For a `write` binding: the bytes of `binding` the launch writes, when it writes fewer than all
   * of them (one element of a packed allocation). Taint, claim release and readback ordering then
   * account exactly those bytes; it must cover every byte the launch writes. Absent: all of
   * `binding`. A server may ignore it and account all of `binding` (a broader taint, never a
   * narrower one).
   */
  readonly writes?: BufferBinding | undefined;
}

/** A {@link KernelBinding}, built with `new` (not a literal: see `bufferBinding`). */
export function kernelBinding(binding: BufferBinding, access: BindingAccess, writes?: BufferBinding): KernelBinding {
  return new BoundBuffer(binding, access, writes);
}

class BoundBuffer implements KernelBinding {
  constructor(
    readonly binding: BufferBinding,
    readonly access: BindingAccess,
    readonly writes: BufferBinding | undefined,
  ) {}
}

/** The bytes a launch reads: every binding it does not only write (what taint checks look at). */
export function launchReads(bindings: readonly KernelBinding[]): BufferBinding[] {
  const reads = Array.of<BufferBinding>(); // not `[]`: see bufferBinding
  for (const kb of bindings) if (kb.access !== "write") reads.push(kb.binding);
  return reads;
}

/** The bytes a launch writes: every binding it does not only read (its `writes` range when narrower). */
export function launchWrites(bindings: readonly KernelBinding[]): BufferBinding[] {
  const writes = Array.of<BufferBinding>(); // not `[]`: see bufferBinding
  for (const kb of bindings) if (kb.access !== "read") writes.push(kb.writes ?? kb.binding);
  return writes;
}

/**
 * A kernel a server can compile and launch. Backends extend it with their own source form.
 *
 * @remarks
 * **Invariant.** `key` is a canonical serialisation of what the kernel computes (its source or its
 * relative IR) plus anything that changes the compiled code: two kernels with the same key compile
 * to the same pipeline. Tensor ids and buffer identities never appear in it.
 */
export interface KernelDefinition {
  readonly key: string;
  /**
   * A short human-readable name (`"elementwise neg+add"`, `"matmul+mul"`) for debug labels and
   * error messages. Messages never print `key` (an internal serialisation); without a label they
   * print {@link kernelName}'s short form of it.
   */
  readonly label?: string;
}

/**
 * How messages name `kernel`: its `label`, else the leading word of its key (`"elementwise"`,
 * `"reduce:sum"`, `"matmul"`) — never the whole key, which is an internal serialisation.
 */
export function kernelName(kernel: KernelDefinition): string {
  if (kernel.label !== undefined && kernel.label !== "") return kernel.label;
  const short = /^[^|[{(\s]*/.exec(kernel.key)?.[0] ?? "";
  return short === "" ? "kernel" : short;
}

/**
 * A deferred check of a kernel just launched: the kernel wrote a status into `status` (two `u32`
 * words, zero meaning "fine") instead of throwing, which a device kernel cannot do. The server
 * reads the status back after the kernel ran; `decode` turns nonzero words into the kernel's
 * failure, which then claims `writes` (and everything computed from them meanwhile).
 * See `ComputeServer.verify` and `docs/semantics.md` ("Index errors").
 */
export interface StatusCheck {
  /** The status words (8 bytes, written by the checked launch). */
  readonly status: BufferBinding;
  /** What the checked launch wrote: the bytes the failure claims if the status is not zero. */
  readonly writes: readonly BufferBinding[];
  /** A short description of the check for messages (`"gather"`). */
  readonly what: string;
  /** The failure the status words mean, or `undefined` when they report success. */
  readonly decode: (words: Uint32Array) => ServerError | undefined;
}

/**
 * A write a {@link LaunchFallback} could not produce, and why: the server taints it with `error`,
 * so a read of it rejects instead of returning bytes nothing wrote.
 */
export interface FallbackGap {
  readonly binding: BufferBinding;
  readonly error: ServerError;
}

/**
 * What a launch group (a fused block: one or more kernels recorded between
 * {@link ComputeServer.beginGroup} and {@link ComputeServer.endGroup}) runs instead when it
 * cannot run as a whole: launches that compute the same writes a smaller piece at a time (the
 * block's operations one by one), so a failure reaches only what is computed from it.
 *
 * @remarks
 * **When.** The group cannot run as a whole when, before any of its launches ran: one of its
 * kernels failed to compile or validate, a test hook injected a fault into one of its launches, or
 * one of its launches reads bytes a failure claims (from outside the group). Then none of the
 * group's launches runs and {@link LaunchFallback.run} is called; otherwise
 * {@link LaunchFallback.discard} is, and the group's launches run as recorded.
 * **Contract.** The server calls exactly one of `run` and `discard`, exactly once — unless
 * `endGroup` throws, in which case the caller discards. `run` is called where the group's
 * launches would have run, in stream order, possibly long after `endGroup` returned (a WebGPU
 * pipeline validates asynchronously): it may record launches on the same server and stream
 * (they run in the group's place, before anything recorded after the group), and returns the
 * writes of the group it could not produce. The memory the group binds stays pinned until `run`
 * returned.
 */
export interface LaunchFallback {
  /** Records the replacement launches; `failure` says why the group could not run. */
  run(failure: ServerError): readonly FallbackGap[];
  /** The group ran as recorded: release whatever `run` would have needed. */
  discard(): void;
}

/** How {@link ComputeServer.endGroup} ends a group. */
export type GroupEnd =
  | "submit" // the group is complete: run it (or its fallback) in stream order
  | "abort"; // the caller failed half-way: drop the group's launches, discard its fallback

/** Work-group counts of a dispatch, `[x, y, z]`. */
export type CubeCount = readonly [number, number, number];

/**
 * The device-agnostic surface of a compute server: what `@weft/runtime`'s `Client` forwards to.
 *
 * @remarks
 * **Why.** The runtime, autotune and the tests talk to every device (the WebGPU server, the CPU
 * server, the `DummyServer`) through this one interface.
 * **Error contract (docs/concepts.md#streampool-streammemory-and-taint).**
 * - A launch whose read set holds tainted bytes does not run; its write set is tainted by a failure
 *   caused by the one it read (`ReadFailure`).
 * - A launch that fails taints exactly the byte ranges it would have written.
 * - A launch that is enqueued releases every claim on the bytes it writes (`written`).
 * - A read of tainted bytes rejects with the failure's error, naming the root cause; any other
 *   read succeeds.
 * - `launch` never throws for a device-side failure; it records it. It throws only for misuse.
 * **Misuse** throws at the call (a `read`, being asynchronous, rejects) and changes nothing, with the
 * same error class on every server: a binding of memory the server never allocated, or no longer
 * live, or data whose size does not match it → `InvalidBindingError`; a work-group count that is not
 * three non-negative integers → `LaunchError`. `describeComputeServer` (`@weft/server/testing`)
 * checks all of this on every server.
 * **Streams.** Every call names the stream it is issued on; work on one stream runs in order.
 */
export interface ComputeServer<K extends KernelDefinition = KernelDefinition> {
  /** A short name for logs (`"webgpu"`, `"cpu"`, `"dummy"`). */
  readonly name: string;
  /** Reserves `size` bytes on `stream`'s memory. The handle starts with one reference. */
  empty(size: number, stream: StreamId): MemoryHandle;
  /** Reserves memory for `data` and uploads it, ordered after `stream`'s pending work. */
  create(data: Uint8Array, stream: StreamId): MemoryHandle;
  /** Uploads `data` into `binding`, ordered after `stream`'s pending work; releases its claims. */
  write(binding: BufferBinding, data: Uint8Array, stream: StreamId): void;
  /**
   * Reads the bindings once `stream`'s pending work (and the work of the streams that produced
   * them) has run. The returned promise holds nothing of the server while it waits.
   * `into` (optional): caller-owned destinations, one per binding (`undefined`: none), each at
   * least the binding's size. A server that copies straight into a destination resolves with that
   * very array in its place; one that does not resolves with its own arrays (the caller copies).
   * A read that rejects may have written its destinations.
   */
  read(bindings: readonly BufferBinding[], stream: StreamId, into?: readonly (Uint8Array | undefined)[]): Promise<Uint8Array[]>;
  /** The bytes now, where the server can answer synchronously (CPU); else `undefined`. */
  readSync?(bindings: readonly BufferBinding[], stream: StreamId): Uint8Array[] | undefined;
  /**
   * The error a read of `bindings` issued now would reject with — the failure claiming the first
   * tainted byte, naming the root cause and the chain (a `TaintedReadError` on the host server) —
   * or `undefined` when every byte they name is clean. Synchronous and free of side effects: it
   * records nothing, waits for nothing and moves no memory.
   *
   * @remarks
   * **Why.** A launch whose read set holds tainted bytes is skipped whole, so a caller about to
   * bind several independent computations into one launch (a fused block) asks first: when an
   * input is tainted it launches them one by one instead, and only the launches that read the
   * failure are skipped (`FusionRuntime.handleError` is built on this).
   * **What it sees.** Exactly the claims a launch recorded *now* would be checked against: every
   * launch, write and failure recorded so far, on every stream (each binding names the stream
   * whose memory answers for it). A failure the device has not reported yet is not seen.
   * **Optional.** Servers that track taint by byte range implement it (`HostComputeServer`,
   * hence `DummyServer`, and the WebGPU server). Callers treat a server without it as one whose
   * bytes are always clean (`Client.failureOf` answers `undefined`).
   *
   * @throws InvalidBindingError when a binding names memory that is not live (misuse, as `read`).
   */
  failureOf?(bindings: readonly BufferBinding[]): ServerError | undefined;
  /**
   * Whether a deferred check not settled yet (a GPU `gather`'s index check) claims a byte of
   * `bindings`: a launch reading them runs, and its writes inherit the check. Synchronous, free of
   * side effects; optional (a server without deferred checks has none pending).
   *
   * @remarks
   * **Why.** A launch inherits its reads' pending checks on *every* write, so a fused block with
   * outputs that do not depend on such an input would fail them too if the check fails; the
   * fusion engine asks first and runs such a block op by op (`FusionRuntime.handlePending`).
   * @throws InvalidBindingError when a binding names memory that is not live.
   */
  pendingOf?(bindings: readonly BufferBinding[]): boolean;
  /**
   * Whether any byte of any live memory may be claimed by a failure or a deferred check now.
   * `false` promises that {@link ComputeServer.failureOf} answers `undefined` and
   * {@link ComputeServer.pendingOf} `false` for every binding, so a caller about to ask per
   * binding (the fusion engine, before every fused block) can skip asking. Synchronous, free of
   * side effects, O(1); optional (callers treat a server without it as one that may have claims).
   */
  hasClaims?(): boolean;
  /** Compiles `kernel` ahead of its first launch (pipeline creation); throws `ValidationError`. */
  compile(kernel: K): void;
  /**
   * Whether `kernel`'s pipeline is compiled and valid now, so a launch of it runs without waiting;
   * with `compile`, starts its compile when it is not cached. Synchronous, never throws for the
   * kernel (a pipeline that failed answers `false`). Optional: a server that compiles inside `launch` (the CPU) omits
   * it, and callers treat its kernels as ready. What lets a backend keep launching a kernel that
   * is ready while a better one compiles (the matmul tuner's winner: `runMatmulBlock`).
   */
  ready?(kernel: K, compile: boolean): boolean;
  /** Records a launch on `stream` (see the error contract). `uniforms` are small scalar params. */
  launch(
    kernel: K,
    count: CubeCount,
    bindings: readonly KernelBinding[],
    stream: StreamId,
    mode: LaunchMode,
    uniforms?: Uint8Array,
  ): void;
  /**
   * Checks the status a launch issued just before on `stream` wrote (see {@link StatusCheck}),
   * in issue order: the check's `writes` carry a *pending* claim at once; launches that read
   * pending bytes run and their writes inherit the claim; once the status is read back the claims
   * become the decoded failure (a read of them rejects with it as root cause) or vanish. A read
   * always waits for the checks issued before it, so it settles with the values or the error.
   *
   * @remarks
   * **Optional.** Servers whose kernels can fail synchronously (the host server: a kernel throws)
   * need no status words and do not implement it; `Client.verify` throws `UnsupportedError` on a
   * server without it, so a kernel that needs a check never runs unchecked.
   * The launch that wrote `status` failing or being skipped means there is nothing to check: its
   * writes already carry that failure.
   */
  verify?(check: StatusCheck, stream: StreamId): void;
  /**
   * Starts a launch group on `stream`: the launches recorded on `stream` until
   * {@link ComputeServer.endGroup} form one unit that runs as a whole or not at all, in which
   * case `fallback` runs in its place (see {@link LaunchFallback}). Groups do not nest.
   * Optional: a server without groups runs every launch on its own (callers then discard the
   * fallback themselves).
   * @throws LaunchError when `stream` already has an open group.
   */
  beginGroup?(stream: StreamId, fallback: LaunchFallback): void;
  /** Ends `stream`'s open group (see {@link GroupEnd}). @throws LaunchError when none is open. */
  endGroup?(stream: StreamId, end: GroupEnd): void;
  /** Submits `stream`'s recorded work to the device. */
  flush(stream: StreamId): void;
  /** Resolves once every piece of work recorded on `stream` so far has completed. */
  sync(stream: StreamId): Promise<void>;
  /** The memory report. */
  memoryUsage(): MemoryUsage;
}
