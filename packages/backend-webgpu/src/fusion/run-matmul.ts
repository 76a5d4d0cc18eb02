import { invariant } from "@weft/environment";
import type { DType, ExecutionContext, OperationIr } from "@weft/fusion";
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
import { matmulSoftmaxFits, matmulSoftmaxKernel, matmulSoftmaxKey, matmulSoftmaxUniforms, type MatmulSoftmaxSpec } from "../kernels/matmul-softmax.js";

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
 * What a fused matmul+softmax execution launched, enough to replay it for operands of the same
 * layouts (`MatmulSoftmaxLaunchCache`): its kernel plan and key, and the dtypes of the epilogue's
 * parameters in {@link pushParams} order of the operations before the softmax.
 */
export interface MatmulSoftmaxDecision {
  readonly plan: KernelLaunchPlan;
  readonly key: string;
  readonly paramDtypes: readonly DType[];
}

/**
 * Runs a matmul+softmax block — `ops[0]` the matmul, its epilogue (and `drop`s) before `ops[at]`,
 * the softmax's `max`, then the rest of `Tensor.softmax`'s ops and `drop`s — as one kernel
 * (`matmulSoftmaxKernel`) when the product fits it (`matmulSoftmaxFits`), is not empty, and the
 * epilogue writes nothing but the softmax's input. Returns `undefined`, having done nothing,
 * otherwise (the caller then runs the matmul block and the softmax block); else what a replay
 * needs (`replay`), unless the execution is not one to replay (operands copied apart).
 */
export function runMatmulSoftmaxBlock(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[], at: number): { readonly replay: MatmulSoftmaxDecision | undefined } | undefined {
  const matmul = ops[0];
  invariant(matmul !== undefined && matmul.kind === "matmul", "a matmul+softmax block starts with a matmul");
  const softmax = ops.slice(at);
  const { max, div } = softmaxEnds(softmax);
  const shape = matmul.out.shape;
  const lhsHandle = ctx.handles.getHandle(matmul.lhs);
  const k = lhsHandle.shape[lhsHandle.shape.length - 1] ?? 0;
  if (matmul.out.dtype !== "f32" || elementCount(shape) === 0 || !matmulSoftmaxFits(shape, k, launcher.profile)) return undefined;
  const epilogue = matmulSoftmaxEpilogue(ops, at);
  const x = epilogue?.outputs.find((o) => o.tensor.id === max.input.id);
  if (epilogue === undefined || x === undefined || x.tensor.dtype !== "f32" || epilogue.written().some((o) => o.tensor.id !== max.input.id)) return undefined;
  const bound = distinctBindings(launcher, [lhsHandle, ctx.handles.getHandle(matmul.rhs), ...epilogue.inputs.map((i) => ctx.handles.getHandle(i.tensor))], ctx.stream);
  const [lhs, rhs, ...eHandles] = bound.handles;
  invariant(lhs !== undefined && rhs !== undefined, "a matmul binds both operands");
  const spec: MatmulSoftmaxSpec = {
    lhs: { shape: lhs.shape, strides: lhs.strides, offset: lhs.offset },
    rhs: { shape: rhs.shape, strides: rhs.strides, offset: rhs.offset },
    outShape: shape,
    epilogue: { graph: epilogue.graph, inputs: blockInputs(epilogue, eHandles), x: x.node },
  };
  const key = matmulSoftmaxKey(spec, launcher.profile);
  const plan = launcher.plan(key, () => matmulSoftmaxKernel(spec, launcher.profile, key));
  const y = contiguousHandle(launcher.empty(bytesOf(div.out.shape, "f32"), ctx.stream), div.out.shape, "f32");
  launcher.launch(plan, [bindingOf(lhs, "read"), bindingOf(rhs, "read"), ...eHandles.map((h) => bindingOf(h, "read")), bindingOf(y, "write")], ctx.stream, matmulSoftmaxUniforms(spec));
  launcher.counters.fusedLaunches++;
  // Every product of the matmul and its epilogue, and the softmax's four intermediates.
  launcher.counters.elidedWrites += epilogue.outputs.length + 4;
  const copied = bound.copied.size > 0;
  bound.release();
  ctx.handles.registerHandle(div.out.id, y);
  if (matmul.lhs.status === "ReadWrite") ctx.handles.removeHandle(matmul.lhs.id);
  if (matmul.rhs.status === "ReadWrite") ctx.handles.removeHandle(matmul.rhs.id);
  for (const input of epilogue.inputs) if (input.dies) ctx.handles.removeHandle(input.tensor.id);
  for (let i = 0; i < at; i++) {
    const op = ops[i] as OperationIr;
    if (op.kind === "drop") ctx.handles.removeHandle(op.tensor.id);
  }
  retireSoftmaxBlock(softmax, ctx.handles);
  const replayable = !copied && paramsInOpOrder(epilogue, ops.slice(0, at));
  return { replay: replayable ? { plan, key, paramDtypes: epilogue.graph.params.map((p) => p.dtype) } : undefined };
}

/**
 * The epilogue graph of a matmul+softmax block: the product as the value `res`, the operations
 * between the matmul and the softmax's `max` (at `at`), and every `drop` of the block (for write
 * elision); `undefined` when an operation before the softmax is not an expression.
 */
export function matmulSoftmaxEpilogue(ops: readonly OperationIr[], at: number): BlockGraph | undefined {
  const matmul = ops[0];
  invariant(matmul !== undefined && matmul.kind === "matmul", "a matmul+softmax block starts with a matmul");
  const epilogue = new BlockGraph();
  epilogue.produce(matmul.out, "res");
  for (let i = 1; i < ops.length; i++) {
    const op = ops[i] as OperationIr;
    // The softmax's own ops are the kernel's template.
    if (i >= at && op.kind !== "drop") continue;
    if (!epilogue.add(op)) return undefined;
  }
  return epilogue;
}
