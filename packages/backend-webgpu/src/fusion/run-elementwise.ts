import type { DType, ExecutionContext, OperationIr } from "@weft/fusion";
import { deviceBytesPerElement } from "@weft/fusion";
import type { KernelBinding } from "@weft/server";
import { contiguousHandle, elementCount, isContiguous, type WebGpuHandle } from "../handle/web-gpu-handle.js";
import { elementwiseKernel, elementwiseKey, type ElementwiseOutput, type ElementwiseSpec } from "../kernels/elementwise.js";
import { BlockGraph } from "./block-graph.js";
import type { Launcher } from "./launcher.js";

/** The binding of a handle's whole memory. */
export function bindingOf(handle: WebGpuHandle, access: KernelBinding["access"]): KernelBinding {
  return { binding: handle.memory.binding(), access };
}

/** Bytes of a dense tensor. */
export function bytesOf(shape: readonly number[], dtype: DType): number {
  return elementCount(shape) * deviceBytesPerElement(dtype);
}

/**
 * Runs a block of elementwise operations (and `drop`s) as ONE kernel: builds the graph, elides the
 * writes of tensors that die in the block, writes in place into a dying input when its memory has
 * a single owner, launches, registers the written outputs and frees the inputs that died.
 *
 * @remarks
 * **In place** only when the input dies in the block, is contiguous at offset 0 with exactly the
 * block's shape, has the same element size as the output, and `memory.canMut()` (one reference:
 * never a clone, a view or a cross-stream alias).
 */
export function runElementwiseBlock(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[], fused: boolean): void {
  const block = new BlockGraph();
  for (const op of ops) block.add(op);
  const producing = ops.filter((o): o is Exclude<OperationIr, { kind: "drop" }> => o.kind !== "drop");
  const shape = producing[0]?.out.shape ?? [];
  const written = block.written();
  launcher.counters.elidedWrites += fused ? block.elided() : 0;

  const handles = block.inputs.map((i) => ctx.handles.getHandle(i.tensor));
  const usedInPlace = new Set<number>();
  const outputs: ElementwiseOutput[] = written.map((o) => {
    const slot = block.inputs.findIndex((input, k) => {
      const h = handles[k];
      return (
        h !== undefined &&
        input.dies &&
        !usedInPlace.has(k) &&
        h.offset === 0 &&
        isContiguous(h) &&
        h.shape.length === shape.length &&
        h.shape.every((s, d) => s === shape[d]) &&
        deviceBytesPerElement(h.dtype) === deviceBytesPerElement(o.tensor.dtype) &&
        h.memory.size === bytesOf(shape, o.tensor.dtype) &&
        h.memory.canMut()
      );
    });
    if (slot < 0) return { node: o.node, dtype: o.tensor.dtype };
    usedInPlace.add(slot);
    return { node: o.node, dtype: o.tensor.dtype, inPlaceSlot: slot };
  });

  if (written.length > 0 && elementCount(shape) > 0) {
    const spec: ElementwiseSpec = {
      shape,
      graph: block.graph,
      label: producing.map((o) => (o.kind === "unary" || o.kind === "binary" || o.kind === "binary-scalar" ? o.op : o.kind)).join("+"),
      inputs: block.inputs.map((input, k) => {
        const h = handles[k];
        return {
          dtype: input.tensor.dtype,
          access: usedInPlace.has(k) ? ("read-write" as const) : ("read" as const),
          layout: { shape: h?.shape ?? [], strides: h?.strides ?? [], offset: h?.offset ?? 0 },
        };
      }),
      outputs,
    };
    const key = elementwiseKey(spec, launcher.profile);
    const plan = launcher.plan(key, () => elementwiseKernel(spec, launcher.profile, key));
    const outHandles = written.map((o, k) => {
      const slot = outputs[k]?.inPlaceSlot;
      const source = slot === undefined ? undefined : handles[slot];
      if (source !== undefined) {
        source.memory.retain();
        launcher.counters.inPlaceWrites++;
        return contiguousHandle(source.memory, o.tensor.shape, o.tensor.dtype);
      }
      return contiguousHandle(launcher.empty(bytesOf(o.tensor.shape, o.tensor.dtype), ctx.stream), o.tensor.shape, o.tensor.dtype);
    });
    const bindings: KernelBinding[] = [
      ...handles.map((h, k) => bindingOf(h, usedInPlace.has(k) ? "read-write" : "read")),
      ...outHandles.filter((_, k) => outputs[k]?.inPlaceSlot === undefined).map((h) => bindingOf(h, "write")),
    ];
    launcher.launch(plan, bindings, ctx.stream);
    if (fused && producing.length > 1) launcher.counters.fusedLaunches++;
    written.forEach((o, k) => {
      const h = outHandles[k];
      if (h !== undefined) ctx.handles.registerHandle(o.tensor.id, h);
    });
  } else {
    // Nothing to compute (all results die, or an empty shape): outputs still need handles.
    for (const o of written) {
      ctx.handles.registerHandle(o.tensor.id, contiguousHandle(launcher.empty(bytesOf(o.tensor.shape, o.tensor.dtype), ctx.stream), o.tensor.shape, o.tensor.dtype));
    }
  }
  for (const input of block.inputs) if (input.dies) ctx.handles.removeHandle(input.tensor.id);
  for (const op of ops) if (op.kind === "drop") ctx.handles.removeHandle(op.tensor.id);
}
