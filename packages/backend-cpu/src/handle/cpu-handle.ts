import type { MemoryHandle } from "@weft/server";
import type { DType } from "@weft/fusion";
import { contiguousStrides, isContiguous, type Layout } from "@weft/fusion";
import { rejectF16 } from "../numerics/scalar-ops.js";

/**
 * The CPU backend's tensor handle: a strided view over one host allocation.
 *
 * @remarks
 * **Why a view.** Reshape of contiguous data, permute, expand (stride 0) and slice (with steps)
 * are new handles over the same memory — no copy, no launch — exactly as on a GPU backend.
 * **Ownership.** Each `CpuHandle` object holds one reference on `memory` (taken with
 * `memory.retain()` when a view or alias is made, given back by `CpuRuntime.releaseHandle`). So
 * `memory.canMut()` is true only when a single handle — no view, no alias — refers to the memory,
 * which is exactly when an in-place write is safe.
 * **Invariants.** `shape`, `strides` (elements) and `offset` (elements) address only elements
 * inside `memory`; `dtype` is never `f16` (the CPU backend refuses it with `UnsupportedError`).
 */
export interface CpuHandle extends Layout {
  readonly memory: MemoryHandle;
  readonly dtype: DType;
}

/** Bytes per element in host memory: 4 for f32/i32/u32, 1 for bool. */
export function hostBytesPerElement(dtype: DType): number {
  switch (dtype) {
    case "f32":
    case "i32":
    case "u32":
      return 4;
    case "bool":
      return 1;
    case "f16":
      return rejectF16("storage");
    default:
      return dtype satisfies never;
  }
}

/** Bytes a dense tensor of `numel` elements needs (at least 4, so no allocation is empty). */
export function allocationBytes(numel: number, dtype: DType): number {
  return Math.max(4, Math.ceil((numel * hostBytesPerElement(dtype)) / 4) * 4);
}

/**
 * The one class of {@link CpuHandle}s: handles are built with `new`, never as object literals,
 * because V8 allocates a literal's objects in the old generation for good once a phase kept most of
 * them alive (docs/performance.md#allocation-sites).
 */
class StridedHandle implements CpuHandle {
  constructor(
    readonly memory: MemoryHandle,
    readonly dtype: DType,
    readonly shape: readonly number[],
    readonly strides: readonly number[],
    readonly offset: number,
  ) {}
}

/** A handle over the same memory with another layout (and dtype); the caller has retained `memory`. */
export function withLayout(handle: CpuHandle, layout: Layout, dtype: DType = handle.dtype): CpuHandle {
  return new StridedHandle(handle.memory, dtype, [...layout.shape], [...layout.strides], layout.offset);
}

/** A handle for a dense, freshly allocated tensor of `shape`, taking over `memory`'s reference. */
export function denseHandle(memory: MemoryHandle, shape: readonly number[], dtype: DType, offset = 0): CpuHandle {
  return new StridedHandle(memory, dtype, [...shape], contiguousStrides(shape), offset);
}

/** Whether `handle` is dense and row-major (element `i` at `offset + i`). */
export function isDense(handle: CpuHandle): boolean {
  return isContiguous(handle);
}
