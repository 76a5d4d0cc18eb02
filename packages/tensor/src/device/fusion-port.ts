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
import type { DType, OperationIr, TensorData, TensorIr, TypedArray } from "@weft/fusion";

/** What `Tensor` needs from a `FusionTensor`: identity, lifetime and reads. */
export interface FusionTensorLike {
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
  /** Streams that currently hold a queue. */
  readonly streams: number;
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
  /** The engine's inspector (what ran fused), where the device has one. */
  readonly inspector?: FusionInspectorLike;
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
