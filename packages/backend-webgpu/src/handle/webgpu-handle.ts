import { invariant } from "@weft/environment";
import type { DType } from "@weft/fusion";
import type { MemoryHandle } from "@weft/server";

/**
 * A tensor's place in device memory: a strided view over one {@link MemoryHandle}.
 *
 * @remarks
 * **Why.** Layout ops (reshape of a contiguous tensor, permute, expand, slice) never copy: they make
 * a new handle over the same memory with other `shape`/`strides`/`offset`, and every kernel reads
 * its inputs through those strides. Burn's `CubeTensor` (handle + shape + strides).
 * **Ownership.** Each `WebGpuHandle` owns exactly one reference on `memory` (taken by whoever built
 * it: the allocation, or `retain()` for a view). `releaseWebGpuHandle` gives it back once.
 * **Invariants.**
 * - `strides` and `offset` are in elements of `dtype`, never negative; a stride is `0` only on a
 *   broadcast (expanded) dimension.
 * - Every element the view addresses lies inside `memory` (`offset + Σ (shape[d]-1)·strides[d]`
 *   is below `memory.size / bytesPerElement`).
 * - `bool` is stored as one `u32` per element.
 */
export interface WebGpuHandle {
  /** The device memory; one reference is owned by this handle. */
  readonly memory: MemoryHandle;
  /** Logical shape. */
  readonly shape: readonly number[];
  /** Element strides, one per dimension (0 for broadcast dims). */
  readonly strides: readonly number[];
  /** Element offset of the first element in `memory`. */
  readonly offset: number;
  /** Element type (storage: `bool` as `u32`, `f16` as 2 bytes). */
  readonly dtype: DType;
}

/** Row-major strides of a dense tensor of `shape` (in elements). */
export function contiguousStrides(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length).fill(1);
  let acc = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = acc;
    acc *= shape[d] ?? 1;
  }
  return strides;
}

/** Number of elements of `shape`. */
export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/**
 * Whether `handle` is dense row-major (its elements are `offset .. offset + n` in order). Dims of
 * size 1 may carry any stride.
 */
export function isContiguous(handle: Pick<WebGpuHandle, "shape" | "strides">): boolean {
  let expected = 1;
  for (let d = handle.shape.length - 1; d >= 0; d--) {
    const size = handle.shape[d] ?? 1;
    if (size !== 1 && handle.strides[d] !== expected) return false;
    expected *= size;
  }
  return true;
}

/** A dense handle over freshly allocated `memory` (takes over the caller's reference). */
export function contiguousHandle(memory: MemoryHandle, shape: readonly number[], dtype: DType): WebGpuHandle {
  return { memory, shape: [...shape], strides: contiguousStrides(shape), offset: 0, dtype };
}

/** A new view over `handle.memory` (takes a new reference on it). */
function view(handle: WebGpuHandle, shape: readonly number[], strides: readonly number[], offset: number): WebGpuHandle {
  handle.memory.retain();
  return { memory: handle.memory, shape: [...shape], strides: [...strides], offset, dtype: handle.dtype };
}

/**
 * `reshape` as a view: only for contiguous handles (returns `undefined` otherwise, and the caller
 * copies first). Takes a new reference.
 */
export function reshapeView(handle: WebGpuHandle, shape: readonly number[]): WebGpuHandle | undefined {
  invariant(elementCount(shape) === elementCount(handle.shape), () => `reshape ${handle.shape} → ${shape} changes the element count`);
  if (!isContiguous(handle)) return undefined;
  return view(handle, shape, contiguousStrides(shape), handle.offset);
}

/** `permute`: `out.shape[i] = shape[axes[i]]`, strides follow. Takes a new reference. */
export function permuteView(handle: WebGpuHandle, axes: readonly number[]): WebGpuHandle {
  const shape = axes.map((a) => handle.shape[a] ?? 1);
  const strides = axes.map((a) => handle.strides[a] ?? 0);
  return view(handle, shape, strides, handle.offset);
}

/** `expand` to `shape` (same rank, or more leading dims): grown dims get stride 0. New reference. */
export function expandView(handle: WebGpuHandle, shape: readonly number[]): WebGpuHandle {
  const lead = shape.length - handle.shape.length;
  invariant(lead >= 0, () => `expand ${handle.shape} → ${shape} lowers the rank`);
  const strides = shape.map((size, d) => {
    const src = d - lead;
    if (src < 0) return 0;
    const from = handle.shape[src] ?? 1;
    return from === size ? (handle.strides[src] ?? 0) : 0;
  });
  return view(handle, shape, strides, handle.offset);
}

/** `slice` with steps: `offset += start·stride`, `stride *= step`. New reference. */
export function sliceView(
  handle: WebGpuHandle,
  ranges: readonly { readonly start: number; readonly end: number; readonly step: number }[],
): WebGpuHandle {
  let offset = handle.offset;
  const shape: number[] = [];
  const strides: number[] = [];
  handle.shape.forEach((size, d) => {
    const r = ranges[d] ?? { start: 0, end: size, step: 1 };
    const stride = handle.strides[d] ?? 0;
    const count = Math.max(0, Math.ceil((Math.min(r.end, size) - r.start) / r.step));
    if (count > 0) offset += r.start * stride;
    shape.push(count);
    strides.push(stride * r.step);
  });
  return view(handle, shape, strides, offset);
}

/** Gives back the handle's reference on its memory (exactly once per handle). */
export function releaseWebGpuHandle(handle: WebGpuHandle): void {
  handle.memory.release();
}
