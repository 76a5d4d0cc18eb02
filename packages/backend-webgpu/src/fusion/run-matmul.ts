import { invariant } from "@weft/environment";
import type { DType, ExecutionContext, HandleContainer, OperationIr } from "@weft/fusion";
import { elementCount, retireSoftmaxBlock, softmaxEnds } from "@weft/fusion";
import { contiguousHandle, type WebGpuHandle } from "../handle/webgpu-handle.js";
import { configFits, configTile, launchMatmul, MATMUL_CONFIGS, matmulPlans, splitOf, type MatmulConfig, type MatmulSpec } from "../kernels/matmul.js";
import type { KernelLaunchPlan } from "../kernels/elementwise.js";
import type { KernelBinding } from "@weft/server";
import type { DeviceProfile } from "../codegen/wgsl/types.js";
import { BlockGraph } from "./block-graph.js";
import type { Launcher } from "./launcher.js";
import { bindingOf, bytesOf } from "./run-elementwise.js";
import { blockInputs } from "./run-reduce.js";
import { pushParams } from "./elementwise-ops.js";
import { distinctBindings } from "./distinct-bindings.js";
import type { MatmulLaunchCache } from "./matmul-launch-cache.js";
import { matmulChainFits, matmulChainKernel, matmulChainKey, matmulChainUniforms, type MatmulChainSpec } from "../kernels/matmul-chain.js";

/**
 * Workgroups a product should launch at least, for the heuristic: enough to fill every SM/CU of a
 * large desktop GPU once (an H200 has 132 SMs) before a larger tile is worth its better reuse.
 */
export const MATMUL_MIN_WORKGROUPS = 128;

/**
 * The tile configuration for an `M×K · K×N` product (`batches` of them): the simple kernel for
 * small outputs, else a `vec4` configuration (which reads any layout): the largest tile that fits
 * the device and the output and still launches `MATMUL_MIN_WORKGROUPS` workgroups, else the
 * one that launches the most. The fallback `Tuner.choose` returns while a shape is being tuned,
 * and the whole choice with `autotune: false`.
 *
 * @remarks
 * `bool` products (no `vec4` accumulator) take the scalar `tiled` kernels. Ties in tile area keep
 * the later entry of `MATMUL_CONFIGS` (its order puts the preferred shape last). Split-K configs
 * are the tuner's to choose: it measures them, the heuristic never takes one.
 */
export function chooseMatmulConfig(m: number, n: number, profile: DeviceProfile, batches = 1, dtype: DType = "f32"): MatmulConfig {
  const fitting = MATMUL_CONFIGS.filter((c) => configFits(c, profile));
  const reference = fitting[0];
  invariant(reference !== undefined, "the simple matmul configuration fits every device");
  if (m * n < 64 * 64) return reference;
  if (dtype === "bool") {
    const tiled = fitting.filter((c) => c.kind === "tiled" && m >= c.wy * c.rm && n >= c.wx * c.rn);
    return tiled[tiled.length - 1] ?? reference;
  }
  const vec4 = fitting.filter((c) => c.kind === "vec4" && splitOf(c) === 1);
  const groups = (c: MatmulConfig): number => {
    const [tm, tn] = configTile(c);
    return Math.ceil(m / tm) * Math.ceil(n / tn) * batches;
  };
  const area = (c: MatmulConfig): number => configTile(c)[0] * configTile(c)[1];
  const inside = vec4.filter((c) => m >= configTile(c)[0] && n >= configTile(c)[1]);
  const filling = inside.filter((c) => groups(c) >= MATMUL_MIN_WORKGROUPS);
  let best: MatmulConfig | undefined;
  for (const c of filling) if (best === undefined || area(c) >= area(best)) best = c;
  if (best !== undefined) return best;
  for (const c of inside) if (best === undefined || groups(c) >= groups(best)) best = c;
  return best ?? vec4[0] ?? reference;
}

/**
 * What a {@link MatmulChooser} picks for one product: its tile configuration, and — when that is a
 * tuner's winner other than the heuristic's pick — the heuristic's, to stand in while the winner's
 * kernels compile.
 */
export interface MatmulChoice {
  readonly config: MatmulConfig;
  /**
   * Launched instead of `config` while a kernel of `config` for this block is still compiling and
   * every kernel of `standIn` is ready (see {@link runMatmulBlock}, "A winner never stalls").
   */
  readonly standIn?: MatmulConfig;
}

/**
 * Picks the tile configuration of a product from its operands (the runtime's: the tuner's winner,
 * else the heuristic), and says when its answers may change.
 */
export interface MatmulChooser {
  /** The choice for `lhs · rhs`; called synchronously, at most once per matmul execution. */
  choose(lhs: WebGpuHandle, rhs: WebGpuHandle, dtype: DType, outShape: readonly number[]): MatmulChoice;
  /**
   * A number that changes whenever {@link choose} may answer differently for operands of the same
   * layouts (a tuning result stored, loaded or cleared): while it stays the same, a choice made
   * earlier still stands, so the launch cache (`MatmulLaunchCache`) replays it without
   * asking again.
   */
  readonly generation: number;
}

/** The heuristic as a {@link MatmulChooser}: {@link chooseMatmulConfig}, answers that never change. */
export function heuristicChooser(profile: DeviceProfile): MatmulChooser {
  return {
    choose: (_lhs, _rhs, dtype, outShape) => {
      const rank = outShape.length;
      return { config: chooseMatmulConfig(outShape[rank - 2] ?? 1, outShape[rank - 1] ?? 1, profile, elementCount(outShape.slice(0, -2)), dtype) };
    },
    generation: 0,
  };
}

/**
 * The spec to launch for `choice` and its kernel plans: its config's, unless a kernel of it is
 * still compiling and its stand-in's are all ready.
 */
function readySpec(launcher: Launcher, choice: MatmulChoice, specOf: (config: MatmulConfig) => MatmulSpec): { spec: MatmulSpec; plans: KernelLaunchPlan[] } {
  const plan = (key: string, build: () => KernelLaunchPlan): KernelLaunchPlan => launcher.plan(key, build);
  const spec = specOf(choice.config);
  const plans = matmulPlans(spec, launcher.profile, plan);
  if (choice.standIn === undefined) return { spec, plans };
  // Every kernel of the winner is asked, so each one's compile has started when this returns; the
  // stand-in's are only looked up (never compiled for this: it stands in only where it is ready).
  const ready = (p: readonly KernelLaunchPlan[], compile: boolean): boolean => p.map((k) => launcher.ready(k, compile)).every((r) => r);
  if (ready(plans, true)) return { spec, plans };
  const standIn = specOf(choice.standIn);
  const standInPlans = matmulPlans(standIn, launcher.profile, plan);
  return ready(standInPlans, false) ? { spec: standIn, plans: standInPlans } : { spec, plans };
}

/**
 * What one execution of a matmul block decided, enough to replay its launch for operands of the
 * same layouts without rebuilding the epilogue graph, the spec, its kernel keys or plans
 * ({@link MatmulLaunchCache}).
 */
export interface MatmulDecision {
  /** The chooser's generation the choice was made under (replayed only while it holds). */
  readonly generation: number;
  /** The kernels launched, in launch order (see {@link matmulPlans}), and their keys. */
  readonly plans: readonly KernelLaunchPlan[];
  readonly keys: readonly string[];
  /** The split-K factor of the launched config (1: no split) and the output's element count. */
  readonly split: number;
  readonly total: number;
  /** The dtypes of the epilogue's parameters, in {@link pushParams} order of its operations. */
  readonly paramDtypes: readonly DType[];
}

/**
 * Whether the epilogue graph's parameters are the values {@link pushParams} lists for the block's
 * operations after the matmul, in that order (what a replay encodes instead of the graph's): true
 * by construction (`addElementwise` gives parameters in that order); checked before an execution
 * is remembered, so a graph that ever numbers them otherwise is simply not replayed.
 */
function paramsInOpOrder(epilogue: BlockGraph, ops: readonly OperationIr[]): boolean {
  const values: number[] = [];
  for (let i = 1; i < ops.length; i++) pushParams(ops[i] as OperationIr, values);
  const params = epilogue.graph.params;
  if (params.length !== values.length) return false;
  for (let k = 0; k < values.length; k++) if (!Object.is(params[k]?.value, values[k])) return false;
  return true;
}

/**
 * Runs `matmul` followed by an elementwise epilogue (and `drop`s) as one kernel, with the tile
 * configuration `choose` picks (default: {@link chooseMatmulConfig}); with a `cache` (one per fused
 * optimization), an execution whose operands have the layouts of an earlier one replays that
 * execution's decisions ({@link MatmulLaunchCache}).
 */
export function runMatmulBlock(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[], fused: boolean, choose?: MatmulChooser, cache?: MatmulLaunchCache): void {
  if (cache !== undefined) cache.run(launcher, ctx, ops, fused, choose);
  else runMatmulBlockUncached(launcher, ctx, ops, fused, choose, false);
}

/**
 * {@link runMatmulBlock} in full: builds the epilogue graph, chooses, looks the kernels up and
 * launches; with `decide` (a launch cache will keep it) returns what it decided, else — or when
 * the execution is not one to replay — `undefined`
 * (operands copied apart, nothing launched, or the stand-in launched while the winner compiles).
 *
 * @remarks
 * **A winner never stalls.** When the tuner's winner arrives, the fused kernels that use it (the
 * product with this block's epilogue) have never been compiled: launched at once, every request
 * of that model would wait behind their compile — on the H200 (Dawn/Vulkan, 2026-11-30) a
 * `matmul+add+gelu` pipeline took 132–142 ms, and the 32 requests in flight of the serving
 * workload's first round after its tunings all took ~160 ms (p99 161 ms, against 24–26 ms in the
 * rounds after). So a choice with a `standIn` launches the stand-in's kernels while any kernel of
 * the winner is not ready (`Launcher.ready` starts its compile) and all of the stand-in's are;
 * the winner takes over at the first execution after its compile. Both compute the same product
 * (bits may differ in the last place, as between any two tile configurations).
 */
export function runMatmulBlockUncached(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[], fused: boolean, choose: MatmulChooser | undefined, decide: boolean): MatmulDecision | undefined {
  const matmul = ops[0];
  invariant(matmul !== undefined && matmul.kind === "matmul", "a matmul block starts with a matmul");
  const epilogue = new BlockGraph();
  epilogue.produce(matmul.out, "res");
  for (let i = 1; i < ops.length; i++) invariant(epilogue.add(ops[i] as OperationIr), () => `matmul epilogue cannot hold ${ops[i]?.kind}`);
  const written = epilogue.written();
  const launches = elementCount(matmul.out.shape) > 0 && written.length > 0;
  // `x · xᵀ` (and an epilogue reading an operand) would bind one allocation twice: see distinctBindings.
  const bound = distinctBindings(
    launcher,
    [ctx.handles.getHandle(matmul.lhs), ctx.handles.getHandle(matmul.rhs), ...epilogue.inputs.map((i) => ctx.handles.getHandle(i.tensor))],
    ctx.stream,
    [],
    launches,
  );
  const [lhs, rhs, ...eHandles] = bound.handles;
  invariant(lhs !== undefined && rhs !== undefined, "a matmul binds both operands");
  if (fused) launcher.counters.elidedWrites += epilogue.elided();
  const outHandles = written.map((o) => contiguousHandle(launcher.empty(bytesOf(o.tensor.shape, o.tensor.dtype), ctx.stream), o.tensor.shape, o.tensor.dtype));
  const shape = matmul.out.shape;
  let decision: MatmulDecision | undefined;
  if (launches) {
    const chooser = choose ?? heuristicChooser(launcher.profile);
    const generation = chooser.generation;
    const choice = chooser.choose(lhs, rhs, matmul.out.dtype, shape);
    const specOf = (config: MatmulConfig): MatmulSpec => ({
      lhs: { shape: lhs.shape, strides: lhs.strides, offset: lhs.offset },
      rhs: { shape: rhs.shape, strides: rhs.strides, offset: rhs.offset },
      dtype: matmul.out.dtype,
      outShape: shape,
      config,
      epilogue: { graph: epilogue.graph, inputs: blockInputs(epilogue, eHandles), outputs: written.map((o) => ({ node: o.node, dtype: o.tensor.dtype })) },
      label: ops.filter((o) => o.kind !== "drop").map((o) => (o.kind === "unary" || o.kind === "binary" || o.kind === "binary-scalar" ? o.op : o.kind)).join("+"),
    });
    const { spec, plans } = readySpec(launcher, choice, specOf);
    const run = {
      plan: (key: string, build: () => KernelLaunchPlan) => launcher.plan(key, build),
      launch: (plan: KernelLaunchPlan, bindings: readonly KernelBinding[], uniforms: Uint8Array | undefined) => launcher.launch(plan, bindings, ctx.stream, uniforms),
      empty: (bytes: number) => launcher.empty(bytes, ctx.stream),
    };
    launchMatmul(spec, launcher.profile, run, bindingOf(lhs, "read"), bindingOf(rhs, "read"), eHandles.map((h) => bindingOf(h, "read")), outHandles.map((h) => bindingOf(h, "write")), plans);
    if (fused && ops.filter((o) => o.kind !== "drop").length > 1) launcher.counters.fusedLaunches++;
    if (decide && bound.copied.size === 0 && spec.config === choice.config && paramsInOpOrder(epilogue, ops)) {
      decision = {
        generation,
        plans,
        keys: plans.map((p) => p.kernel.key),
        split: splitOf(spec.config),
        total: elementCount(shape),
        paramDtypes: epilogue.graph.params.map((p) => p.dtype),
      };
    }
  } else {
    // No output element: the outputs are still computed from the operands (see propagate).
    launcher.propagate(bound.handles.map((h) => h.memory), outHandles.map((h) => h.memory), ctx.stream);
  }
  bound.release();
  written.forEach((o, k) => {
    const h = outHandles[k];
    if (h !== undefined) ctx.handles.registerHandle(o.tensor.id, h);
  });
  if (matmul.lhs.status === "ReadWrite") ctx.handles.removeHandle(matmul.lhs.id);
  if (matmul.rhs.status === "ReadWrite") ctx.handles.removeHandle(matmul.rhs.id);
  for (const input of epilogue.inputs) if (input.dies) ctx.handles.removeHandle(input.tensor.id);
  for (const op of ops) if (op.kind === "drop") ctx.handles.removeHandle(op.tensor.id);
  return decision;
}

/**
 * What a fused matmul-chain execution launched, enough to replay it for operands of the same
 * layouts (`MatmulChainLaunchCache`): its kernel plan and key, and the dtypes of the epilogues'
 * parameters in {@link pushParams} order of the layers' ops, layer by layer.
 */
export interface MatmulChainDecision {
  readonly plan: KernelLaunchPlan;
  readonly key: string;
  readonly paramDtypes: readonly DType[];
}

/**
 * Where a matmul chain's parts start in its block: `starts[l]` is layer `l`'s matmul, `at` the
 * softmax's `max` (`-1`: no softmax). Layer `l`'s epilogue is the ops between `starts[l]` and the
 * next start (or `at`, or the end) that are not `drop`s.
 */
export interface ChainLayout {
  readonly starts: readonly number[];
  readonly at: number;
}

/** The {@link ChainLayout} of a matmul-chain block: its matmuls, and its first reduction after the last one. */
export function chainLayout(ops: readonly OperationIr[]): ChainLayout {
  const starts: number[] = [];
  let at = -1;
  ops.forEach((op, i) => {
    if (op.kind === "matmul") starts.push(i);
    else if (op.kind === "reduce" && at < 0) at = i;
  });
  return { starts, at };
}

/** The end (exclusive) of layer `l`'s ops in `layout`. */
export function layerEnd(layout: ChainLayout, l: number, length: number): number {
  return layout.starts[l + 1] ?? (layout.at >= 0 ? layout.at : length);
}

/**
 * The epilogue graphs of a matmul chain, one per layer: the layer's product as the value `res`,
 * its epilogue ops, and every `drop` of the block (for write elision); `undefined` when an op is
 * not an expression.
 */
export function matmulChainEpilogues(ops: readonly OperationIr[], layout: ChainLayout): BlockGraph[] | undefined {
  const graphs: BlockGraph[] = [];
  for (let l = 0; l < layout.starts.length; l++) {
    const start = layout.starts[l] as number;
    const matmul = ops[start];
    invariant(matmul !== undefined && matmul.kind === "matmul", "a matmul chain's layer starts with a matmul");
    const graph = new BlockGraph();
    graph.produce(matmul.out, "res");
    const end = layerEnd(layout, l, ops.length);
    for (let i = start + 1; i < end; i++) {
      const op = ops[i] as OperationIr;
      if (op.kind !== "drop" && !graph.add(op)) return undefined;
    }
    for (const op of ops) if (op.kind === "drop") graph.add(op);
    graphs.push(graph);
  }
  return graphs;
}

/**
 * The index in `ops` of the op producing a matmul chain's output (its only written tensor): the
 * softmax's `div`, or the last layer's value (the one product of its epilogue still used after the
 * block); `-1` when there is none (`graphs` from {@link matmulChainEpilogues}).
 */
export function chainOutput(ops: readonly OperationIr[], layout: ChainLayout, graphs: readonly BlockGraph[] | undefined): number {
  if (layout.at >= 0) {
    let div = -1;
    for (let i = layout.at; i < ops.length; i++) {
      const op = ops[i];
      if (op?.kind === "binary" && op.op === "div") div = i;
    }
    return div;
  }
  const written = graphs?.[graphs.length - 1]?.written();
  if (written?.length !== 1) return -1;
  const id = (written[0] as { tensor: { id: number } }).tensor.id;
  return ops.findIndex((o) => o.kind !== "drop" && o.out.id === id);
}

/**
 * Removes from `handles` what a fused matmul chain's `drop`s leave behind, as its ops would have:
 * every dropped tensor, and the softmax's input where its last use is in the block
 * (`retireSoftmaxBlock`). What its runner and its replay both do once `y` is registered.
 */
export function retireChainDrops(ops: readonly OperationIr[], layout: ChainLayout, handles: HandleContainer<WebGpuHandle>): void {
  const end = layout.at >= 0 ? layout.at : ops.length;
  for (let i = 0; i < end; i++) {
    const op = ops[i] as OperationIr;
    if (op.kind === "drop") handles.removeHandle(op.tensor.id);
  }
  if (layout.at >= 0) retireSoftmaxBlock(ops.slice(layout.at), handles);
}

/**
 * Runs a matmul chain — layers of a matmul and its epilogue, each matmul's left operand the
 * previous layer's value, optionally `Tensor.softmax`'s ops on the last one, `drop`s anywhere
 * (`layout`) — as one kernel (`matmulChainKernel`) when it fits (`matmulChainFits`), is not empty,
 * and writes nothing but its output: each layer's value (the next layer's left operand, or the
 * softmax's input) dies in the block, no other product is still used after it, no layer reads an
 * earlier layer's products. Returns `undefined`, having done nothing, otherwise (the caller then
 * runs its parts as separate blocks); else what a replay needs (`replay`), unless the execution
 * is not one to replay (operands copied apart).
 */
export function runMatmulChainBlock(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[], layout: ChainLayout): { readonly replay: MatmulChainDecision | undefined } | undefined {
  const matmuls = layout.starts.map((i) => ops[i] as Extract<OperationIr, { kind: "matmul" }>);
  const first = matmuls[0];
  invariant(first !== undefined && first.kind === "matmul", "a matmul chain starts with a matmul");
  const softmax = layout.at >= 0 ? softmaxEnds(ops.slice(layout.at)) : undefined;
  const rows = first.out.shape.slice(0, -1);
  for (const mm of matmuls) if (mm.out.dtype !== "f32" || mm.out.shape.length !== rows.length + 1 || mm.out.shape.slice(0, -1).some((d, i) => d !== rows[i])) return undefined;
  const lhsHandle = ctx.handles.getHandle(first.lhs);
  const ks = [lhsHandle.shape[lhsHandle.shape.length - 1] ?? 0, ...matmuls.slice(1).map((mm) => mm.lhs.shape[mm.lhs.shape.length - 1] ?? 0)];
  const ns = matmuls.map((mm) => mm.out.shape[mm.out.shape.length - 1] ?? 0);
  if (elementCount(first.out.shape) === 0 || !matmulChainFits(elementCount(rows), ks, ns, launcher.profile)) return undefined;
  const graphs = matmulChainEpilogues(ops, layout);
  if (graphs === undefined) return undefined;
  // Every product of the block, and the value of each layer (what the next part reads).
  const produced = new Set<number>();
  for (const g of graphs) for (const o of g.outputs) produced.add(o.tensor.id);
  const xs: number[] = [];
  for (let l = 0; l < graphs.length; l++) {
    const graph = graphs[l] as BlockGraph;
    if (graph.inputs.some((i) => produced.has(i.tensor.id))) return undefined;
    const next = matmuls[l + 1];
    const nextRhs = next?.rhs.id;
    if (nextRhs !== undefined && produced.has(nextRhs)) return undefined;
    const written = graph.written();
    const valueId = next !== undefined ? next.lhs.id : softmax !== undefined ? softmax.max.input.id : written[0]?.tensor.id;
    const x = graph.outputs.find((o) => o.tensor.id === valueId);
    if (x === undefined || x.tensor.dtype !== "f32") return undefined;
    // Only the value may still be alive after its layer's epilogue, and only where a later part consumes it.
    if (written.some((o) => o.tensor.id !== valueId)) return undefined;
    if (next !== undefined && written.length > 0 && next.lhs.status !== "ReadWrite") return undefined;
    if (next === undefined && softmax === undefined && written.length !== 1) return undefined;
    xs.push(x.node);
  }
  const inputHandles = graphs.flatMap((g) => g.inputs.map((i) => ctx.handles.getHandle(i.tensor)));
  // One binding per role (a tensor used twice — a weight in two layers, `x · xᵀ` — is bound, and
  // copied, twice), the output's too: past the device's storage buffers, the parts.
  if (2 + matmuls.length + inputHandles.length > launcher.profile.maxStorageBuffers) return undefined;
  const bound = distinctBindings(launcher, [lhsHandle, ...matmuls.map((mm) => ctx.handles.getHandle(mm.rhs)), ...inputHandles], ctx.stream);
  const [lhs, ...rest] = bound.handles;
  invariant(lhs !== undefined, "a matmul chain binds its first operand");
  const rhs = rest.slice(0, matmuls.length);
  let at = matmuls.length;
  const spec: MatmulChainSpec = {
    lhs: { shape: lhs.shape, strides: lhs.strides, offset: lhs.offset },
    layers: graphs.map((graph, l) => {
      const r = rhs[l] as WebGpuHandle;
      const eHandles = rest.slice(at, at + graph.inputs.length);
      at += graph.inputs.length;
      return { rhs: { shape: r.shape, strides: r.strides, offset: r.offset }, epilogue: { graph: graph.graph, inputs: blockInputs(graph, eHandles), x: xs[l] as number } };
    }),
    batchShape: rows.slice(0, -1),
    m: rows[rows.length - 1] ?? 1,
    softmax: softmax !== undefined,
  };
  const producer = ops[chainOutput(ops, layout, graphs)];
  invariant(producer !== undefined && producer.kind !== "drop", "a matmul chain writes its output");
  const out = producer.out;
  const key = matmulChainKey(spec, launcher.profile);
  const plan = launcher.plan(key, () => matmulChainKernel(spec, launcher.profile, key));
  const y = contiguousHandle(launcher.empty(bytesOf(out.shape, "f32"), ctx.stream), out.shape, "f32");
  launcher.launch(plan, [...bound.handles.map((h) => bindingOf(h, "read")), bindingOf(y, "write")], ctx.stream, matmulChainUniforms(spec));
  launcher.counters.fusedLaunches++;
  // Every product of every layer but the written one, and the softmax's four intermediates.
  launcher.counters.elidedWrites += produced.size + (softmax !== undefined ? 4 : -1);
  const copied = bound.copied.size > 0;
  bound.release();
  ctx.handles.registerHandle(out.id, y);
  if (first.lhs.status === "ReadWrite") ctx.handles.removeHandle(first.lhs.id);
  for (const mm of matmuls) if (mm.rhs.status === "ReadWrite") ctx.handles.removeHandle(mm.rhs.id);
  for (const g of graphs) for (const input of g.inputs) if (input.dies) ctx.handles.removeHandle(input.tensor.id);
  retireChainDrops(ops, layout, ctx.handles);
  const replayable = !copied && graphs.every((g, l) => paramsInOpOrder(g, ops.slice(layout.starts[l], layerEnd(layout, l, ops.length))));
  return { replay: replayable ? { plan, key, paramDtypes: graphs.flatMap((g) => g.graph.params.map((p) => p.dtype)) } : undefined };
}
