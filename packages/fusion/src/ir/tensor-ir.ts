/**
 * Element types. `f16` exists only where the device has it (WebGPU `shader-f16`); `bool` is stored
 * one byte per element on the CPU and as `u32` on devices, and always read back as `Uint8Array`.
 */
export type DType = "f32" | "f16" | "i32" | "u32" | "bool";

/** Identifies one tensor value in the IR. Fresh for every op output (SSA), never reused. */
export type TensorId = number & { readonly __brand: "TensorId" };

/**
 * How an op uses a tensor, Burn's `TensorStatus`.
 * - `NotInit`: an output; no handle exists yet.
 * - `ReadOnly`: read, and used again later.
 * - `ReadWrite`: the last use; the op may consume the buffer (write in place, or free it after).
 */
export type TensorStatus = "NotInit" | "ReadOnly" | "ReadWrite";

/**
 * A snapshot of one tensor at one use: the same id appears with different statuses across ops.
 *
 * @remarks
 * **Invariant.** `shape` is the logical shape; backends decide strides and layout.
 */
export interface TensorIr {
  readonly id: TensorId;
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly status: TensorStatus;
}

/** {@link TensorIr} as a class instance: see {@link tensorIr}. */
class TensorIrValue implements TensorIr {
  constructor(readonly id: TensorId, readonly shape: readonly number[], readonly dtype: DType, readonly status: TensorStatus) {}
}

/**
 * A new {@link TensorIr}: how the library makes every one it records (tests may still write literals).
 *
 * @remarks
 * **Why a class.** V8 tracks each object literal by allocation site; once a phase keeps thousands of
 * them alive (a `tidy` of many lazy ops), it marks the site "tenure" and allocates every later object
 * of that site in the old generation for the rest of the process, where they keep young objects alive
 * through scavenges. An instance from `new` is not tracked (docs/performance.md#allocation-sites).
 */
export function tensorIr(id: TensorId, shape: readonly number[], dtype: DType, status: TensorStatus): TensorIr {
  return new TensorIrValue(id, shape, dtype, status);
}

/** The typed array that holds values of each dtype on the host (`f16` as raw `Uint16Array` bits). */
export interface DTypeArrays {
  f32: Float32Array;
  f16: Uint16Array;
  i32: Int32Array;
  u32: Uint32Array;
  bool: Uint8Array;
}

/** Host-side values of some dtype. */
export type TypedArray = DTypeArrays[DType];

/** Tensor values on the host: a dense row-major array, its shape and its dtype. */
export interface TensorData<D extends DType = DType> {
  readonly data: DTypeArrays[D];
  readonly shape: readonly number[];
  readonly dtype: D;
}

/** Bytes per element as stored on devices (`bool` is a `u32` on devices, 1 byte on the host). */
export function deviceBytesPerElement(dtype: DType): number {
  return dtype === "f16" ? 2 : 4;
}

/** Number of elements of a shape (1 for a scalar, 0 when any dimension is 0). */
export function numElements(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}
