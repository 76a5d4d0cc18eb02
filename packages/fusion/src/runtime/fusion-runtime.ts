import type { CacheStats, StreamId } from "@weft/environment";
import type { MemoryUsage } from "@weft/server";
import type { OperationIr } from "../ir/operation-ir.js";
import type { DType, TensorData, TensorIr, TypedArray } from "../ir/tensor-ir.js";
import type { HandleContainer } from "./handle-container.js";

/**
 * Whether the runtime was handed an operation of a drained block and carried it out. docs/concepts.md#fusionruntime: a
 * block is drained whether or not its operations ran; one that did not was never replayed, so a
 * remote server still holds its inputs and only the handle's own release frees them.
 *
 * @remarks
 * **Exactly.** `"ran"` means the runtime was handed the operation — inside a fused
 * {@link Optimization} whose `execute` returned, or alone through
 * {@link FusionRuntime.executeOperation} that returned. That holds for `drop` too: a drop on an
 * empty segment and a drop run unfused are handed to `executeOperation` (never skipped), so a
 * runtime that forwards drops (a remote one) knows from `"ran"` that it already freed the tensor.
 * `"not-ran"`: the operation was never handed over, or its execution threw (an input carried an
 * error, the launch failed).
 */
export type OperationRan = "ran" | "not-ran";

/**
 * What a backend can do, as the backend itself reports it: the user API refuses the rest at the
 * call (a dtype the device cannot store, a synchronous read it cannot serve) instead of each
 * caller asserting what a backend supports.
 */
export interface RuntimeCapabilities {
  /** The dtypes tensors of this runtime can have (`f16` only where the device stores it). */
  readonly dtypes: readonly DType[];
  /**
   * How reads are served: `"async"` (a read waits for the device: WebGPU), or `"async-and-sync"`
   * (host memory: `readSync` answers at once, so `dataSync()` works).
   */
  readonly reads: "async" | "async-and-sync";
}

/**
 * What an {@link Optimization} or an unfused operation executes against.
 *
 * **Invariant.** Valid only during the synchronous execution call that received it.
 */
export interface ExecutionContext<H> {
  /** The device's handles. Inputs are borrowed from it; outputs are registered in it. */
  readonly handles: HandleContainer<H>;
  /** The stream the block executes on. */
  readonly stream: StreamId;
}

/**
 * An executable fused block, produced by an {@link OperationFuser}. Burn's `Optimization`.
 *
 * @remarks
 * **Invariant.** Built from *relative* operations (so it can be cached in a plan and replayed for
 * any ids, sizes and scalar values), executed with the *global* operations it covers, in order.
 * It registers a handle (or, on failure, throws) for every output that is still used after the
 * block; outputs whose last use lies inside the block are never written (write elision).
 */
export interface Optimization<H> {
  /** Number of operations this block covers (a prefix of the fuser's input, in order). */
  readonly len: number;
  /** A short name for the inspector's log of executed blocks (`"elementwise"`, `"reduce"`). */
  readonly name: string;
  /**
   * The largest relative shape id the optimization relies on beyond its own operations' (for
   * instance a shape it derived); the plan store takes the max with the operations' ids, and the
   * queue runs the plan unfused when the stream never assigned that id (docs/pitfalls.md#p12). Optional.
   */
  readonly maxRelativeShapeId?: number;
  /**
   * Executes the block. Throws when it fails — and then only *before* it changed the container
   * (no output registered, no input removed): the engine then runs the block op by op, so only
   * the outputs computed from the op that fails carry an error. A block that throws after
   * changing the container gets the error on every output it did not register.
   */
  execute(ctx: ExecutionContext<H>, operations: readonly OperationIr[]): void;
}

/** Whether a fuser still accepts operations. */
export type FuserStatus = "open" | "closed";

/** A fuser's current offer: how good the fusion it would produce is, and whether it can produce one. */
export interface FuserProperties {
  readonly score: number;
  readonly ready: boolean;
}

/**
 * Accepts operations one at a time (relative form) and builds an {@link Optimization} out of the
 * prefix it accepted. Burn's `OperationFuser`.
 *
 * **Invariants.** Once `closed` it ignores further operations until `reset()`. `finish()` is only
 * called when `properties().ready`, and covers exactly the first `len()` operations it was fed.
 * `len() ≤ accepted()`.
 */
export interface OperationFuser<O> {
  fuse(operation: OperationIr): void;
  finish(): O;
  reset(): void;
  status(): FuserStatus;
  properties(): FuserProperties;
  /** The operations the block it offers now covers: a prefix of those it accepted. */
  len(): number;
  /**
   * The operations it accepted so far, when more than it offers (`len()` when absent): a fuser
   * may take operations its block cannot cover yet, because later ones may make a longer block
   * valid (the WebGPU elementwise fuser past the binding limit: results alive now may die in
   * it). The search grows a block by what its fusers accept and executes what they offer.
   */
  accepted?(): number;
  clone(): OperationFuser<O>;
}

/** The operations `fuser` accepted so far (see {@link OperationFuser.accepted}). */
export function acceptedBy(fuser: OperationFuser<unknown>): number {
  return fuser.accepted?.() ?? fuser.len();
}

/**
 * What a backend reports about itself for `weft.stats()`: plain numbers a user can watch to see
 * that nothing grows with the number of requests, scalars, seeds, shapes or streams.
 */
export interface RuntimeStats {
  /** Compiled pipelines held now (the CPU backend: kernel keys held as compiled). */
  readonly pipelines: number;
  /** Kernels generated (code generation runs), since the runtime was created. */
  readonly kernelsGenerated: number;
  /** Kernel launches requested, since the runtime was created. */
  readonly launches: number;
  /** Submissions to the device's queue (0 where launches run when recorded, as on the CPU). */
  readonly submits: number;
  /** Every bounded cache of the backend, by name: size, capacity, hits, misses, evictions. */
  readonly caches: Readonly<Record<string, CacheStats>>;
}

/**
 * What a backend gives the fusion engine: its fusers, how to run one operation unfused, and how
 * its handles are aliased, freed, uploaded and read. Burn's `FusionRuntime` (docs/concepts.md#fusionruntime), plus the
 * data paths Burn reaches through the inner backend.
 *
 * @remarks
 * **Handles.** `H` carries explicit reference counts: {@link FusionRuntime.aliasHandle} takes a new
 * reference over the same memory (a cross-stream alias is an independent container entry, so
 * consuming one alias never frees the memory under the other), {@link FusionRuntime.releaseHandle}
 * gives one back, and {@link FusionRuntime.canMut} says whether the caller holds the only one.
 * Extend {@link BaseFusionRuntime} to get the defaults of docs/concepts.md#fusionruntime for
 * `aliasHandle`/`freeHandle`.
 */
export interface FusionRuntime<H, O extends Optimization<H> = Optimization<H>> {
  /** The backend's name (`"webgpu"`, `"cpu"`). */
  readonly name: string;
  /** What the backend supports (dtypes, synchronous reads). */
  readonly capabilities: RuntimeCapabilities;
  /** A fresh set of fusers; each stream gets its own set. */
  fusers(): OperationFuser<O>[];
  /**
   * Runs one operation unfused: borrows its inputs from `ctx.handles`, registers its output.
   * A `drop` is handed here too (also on an empty segment): a local runtime may remove the handle
   * (the engine's `freeHandle` then finds nothing to do); a remote one forwards it.
   * Throws when it fails (typed errors: `UnsupportedError`, `ServerError`, …).
   */
  executeOperation(operation: OperationIr, ctx: ExecutionContext<H>): void;
  /**
   * A cross-stream alias of `handle` to register under a fresh id, for use on `stream` (docs/concepts.md#fusionruntime):
   * an independent reference over the same memory, so consuming one alias never frees the memory
   * under the other. A remote runtime mints a fresh server id (a bare copy of the id would collapse
   * the aliases into one server tensor, freed by the first consume); a router also uses `stream` to
   * move the tensor to the server that stream lives on.
   */
  aliasHandle(handle: H, stream: StreamId): H;
  /**
   * Reclaims a `ReadWrite` (last-use) handle as the engine drains a block (docs/concepts.md#fusionruntime); `ran` says
   * whether the runtime was handed the operation that used it last (see {@link OperationRan}).
   */
  freeHandle(handles: HandleContainer<H>, tensor: TensorIr, ran: OperationRan): void;
  /** Gives back one reference on `handle`. */
  releaseHandle(handle: H): void;
  /** Whether `handle`'s memory has exactly one reference (in-place writes allowed). */
  canMut(handle: H): boolean;
  /**
   * Uploads host values; the handle starts with one reference. Ordered on `stream`. Copies
   * `data.data` before it returns and keeps no reference to it (`FusionClient.upload`'s promise;
   * the conformance kit's "a tensor never aliases the caller's array" checks it on every backend).
   */
  upload(data: TensorData, stream: StreamId): H;
  /**
   * Reads `handle`'s values (row-major, `tensor.shape`, `tensor.dtype`) once `stream`'s work has
   * run. The promise holds nothing of the engine while it waits (docs/pitfalls.md#p4).
   * `into` (optional, caller-owned, the dtype's array type, at least the element count): a runtime
   * that can copy its values straight into it does, and resolves to it; one that resolves to its
   * own array instead has it copied into `into` by the engine.
   */
  read(handle: H, tensor: TensorIr, stream: StreamId, into?: TypedArray): Promise<TypedArray>;
  /** The values now, where the backend can answer synchronously; else `undefined`. */
  readSync?(handle: H, tensor: TensorIr, stream: StreamId): TypedArray | undefined;
  /** Resolves once the device finished everything recorded on `stream`. */
  sync(stream: StreamId): Promise<void>;
  /**
   * The failure that claims `handle`'s bytes on the device, if any: a launch that failed (or was
   * skipped) *after* the engine registered the handle, which the backend tracks by byte range
   * (`StreamMemory.taint`) instead of throwing. Optional; backends whose launches fail
   * asynchronously should implement it.
   *
   * @remarks
   * **Why.** A fused block can compute independent outputs in one launch (`y = f(m)` and
   * `z = g(x)`). When `m` is tainted device-side, the backend skips the whole launch and taints
   * every output, `z` included, although `z` is not computed from the failure (docs/design.md#semantics:
   * a failure taints exactly what is computed from it). With this hook the engine runs such a
   * block op by op instead, so only the launches that read tainted bytes are skipped.
   * **Contract.** Synchronous, no side effect; `undefined` when every byte of the handle is clean.
   */
  handleError?(handle: H): Error | undefined;
  /**
   * Whether a deferred check not settled yet claims `handle`'s bytes (a GPU `gather`'s index
   * check, `ComputeServer.pendingOf`). Optional; backends with deferred checks implement it.
   *
   * @remarks
   * **Why.** A launch reading such bytes runs, and *every* output it writes inherits the check: a
   * fused block with an output that does not depend on the pending input would fail that output
   * too when the check fails. The engine asks before a fused block and, when some operation of
   * the block does not depend on a pending input, runs it op by op (each launch then inherits
   * exactly its own reads' checks). A block computed entirely from the pending input stays fused.
   * **Contract.** Synchronous, no side effect.
   */
  handlePending?(handle: H): boolean;
  /**
   * Whether {@link FusionRuntime.handleError} or {@link FusionRuntime.handlePending} could answer
   * anything but "clean" for some handle now (a failure or a deferred check is live on the
   * device). Optional: absent means "maybe", and the engine asks per handle.
   *
   * @remarks
   * **Why.** The engine asks both hooks for every external input of every fused block; with no
   * failure anywhere (the common case) that is pure host cost per operation. One O(1) answer per
   * block replaces them. **Contract.** Synchronous, no side effect; `false` only when both hooks
   * would answer clean for every handle.
   */
  deviceClaims?(): boolean;
  /** The device memory report. */
  memoryUsage(): MemoryUsage;
  /** What the backend holds and did (`weft.stats()`). Optional; a runtime without it reports zeros. */
  resourceStats?(): RuntimeStats;
  /** Gives every free page (and other reclaimable device memory) back (`weft.releaseUnused()`). Optional. */
  releaseUnused?(): void;
  /**
   * Releases the device: its memory, caches and, where the runtime owns it, the device itself.
   * Every later call may throw. Optional; called once, by `FusionDevice.dispose`.
   */
  dispose?(): void;
}

/**
 * The defaults of {@link FusionRuntime.aliasHandle} and {@link FusionRuntime.freeHandle},
 * right for local backends whose handle is a reference count over device memory. A backend whose
 * handles are remote ids (a router/remote backend) overrides both.
 */
export abstract class BaseFusionRuntime<H, O extends Optimization<H> = Optimization<H>> implements FusionRuntime<H, O> {
  abstract readonly name: string;
  abstract readonly capabilities: RuntimeCapabilities;
  abstract fusers(): OperationFuser<O>[];
  abstract executeOperation(operation: OperationIr, ctx: ExecutionContext<H>): void;
  abstract retainHandle(handle: H): H;
  abstract releaseHandle(handle: H): void;
  abstract canMut(handle: H): boolean;
  abstract upload(data: TensorData, stream: StreamId): H;
  abstract read(handle: H, tensor: TensorIr, stream: StreamId, into?: TypedArray): Promise<TypedArray>;
  abstract sync(stream: StreamId): Promise<void>;
  abstract memoryUsage(): MemoryUsage;

  /** Default: a new reference over the same memory (the JavaScript form of Rust's `clone`). */
  aliasHandle(handle: H, _stream: StreamId): H {
    return this.retainHandle(handle);
  }

  /** Default: removes the container entry, releasing its reference (only for `ReadWrite`). */
  freeHandle(handles: HandleContainer<H>, tensor: TensorIr, _ran: OperationRan): void {
    handles.free(tensor);
  }
}
