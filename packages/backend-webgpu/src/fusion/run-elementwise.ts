import type { DType, ExecutionContext, OperationIr } from "@weft/fusion";
import { deviceBytesPerElement } from "@weft/fusion";
import { kernelBinding, type KernelBinding } from "@weft/server";
import { elementCount, isContiguous } from "@weft/fusion";
import { contiguousHandle, type WebGpuHandle } from "../handle/webgpu-handle.js";
import { elementwiseKernel, elementwiseKey, elementwiseUniforms, type ElementwiseOutput, type ElementwiseSpec, type KernelLaunchPlan } from "../kernels/elementwise.js";
import { storageElement } from "../codegen/wgsl/types.js";
import { BlockGraph } from "./block-graph.js";
import { distinctBindings } from "./distinct-bindings.js";
import type { ElementwiseLaunchCache } from "./elementwise-launch-cache.js";
import type { Launcher } from "./launcher.js";
import { outputBound, outputHandle, packedOutputs, planPacks, type PackSlot } from "./pack-outputs.js";

/** The binding of a handle's whole memory. */
export function bindingOf(handle: WebGpuHandle, access: KernelBinding["access"]): KernelBinding {
  return kernelBinding(handle.memory.binding(), access);
}

/** Bytes of a dense tensor. */
export function bytesOf(shape: readonly number[], dtype: DType): number {
  return elementCount(shape) * deviceBytesPerElement(dtype);
}

/**
 * Whether an output of `dtype` and `shape` may be written in place over `input`'s memory.
 *
 * @remarks
 * All of these must hold:
 * 1. `input` is dense at offset 0 with exactly `shape` and its memory holds exactly the output's
 *    bytes (the output becomes a dense handle over the same memory);
 * 2. the WGSL storage element is the same (`f32` stays `f32`, `i32` stays `i32`; `bool` and `u32`
 *    share `u32`): the kernel writes the output through the input's binding, declared with the
 *    input's element type, and WGSL rejects `cannot assign 'u32' to 'f32'`;
 * 3. `memory.canMut()`: this handle holds the only reference (never a clone, a view or a
 *    cross-stream alias).
 * The dying input must also be bound exactly once in the dispatch; {@link distinctBindings}
 * guarantees that for every slot it did not replace by a copy.
 */
export function canWriteInPlace(input: WebGpuHandle, shape: readonly number[], dtype: DType): boolean {
  return (
    input.offset === 0 &&
    isContiguous(input) &&
    input.shape.length === shape.length &&
    input.shape.every((s, d) => s === shape[d]) &&
    storageElement(input.dtype, 1) === storageElement(dtype, 1) &&
    input.memory.size === bytesOf(shape, dtype) &&
    input.memory.canMut()
  );
}

/**
 * What one execution of an elementwise block decided from its operations and its inputs' layouts:
 * enough to replay the launch for the same layouts without rebuilding anything
 * (see {@link ElementwiseLaunchCache}).
 */
export interface ElementwiseDecision {
  /** The kernel key (`undefined` when nothing was launched). */
  readonly key: string | undefined;
  /** The kernel and dispatch (`undefined` when nothing was launched). */
  readonly plan: KernelLaunchPlan | undefined;
  /** Per written output (in production order), the input slot it is written in place into. */
  readonly inPlace: readonly (number | undefined)[];
  /** Per written output, where its pack puts it (`undefined` for all when nothing is packed; see {@link planPacks}). */
  readonly packs: readonly (PackSlot | undefined)[] | undefined;
  /** Whether some input was replaced by a temporary copy (such a launch is never replayed). */
  readonly copied: boolean;
  /**
   * The dtype of each parameter slot of the kernel (the values change per execution and are
   * collected again by `pushParams`; the dtypes are structure).
   */
  readonly paramDtypes: readonly DType[];
}

/**
 * Runs a block of elementwise operations (and `drop`s) as ONE kernel: builds the graph, elides the
 * writes of tensors that die in the block, writes in place into a dying input when its memory has
 * a single owner, launches, registers the written outputs and frees the inputs that died.
 *
 * @remarks
 * **In place** only when the input dies in the block and {@link canWriteInPlace} holds (same
 * storage element type, dense, sole reference).
 * **Bindings.** No allocation is bound twice in the dispatch ({@link distinctBindings}): a second
 * view of an already-bound allocation is read from a temporary dense copy. The single-element
 * outputs of a block share one allocation per storage type ({@link planPacks}).
 * **Replays.** With a `cache` (one per fused optimization), an execution whose inputs have the
 * layouts of an earlier one replays that execution's decisions ({@link ElementwiseLaunchCache}).
 */
export function runElementwiseBlock(
  launcher: Launcher,
  ctx: ExecutionContext<WebGpuHandle>,
  ops: readonly OperationIr[],
  fused: boolean,
  cache?: ElementwiseLaunchCache,
): void {
  if (cache !== undefined) cache.run(launcher, ctx, ops, fused);
  else runElementwiseBlockUncached(launcher, ctx, ops, fused);
}

/**
 * {@link runElementwiseBlock} without a cache: derives everything from `ops` and the inputs'
 * handles, and returns what it decided (for {@link ElementwiseLaunchCache} to replay).
 */
export function runElementwiseBlockUncached(
  launcher: Launcher,
  ctx: ExecutionContext<WebGpuHandle>,
  ops: readonly OperationIr[],
  fused: boolean,
): ElementwiseDecision {
  const block = new BlockGraph();
  for (const op of ops) block.add(op);
  const producing = ops.filter((o): o is Exclude<OperationIr, { kind: "drop" }> => o.kind !== "drop");
  const shape = producing[0]?.out.shape ?? [];
  const written = block.written();
  launcher.counters.elidedWrites += fused ? block.elided() : 0;

  const computes = written.length > 0 && elementCount(shape) > 0;
  const inputs = block.inputs.map((i) => ctx.handles.getHandle(i.tensor));
  // Nothing is launched when nothing is computed, so nothing needs distinct bindings then.
  const bound = distinctBindings(launcher, inputs, ctx.stream, [], computes);
  const handles = bound.handles;
  const usedInPlace = new Set<number>();
  const outputs: ElementwiseOutput[] = written.map((o) => {
    const slot = block.inputs.findIndex((input, k) => {
      const h = handles[k];
      return h !== undefined && input.dies && !usedInPlace.has(k) && !bound.copied.has(k) && canWriteInPlace(h, shape, o.tensor.dtype);
    });
    if (slot < 0) return { node: o.node, dtype: o.tensor.dtype };
    usedInPlace.add(slot);
    return { node: o.node, dtype: o.tensor.dtype, inPlaceSlot: slot };
  });

  if (computes) {
    const packs = planPacks(outputs, elementCount(shape));
    const specOutputs = packedOutputs(outputs, packs, shape);
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
      outputs: specOutputs,
    };
    const key = elementwiseKey(spec, launcher.profile);
    const plan = launcher.plan(key, () => elementwiseKernel(spec, launcher.profile, key));
    const outHandles: WebGpuHandle[] = [];
    const bindings: KernelBinding[] = handles.map((h, k) => bindingOf(h, usedInPlace.has(k) ? "read-write" : "read"));
    written.forEach((o, k) => {
      const slot = outputs[k]?.inPlaceSlot;
      const inPlace = slot === undefined ? undefined : handles[slot];
      const made = outputHandle(launcher, ctx.stream, o.tensor, k, inPlace, packs?.[k], outHandles);
      outHandles.push(made);
      if (outputBound(k, inPlace, packs?.[k])) bindings.push(bindingOf(made, "write"));
    });
    launcher.launch(plan, bindings, ctx.stream, elementwiseUniforms(spec));
    const copied = bound.copied.size > 0;
    bound.release();
    if (fused && producing.length > 1) launcher.counters.fusedLaunches++;
    written.forEach((o, k) => {
      const h = outHandles[k];
      if (h !== undefined) ctx.handles.registerHandle(o.tensor.id, h);
    });
    finishBlock(ctx, block, ops);
    return { key, plan, inPlace: outputs.map((o) => o.inPlaceSlot), packs, copied, paramDtypes: block.graph.params.map((p) => p.dtype) };
  } else {
    bound.release();
    // Nothing to compute (all results die, or an empty shape): outputs still need handles, and
    // are computed from the inputs (a failure claiming an input reaches them: see propagate).
    const outs = written.map((o) => contiguousHandle(launcher.empty(bytesOf(o.tensor.shape, o.tensor.dtype), ctx.stream), o.tensor.shape, o.tensor.dtype));
    launcher.propagate(inputs.map((h) => h.memory), outs.map((h) => h.memory), ctx.stream);
    written.forEach((o, k) => {
      const h = outs[k];
      if (h !== undefined) ctx.handles.registerHandle(o.tensor.id, h);
    });
  }
  finishBlock(ctx, block, ops);
  return { key: undefined, plan: undefined, inPlace: outputs.map((o) => o.inPlaceSlot), packs: undefined, copied: false, paramDtypes: [] };
}

/** Frees the inputs that died in the block and the dropped tensors. */
function finishBlock(ctx: ExecutionContext<WebGpuHandle>, block: BlockGraph, ops: readonly OperationIr[]): void {
  for (const input of block.inputs) if (input.dies) ctx.handles.removeHandle(input.tensor.id);
  for (const op of ops) if (op.kind === "drop") ctx.handles.removeHandle(op.tensor.id);
}
