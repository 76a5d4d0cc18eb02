import { invariant } from "@weft/environment";
import type { DType, Layout } from "@weft/fusion";
import { contiguousStrides, elementCount, expandLayout, isContiguous, permuteLayout, sliceLayout } from "@weft/fusion";
import type { MemoryHandle } from "@weft/server";

/**
 * A tensor's place in device memory: a strided view over one {@link MemoryHandle}.
 *
 * @remarks
 * **Why.** Layout ops (reshape of a contiguous tensor, permute, expand, slice) never copy: they make
 * a new handle over the same memory with other `shape`/`strides`/`offset` (the {@link Layout}
 * arithmetic of `@weft/fusion`, shared with the CPU backend), and every kernel reads its inputs
 * through those strides. Burn's `CubeTensor` (handle + shape + strides).
 * **Ownership.** Each `WebGpuHandle` owns exactly one reference on `memory` (taken by whoever built
 * it: the allocation, or `retain()` for a view). `releaseWebGpuHandle` gives it back once.
 * **Invariants.**
 * - `strides` and `offset` are in elements of `dtype`, never negative; a stride is `0` only on a
 *   broadcast (expanded) dimension.
 * - Every element the view addresses lies inside `memory` (`offset + Σ (shape[d]-1)·strides[d]`
 *   is below `memory.size / bytesPerElement`).
 * - `bool` is stored as one `u32` per element.
 */
export interface WebGpuHandle extends Layout {
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

/**
 * The one class of {@link WebGpuHandle}s: handles are built with `new`, never as object literals,
 * because V8 allocates a literal's objects in the old generation for good once a phase kept most of
 * them alive (docs/performance.md#allocation-sites).
 */
class StridedHandle implements WebGpuHandle {
  constructor(
    readonly memory: MemoryHandle,
    readonly shape: readonly number[],
    readonly strides: readonly number[],
    readonly offset: number,
    readonly dtype: DType,
  ) {}
}

/** A dense handle over freshly allocated `memory` (takes over the caller's reference). */
export function contiguousHandle(memory: MemoryHandle, shape: readonly number[], dtype: DType): WebGpuHandle {
  return new StridedHandle(memory, [...shape], contiguousStrides(shape), 0, dtype);
}

/** A new view over `handle.memory` with `layout` (takes a new reference on it). */
/**
 * A dense handle at element `offset` of `memory` (a packed output; the caller has taken the
 * reference it owns).
 */
export function offsetHandle(memory: MemoryHandle, shape: readonly number[], dtype: DType, offset: number): WebGpuHandle {
  return new StridedHandle(memory, [...shape], contiguousStrides(shape), offset, dtype);
}

function view(handle: WebGpuHandle, layout: Layout): WebGpuHandle {
  handle.memory.retain();
  return new StridedHandle(handle.memory, [...layout.shape], [...layout.strides], layout.offset, handle.dtype);
}

/**
 * `reshape` as a view: only for contiguous handles (returns `undefined` otherwise, and the caller
 * copies first). Takes a new reference.
 */
export function reshapeView(handle: WebGpuHandle, shape: readonly number[]): WebGpuHandle | undefined {
  invariant(elementCount(shape) === elementCount(handle.shape), () => `reshape ${handle.shape} → ${shape} changes the element count`);
  if (!isContiguous(handle)) return undefined;
  return view(handle, { shape, strides: contiguousStrides(shape), offset: handle.offset });
}

/** `permute`: `out.shape[i] = shape[axes[i]]`, strides follow. Takes a new reference. */
export function permuteView(handle: WebGpuHandle, axes: readonly number[]): WebGpuHandle {
  return view(handle, permuteLayout(handle, axes));
}

/** `expand` to `shape` (same rank, or more leading dims): grown dims get stride 0. New reference. */
export function expandView(handle: WebGpuHandle, shape: readonly number[]): WebGpuHandle {
  invariant(shape.length >= handle.shape.length, () => `expand ${handle.shape} → ${shape} lowers the rank`);
  return view(handle, expandLayout(handle, shape));
}

/** `slice` with steps: `offset += start·stride`, `stride *= step`. New reference. */
export function sliceView(
  handle: WebGpuHandle,
  ranges: readonly { readonly start: number; readonly end: number; readonly step: number }[],
): WebGpuHandle {
  return view(handle, sliceLayout(handle, ranges));
}

/** Gives back the handle's reference on its memory (exactly once per handle). */
export function releaseWebGpuHandle(handle: WebGpuHandle): void {
  handle.memory.release();
}
