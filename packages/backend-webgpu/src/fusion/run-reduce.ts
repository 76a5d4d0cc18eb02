import { invariant } from "@weft/environment";
import type { ExecutionContext, OperationIr } from "@weft/fusion";
import type { KernelBinding, MemoryHandle } from "@weft/server";
import { elementCount } from "@weft/fusion";
import { contiguousHandle, type WebGpuHandle } from "../handle/webgpu-handle.js";
import type { ElementwiseInput } from "../kernels/elementwise.js";
import { accumulatorDtype, isArgOp, REDUCE_ITERATIONS, reducePassKernel, reducePassKey, reducePassUniforms, type ReducePassSpec, type ReduceSink, type ReduceSource } from "../kernels/reduce.js";
import { BlockGraph } from "./block-graph.js";
import type { Launcher } from "./launcher.js";
import { distinctBindings } from "./distinct-bindings.js";
import { bindingOf, bytesOf } from "./run-elementwise.js";

type ReduceOperation = Extract<OperationIr, { kind: "reduce" }>;

/** Layout inputs of a block for a kernel spec. */
export function blockInputs(block: BlockGraph, handles: readonly WebGpuHandle[]): ElementwiseInput[] {
  return block.inputs.map((input, k) => {
    const h = handles[k];
    invariant(h !== undefined, () => `block input ${input.tensor.id} has no handle`);
    return { dtype: input.tensor.dtype, access: "read", layout: { shape: h.shape, strides: h.strides, offset: h.offset } };
  });
}

/**
 * Splits a reduce block (`prologue…, reduce, epilogue…`, with `drop`s anywhere) into its prologue
 * and epilogue graphs. Returns `undefined` when a prologue tensor is still used after the block
 * (it would have to be written, which the reduce kernel does not do): the caller then runs the ops
 * one by one.
 */
export function planReduceBlock(ops: readonly OperationIr[]): { prologue: BlockGraph; epilogue: BlockGraph; reduce: ReduceOperation } | undefined {
  const at = ops.findIndex((o) => o.kind === "reduce");
  const reduce = ops[at];
  invariant(reduce !== undefined && reduce.kind === "reduce", "a reduce block holds a reduce");
  const prologue = new BlockGraph();
  ops.slice(0, at).forEach((o) => prologue.add(o));
  const epilogue = new BlockGraph();
  const res = epilogue.provide(reduce.out, "res");
  epilogue.outputs.push({ tensor: reduce.out, node: res, written: true });
  for (const o of ops.slice(at + 1)) {
    if (o.kind === "drop" && prologue.outputs.some((p) => p.tensor.id === o.tensor.id)) prologue.add(o);
    else if (!epilogue.add(o)) return undefined;
  }
  prologue.leaf(reduce.input);
  if (prologue.written().length > 0) return undefined;
  return { prologue, epilogue, reduce };
}

/**
 * Runs a reduce block as one kernel (a single pass) or a chain of passes when the reduced extent
 * exceeds one pass's `workgroupSize × REDUCE_ITERATIONS` elements. Returns false when the block
 * cannot be fused (see {@link planReduceBlock}).
 *
 * @remarks
 * **Bindings.** The first pass binds the prologue's inputs, the last the epilogue's inputs and the
 * outputs; no allocation is bound twice in one pass (a tensor both read — `m` in
 * `log(sum(exp(x - m))) + m` — is read by the epilogue from a temporary copy). No output is
 * written in place: outputs are fresh allocations.
 */
export function runReduceBlock(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[], fused: boolean): boolean {
  const plan = planReduceBlock(ops);
  if (plan === undefined) return false;
  const { prologue, epilogue, reduce } = plan;
  const profile = launcher.profile;
  const node = prologue.leaf(reduce.input);
  const valueDtype = prologue.graph.node(node).dtype;
  const written = epilogue.written();
  const outer = elementCount(reduce.input.shape.filter((_, d) => !reduce.axes.includes(d)));
  const launches = outer > 0 && written.length > 0;
  // The prologue and the epilogue may read the same tensor (logSumExp's max): one allocation is
  // never bound twice in a dispatch (see distinctBindings).
  const bound = distinctBindings(
    launcher,
    [...prologue.inputs, ...epilogue.inputs].map((i) => ctx.handles.getHandle(i.tensor)),
    ctx.stream,
    [],
    launches,
  );
  const pHandles = bound.handles.slice(0, prologue.inputs.length);
  const eHandles = bound.handles.slice(prologue.inputs.length);
  if (fused) launcher.counters.elidedWrites += epilogue.elided() + prologue.elided();
  const outHandles = written.map((o) => contiguousHandle(launcher.empty(bytesOf(o.tensor.shape, o.tensor.dtype), ctx.stream), o.tensor.shape, o.tensor.dtype));

  const inputShape = reduce.input.shape;
  const total = elementCount(reduce.axes.map((d) => inputShape[d] ?? 1));
  const chunk = profile.workgroupSize * REDUCE_ITERATIONS;
  const acc = accumulatorDtype(reduce.op, valueDtype);
  const arg = isArgOp(reduce.op);
  const label = ops.filter((o) => o.kind !== "drop").map((o) => (o.kind === "reduce" ? `${o.op}` : o.kind === "unary" || o.kind === "binary" || o.kind === "binary-scalar" ? o.op : o.kind)).join("+");

  if (launches) {
    let source: ReduceSource = { kind: "graph", graph: prologue.graph, node, inputs: blockInputs(prologue, pHandles) };
    let sourceBindings: KernelBinding[] = pHandles.map((h) => bindingOf(h, "read"));
    let temps: MemoryHandle[] = [];
    let extent = total;
    let passes = 0;
    for (;;) {
      const chunks = Math.max(1, Math.ceil(extent / chunk));
      const final = chunks === 1;
      const sink: ReduceSink = final
        ? { kind: "final", outShape: reduce.out.shape, graph: epilogue.graph, inputs: blockInputs(epilogue, eHandles), outputs: written.map((o) => ({ node: o.node, dtype: o.tensor.dtype })), resultDtype: reduce.out.dtype }
        : { kind: "partial", chunks };
      const spec: ReducePassSpec = { op: reduce.op, inputShape, axes: reduce.axes, valueDtype, source, sink, label };
      const key = reducePassKey(spec, profile);
      const kernel = launcher.plan(key, () => reducePassKernel(spec, profile, key));
      let sinkBindings: KernelBinding[];
      let next: MemoryHandle[] = [];
      if (final) {
        sinkBindings = [...eHandles.map((h) => bindingOf(h, "read")), ...outHandles.map((h) => bindingOf(h, "write"))];
      } else {
        next = [launcher.empty(outer * chunks * 4, ctx.stream)];
        if (arg) next.push(launcher.empty(outer * chunks * 4, ctx.stream));
        sinkBindings = next.map((m) => ({ binding: m.binding(), access: "write" as const }));
      }
      launcher.launch(kernel, [...sourceBindings, ...sinkBindings], ctx.stream, reducePassUniforms(spec));
      passes++;
      temps.forEach((m) => m.release());
      if (final) break;
      temps = next;
      sourceBindings = next.map((m) => ({ binding: m.binding(), access: "read" as const }));
      source = { kind: "partial", chunks };
      extent = chunks;
      void acc;
    }
    if (fused && ops.filter((o) => o.kind !== "drop").length > 1) launcher.counters.fusedLaunches++;
    invariant(passes >= 1, "a reduction launches at least one pass");
  } else {
    // No output element: the outputs are still computed from the inputs (see propagate).
    launcher.propagate(bound.handles.map((h) => h.memory), outHandles.map((h) => h.memory), ctx.stream);
  }
  bound.release();
  written.forEach((o, k) => {
    const h = outHandles[k];
    if (h !== undefined) ctx.handles.registerHandle(o.tensor.id, h);
  });
  for (const input of [...prologue.inputs, ...epilogue.inputs]) if (input.dies) ctx.handles.removeHandle(input.tensor.id);
  for (const op of ops) if (op.kind === "drop") ctx.handles.removeHandle(op.tensor.id);
  return true;
}
