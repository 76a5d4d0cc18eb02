import type { StreamId } from "@weft/environment";
import { deviceBytesPerElement, numElements } from "@weft/fusion";
import type { KernelBinding, MemoryHandle } from "@weft/server";
import { ExprGraph } from "../codegen/wgsl/expr.js";
import { contiguousHandle, releaseWebGpuHandle, type WebGpuHandle } from "../handle/webgpu-handle.js";
import type { StridedLayout } from "../codegen/wgsl/indexing.js";
import { elementwiseKernel, elementwiseKey, type ElementwiseSpec } from "../kernels/elementwise.js";
import type { Launcher } from "./launcher.js";

/** The identity of a handle's allocation (stream + allocation id): what a dispatch binds. */
export function allocationKey(memory: MemoryHandle): string {
  return `${memory.stream}:${memory.allocation}`;
}

/**
 * Copies `src` (any strided view) into `dst`'s memory at `layout` (default: dense at offset 0) with
 * one elementwise kernel; with a `layout` the copy writes part of `dst`, which is then bound
 * `read-write` (a failure an earlier part put on `dst` stays on it). An empty `src` copies
 * nothing, but `dst` is still written from it in the server's eyes (`Launcher.propagate`): a
 * failure claiming `src` reaches `dst`.
 */
export function copyInto(launcher: Launcher, src: WebGpuHandle, dst: WebGpuHandle, layout: StridedLayout | undefined, stream: StreamId, label: string): void {
  // A copy at a layout writes part of `dst` (concat, pad): `dst` is read-write, so a failure an
  // earlier part put on it stays (a write would release every claim on the allocation).
  const partial = layout !== undefined;
  if (numElements(src.shape) === 0) {
    launcher.propagate(partial ? [src.memory, dst.memory] : [src.memory], [dst.memory], stream);
    return;
  }
  launchCopy(launcher, src, dst.dtype, layout, { binding: dst.memory.binding(), access: partial ? "read-write" : "write" }, stream, label);
}

/**
 * Copies `src` into `dst`, a dense tensor at an offset inside a larger allocation (a packed output,
 * see `planPacks`), writing exactly `dst`'s bytes: the launch binds the allocation but declares
 * only `dst`'s range written (`KernelBinding.writes`), so a failure claiming `src` reaches `dst`
 * and not the other tensors of the allocation, and their claims stay theirs.
 */
export function copyIntoSlot(launcher: Launcher, src: WebGpuHandle, dst: WebGpuHandle, stream: StreamId, label: string): void {
  const bpe = deviceBytesPerElement(dst.dtype);
  const writes = dst.memory.binding(dst.offset * bpe, numElements(dst.shape) * bpe);
  launchCopy(launcher, src, dst.dtype, { shape: dst.shape, strides: dst.strides, offset: dst.offset }, { binding: dst.memory.binding(), access: "write", writes }, stream, label);
}

/**
 * The one elementwise copy kernel of {@link copyInto} and {@link copyIntoSlot}: reads `src` (any
 * strided view) and writes it as `dtype` at `layout` (default: dense at offset 0) through
 * `output`, the destination's binding with its access (and written range).
 */
function launchCopy(launcher: Launcher, src: WebGpuHandle, dtype: WebGpuHandle["dtype"], layout: StridedLayout | undefined, output: KernelBinding, stream: StreamId, label: string): void {
  const graph = new ExprGraph();
  const node = graph.add({ kind: "input", slot: 0, dtype: src.dtype });
  const spec: ElementwiseSpec = {
    shape: src.shape,
    graph,
    label,
    inputs: [{ dtype: src.dtype, access: "read", layout: { shape: src.shape, strides: src.strides, offset: src.offset } }],
    outputs: [layout === undefined ? { node, dtype } : { node, dtype, layout }],
  };
  const key = elementwiseKey(spec, launcher.profile);
  const plan = launcher.plan(key, () => elementwiseKernel(spec, launcher.profile, key));
  launcher.launch(plan, [{ binding: src.memory.binding(), access: "read" }, output], stream);
}

/** A dense copy of `handle` in a new allocation (the caller releases it). */
export function denseCopy(launcher: Launcher, handle: WebGpuHandle, stream: StreamId, label = "copy"): WebGpuHandle {
  const out = contiguousHandle(launcher.empty(numElements(handle.shape) * deviceBytesPerElement(handle.dtype), stream), handle.shape, handle.dtype);
  copyInto(launcher, handle, out, undefined, stream, label);
  return out;
}

/** What {@link distinctBindings} returns: the handles to bind, and which of them are temporaries. */
export interface DistinctBindings {
  /** One handle per input, in order; no two share an allocation. */
  readonly handles: readonly WebGpuHandle[];
  /** Indices of `handles` that are temporary copies (never a target for an in-place write). */
  readonly copied: ReadonlySet<number>;
  /** Releases the temporary copies; call once the dispatch that binds them was launched. */
  release(): void;
}

/**
 * Makes the inputs of ONE dispatch bind pairwise distinct allocations: an input whose allocation an
 * earlier input already binds (the same tensor read by a reduction's prologue and its epilogue, a
 * view read next to its source such as `x + xᵀ`, an operand and its own transpose in a matmul) is
 * replaced by a dense copy in a fresh allocation.
 *
 * @remarks
 * **Why.** WebGPU rejects a dispatch that binds overlapping ranges of one buffer twice when one of
 * those bindings (or, on Dawn's OpenGL ES backend, any binding of that buffer) is writable:
 * "Writable storage buffer binding aliasing", the whole command buffer is invalid and every
 * output of the submission is tainted. Every kernel binds one buffer per input slot, so the fix
 * that needs no kernel change is to never give two slots the same allocation.
 * **Cost.** One copy kernel per duplicate; duplicates are rare (reads of one buffer through two
 * views inside one fused block) and the copy has the duplicate's size.
 * **Invariant.** The returned handles bind pairwise distinct allocations, none of them equal to an
 * allocation in `reserved` (e.g. outputs already chosen); copies own one reference each, given back
 * by `release()`. With `launches` false (the caller dispatches nothing) the handles are returned
 * unchanged and nothing is copied.
 */
export function distinctBindings(
  launcher: Launcher,
  handles: readonly WebGpuHandle[],
  stream: StreamId,
  reserved: readonly MemoryHandle[] = [],
  launches = true,
): DistinctBindings {
  if (!launches) return { handles, copied: new Set(), release: () => undefined };
  const seen = new Set<string>(reserved.map(allocationKey));
  const copied = new Set<number>();
  const out = handles.map((h, k) => {
    const key = allocationKey(h.memory);
    if (!seen.has(key)) {
      seen.add(key);
      return h;
    }
    copied.add(k);
    const copy = denseCopy(launcher, h, stream, "copy (distinct binding)");
    seen.add(allocationKey(copy.memory));
    return copy;
  });
  let released = false;
  return {
    handles: out,
    copied,
    release: () => {
      if (released) return;
      released = true;
      for (const k of copied) {
        const h = out[k];
        if (h !== undefined) releaseWebGpuHandle(h);
      }
    },
  };
}
