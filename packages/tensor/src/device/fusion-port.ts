/**
 * The part of `@weft/fusion`'s `FusionDevice` / `FusionTensor` contract (docs/ARCHITECTURE.md) that
 * the user API calls, written as structural interfaces.
 *
 * @remarks
 * **Why structural.** `FusionDevice<H>` is generic over the backend's handle type; the user API
 * never touches handles, so it accepts any `FusionDevice<H>` through these interfaces without
 * carrying `H` into `Tensor`. A `FusionDevice` satisfies them as written in the contract.
 *
 * @module
 */
import type { StreamId } from "@weft/environment";
import type { DType, OperationIr, TensorData, TensorId, TensorIr, TypedArray } from "@weft/fusion";

/** What `Tensor` needs from a `FusionTensor`: identity, lifetime and reads. */
export interface FusionTensorLike {
  /** The id on its home stream (shared by same-stream clones). */
  readonly id: TensorId;
  readonly shape: readonly number[];
  readonly dtype: DType;
  /** True once this wrapper was disposed (directly, by `tidy`, or by `using`). */
  readonly disposed: boolean;
  /** A new reference to the same value. */
  clone(): FusionTensorLike;
  /** Gives this reference back (registers `drop` on its home stream when it was the last). */
  dispose(): void;
  /** A borrowing use by `opName`; throws `DisposedTensorError` naming `opName` after dispose. */
  intoIr(opName: string): TensorIr;
  /** The values once computed; rejects with the computation error when the tensor is tainted. */
  read(): Promise<TypedArray>;
  /** The values now where the backend can answer synchronously, else `undefined`. */
  readSync(): TypedArray | undefined;
}

/** The device memory report, `weft.memory()`. */
export interface MemoryReport {
  /** Live `FusionTensor` wrappers on this device. */
  readonly liveTensors: number;
  /** Live handle-container entries (buffers or errors standing in for them). */
  readonly liveHandles: number;
  /**
   * Backend stream slots holding device memory now: bounded by the server's slots (task streams
   * share them), back to 0 once every page was given back.
   */
  readonly streams: number;
  /** Lazy streams holding pending operations (0 at quiescence). Absent on minimal fakes. */
  readonly pendingStreams?: number;
  /** Bytes held by live allocations. */
  readonly bytesInUse: number;
  /** Bytes reserved from the device (pages), used or not. */
  readonly bytesReserved: number;
}

/** What `Device` needs from a `FusionDevice`. */
export interface FusionDeviceLike {
  /** A fresh output `TensorIr` (new id, `NotInit`). */
  outputIr(shape: readonly number[], dtype: DType): TensorIr;
  /** Records `op` on the current stream; returns its outputs wrapped, in `operationOutputs` order. */
  register(op: OperationIr): readonly FusionTensorLike[];
  /** Uploads host values as a new tensor on the current stream. */
  upload(data: TensorData): FusionTensorLike;
  /** Drains `stream` (default: the current one) and waits for its device work. */
  sync(stream?: StreamId): Promise<void>;
  /** Drains every stream and waits for all device work. */
  syncAll(): Promise<void>;
  /** The memory report. */
  memory(): MemoryReport;
  /** What the device holds and did (`weft.stats()`), where the device reports it. */
  stats?(): StatsReport;
  /** Gives every free page back (`weft.releaseUnused()`), where the device can. */
  releaseUnused?(): void;
  /** Releases the device (its memory, caches and GPU device), where the device can. */
  dispose?(): void;
  /** The engine's inspector (what ran fused), where the device has one. */
  readonly inspector?: FusionInspectorLike;
}

/** One bounded cache in a {@link StatsReport}: plain numbers. */
export interface CacheReport {
  /** Entries held now. */
  readonly size: number;
  /** The most entries held. */
  readonly capacity: number;
  readonly hits: number;
  readonly misses: number;
  /** Entries dropped to stay within the capacity. */
  readonly evictions: number;
}

/**
 * `weft.stats()`: what a device holds and did, as plain numbers, on every backend — what a user
 * watches to see that nothing grows with requests, scalars, seeds, shapes or streams.
 */
export interface StatsReport {
  /** Compiled pipelines held now (CPU: kernel keys held as compiled). Bounded. */
  readonly pipelines: number;
  /** Kernels generated (code generation runs), since the device was created. */
  readonly kernelsGenerated: number;
  /** Kernel launches requested. */
  readonly launches: number;
  /** Submissions to the device's queue (0 on the CPU, whose kernels run when launched). */
  readonly submits: number;
  /** Execution plans held now (bounded). */
  readonly plans: number;
  /** Cached plans executed without exploring. */
  readonly planHits: number;
  /** Explorations run (a repeated graph adds none). */
  readonly explorations: number;
  /** Views of shared tensors held by borrowing streams now. */
  readonly borrowedViews: number;
  /** Views freed by the borrowing stream so far. */
  readonly viewsReleased: number;
  /** Every bounded cache, by name. */
  readonly caches: Readonly<Record<string, CacheReport>>;
}

/** What the user API and the CLI read from a `FusionInspector`. */
export interface FusionInspectorLike {
  /** The executed blocks still in the log (bounded; oldest dropped first). */
  readonly executedBlocks: readonly { readonly fused: boolean; readonly name: string; readonly kinds: readonly string[] }[];
  /** Blocks executed since construction or the last `clearLog()`. */
  readonly executedCount: number;
  /** Empties the log and resets `executedCount`. */
  clearLog(): void;
}
