import { invariant } from "@weft/environment";
import type { DType, ExecutionContext, OperationIr } from "@weft/fusion";
import type { KernelBinding, MemoryHandle } from "@weft/server";
import { elementCount } from "@weft/fusion";
import { contiguousHandle, type WebGpuHandle } from "../handle/webgpu-handle.js";
import type { ElementwiseInput, KernelLaunchPlan } from "../kernels/elementwise.js";
import { isArgOp, REDUCE_ITERATIONS, reducePassKernel, reducePassKey, reducePassUniforms, type ReducePassSpec, type ReduceSink, type ReduceSource } from "../kernels/reduce.js";
import { BlockGraph } from "./block-graph.js";
import type { Launcher } from "./launcher.js";
import { distinctBindings } from "./distinct-bindings.js";
import type { ReduceLaunchCache } from "./reduce-launch-cache.js";
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
  epilogue.produce(reduce.out, "res");
  for (const o of ops.slice(at + 1)) {
    if (o.kind === "drop" && prologue.outputs.some((p) => p.tensor.id === o.tensor.id)) prologue.add(o);
    else if (!epilogue.add(o)) return undefined;
  }
  prologue.leaf(reduce.input);
  if (prologue.written().length > 0) return undefined;
  return { prologue, epilogue, reduce };
}

/** One pass of a reduction as launched: its kernel, and what it binds and reads besides. */
export interface ReducePassDecision {
  readonly key: string;
  readonly plan: KernelLaunchPlan;
  /** The partial chunks per output element this pass writes; 0 for the final pass (it writes the outputs). */
  readonly chunks: number;
  /** Which parameter values (prologue's, then epilogue's, in `pushParams` order) its uniforms hold: `[from, to)`. */
  readonly paramFrom: number;
  readonly paramTo: number;
}

/**
 * What one execution of a reduce block decided from its operations and its inputs' layouts: enough
 * to replay the launches for the same layouts without rebuilding the block graphs, specs, keys or
 * plans (see {@link ReduceLaunchCache}).
 */
export interface ReduceDecision {
  /** The passes in launch order (empty when nothing was launched: no output element, or nothing written). */
  readonly passes: readonly ReducePassDecision[];
  /** Output elements (each partial pass writes `outer × chunks` partials). */
  readonly outer: number;
  /** Whether the op tracks an index (each partial pass also writes `outer × chunks` indices). */
  readonly arg: boolean;
  /** Whether some input was replaced by a temporary copy (such an execution is never replayed). */
  readonly copied: boolean;
  /** The dtype of each parameter slot: the prologue's, then the epilogue's (values change per execution). */
  readonly paramDtypes: readonly DType[];
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
 * **Replays.** With a `cache` (one per fused optimization), an execution whose inputs have the
 * layouts of an earlier one replays that execution's decisions ({@link ReduceLaunchCache}).
 */
export function runReduceBlock(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[], fused: boolean, cache?: ReduceLaunchCache): boolean {
  if (cache !== undefined) return cache.run(launcher, ctx, ops, fused);
  return runReduceBlockUncached(launcher, ctx, ops, fused) !== undefined;
}

/**
 * {@link runReduceBlock} without a cache: derives everything from `ops` and the inputs' handles,
 * and returns what it decided (for {@link ReduceLaunchCache} to replay), or `undefined` when the
 * block cannot be fused (nothing was run).
 */
export function runReduceBlockUncached(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[], fused: boolean): ReduceDecision | undefined {
  const plan = planReduceBlock(ops);
  if (plan === undefined) return undefined;
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
  const arg = isArgOp(reduce.op);
  const label = ops.filter((o) => o.kind !== "drop").map((o) => (o.kind === "reduce" ? `${o.op}` : o.kind === "unary" || o.kind === "binary" || o.kind === "binary-scalar" ? o.op : o.kind)).join("+");
  const prologueParams = prologue.graph.params.length;
  const allParams = prologueParams + epilogue.graph.params.length;
  const passes: ReducePassDecision[] = [];

  if (launches) {
    let source: ReduceSource = { kind: "graph", graph: prologue.graph, node, inputs: blockInputs(prologue, pHandles) };
    let sourceBindings: KernelBinding[] = pHandles.map((h) => bindingOf(h, "read"));
    let temps: MemoryHandle[] = [];
    let extent = total;
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
      passes.push({ key, plan: kernel, chunks: final ? 0 : chunks, paramFrom: source.kind === "graph" ? 0 : prologueParams, paramTo: final ? allParams : prologueParams });
      temps.forEach((m) => m.release());
      if (final) break;
      temps = next;
      sourceBindings = next.map((m) => ({ binding: m.binding(), access: "read" as const }));
      source = { kind: "partial", chunks };
      extent = chunks;
    }
    if (fused && ops.filter((o) => o.kind !== "drop").length > 1) launcher.counters.fusedLaunches++;
    invariant(passes.length >= 1, "a reduction launches at least one pass");
  } else {
    // No output element: the outputs are still computed from the inputs (see propagate).
    launcher.propagate(bound.handles.map((h) => h.memory), outHandles.map((h) => h.memory), ctx.stream);
  }
  const copied = bound.copied.size > 0;
  bound.release();
  written.forEach((o, k) => {
    const h = outHandles[k];
    if (h !== undefined) ctx.handles.registerHandle(o.tensor.id, h);
  });
  for (const input of [...prologue.inputs, ...epilogue.inputs]) if (input.dies) ctx.handles.removeHandle(input.tensor.id);
  for (const op of ops) if (op.kind === "drop") ctx.handles.removeHandle(op.tensor.id);
  return { passes, outer, arg, copied, paramDtypes: [...prologue.graph.params, ...epilogue.graph.params].map((p) => p.dtype) };
}
