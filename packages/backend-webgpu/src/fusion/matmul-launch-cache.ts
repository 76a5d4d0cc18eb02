import type { ExecutionContext, OperationIr } from "@weft/fusion";
import type { StreamId } from "@weft/environment";
import type { KernelBinding, MemoryHandle } from "@weft/server";
import { encodeParamValues } from "../codegen/wgsl/params.js";
import type { WebGpuHandle } from "../handle/webgpu-handle.js";
import { launchMatmulPlans, type MatmulRunner } from "../kernels/matmul.js";
import type { KernelLaunchPlan } from "../kernels/elementwise.js";
import { BlockGraph } from "./block-graph.js";
import { pushParams } from "./elementwise-ops.js";
import type { Launcher } from "./launcher.js";
import { denseOutputs, type InputLocator, locateBlock, pushLayout, pushOutputShapes, sharesAllocation, SignatureEntries } from "./launch-signature.js";
import { locateTensor, producedAt, sameKinds, locatedTensor, type TensorLocator } from "@weft/fusion";
import { runMatmulBlockUncached, type MatmulChooser, type MatmulDecision } from "./run-matmul.js";
import { bindingOf } from "./run-elementwise.js";

/** Most layout signatures one {@link MatmulLaunchCache} keeps (oldest dropped first). */
export const MAX_MATMUL_LAUNCH_ENTRIES = 8;

/**
 * What never changes between executions of one matmul optimization (derived from the first one's
 * operations: every execution of a cached plan has the same relative structure).
 */
interface MatmulStructure {
  /** The op kinds, checked on every execution (a cheap guard against a foreign block). */
  readonly kinds: readonly OperationIr["kind"][];
  readonly lhs: TensorLocator;
  readonly rhs: TensorLocator;
  /** Whether the operands die in the block (status `ReadWrite`: their handles are removed). */
  readonly lhsDies: boolean;
  readonly rhsDies: boolean;
  /** The epilogue's inputs (besides the product), with whether each dies in the block. */
  readonly inputs: readonly InputLocator[];
  /** Op index of each written output, in the epilogue's order (the product first when written). */
  readonly written: readonly number[];
  /** Produced tensors never written (write elision). */
  readonly elided: number;
  /** Number of producing (non-`drop`) operations. */
  readonly producing: number;
}

/**
 * The per-optimization memory of fused matmul launches (a matmul and its elementwise epilogue):
 * when a cached plan executes again with operands of the same layouts, the launch replays what
 * the first such execution decided — the tile configuration, the kernel plans and their keys —
 * instead of building the epilogue graph, asking the tuner, deriving the spec and its keys again.
 * A served model runs the same few matmul blocks on every request; this is their steady state.
 *
 * @remarks
 * **Signature.** A flat list of numbers compared element by element: every op's output shape and
 * the layout (shape, strides, offset) of both operands and of every epilogue input. With the
 * structure (fixed per plan: kinds, dtypes, statuses) these are everything the kernel keys and the
 * chooser's answer depend on. The epilogue's values (scalars, clamp bounds, …) are uniforms,
 * collected from each execution's operations ({@link pushParams}).
 * **The tuner.** A decision holds while the chooser's {@link MatmulChooser.generation} is the one
 * it was made under: a tuning result that lands (or a cleared cache) sends the next execution down
 * the full path, which asks again. Executions that launched the heuristic's stand-in while the
 * winner compiles are not remembered, so the winner takes over as soon as it is ready.
 * **Not replayed.** Executions where two bound tensors share an allocation (`x · xᵀ`: they need
 * temporary copies), with no output element, or whose op kinds differ from the first one's always
 * take the full path.
 * **Bounded by** {@link MAX_MATMUL_LAUNCH_ENTRIES} signatures (oldest dropped first).
 * **Invariant.** A replayed launch binds, allocates, registers and frees exactly what the full path
 * would for the same operations and handles, and counts the same counters.
 */
export class MatmulLaunchCache {
  #structure: MatmulStructure | null | undefined;
  readonly #entries = new SignatureEntries<MatmulDecision>(MAX_MATMUL_LAUNCH_ENTRIES);
  /** Scratch: this execution's epilogue values and output handles (emptied after each use). */
  readonly #params: number[] = [];

  /** Number of layout signatures held (tests). */
  get size(): number {
    return this.#entries.size;
  }

  /** Runs the block: replays a matching earlier execution, else runs it in full and remembers it. */
  run(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[], fused: boolean, choose: MatmulChooser | undefined): void {
    const structure = this.#structureOf(ops);
    if (structure === undefined) {
      runMatmulBlockUncached(launcher, ctx, ops, fused, choose, false);
      return;
    }
    const handles = this.#entries.handles;
    const signature = this.#entries.signature;
    try {
      handles.length = 0;
      handles.push(ctx.handles.getHandle(locatedTensor(ops, structure.lhs)), ctx.handles.getHandle(locatedTensor(ops, structure.rhs)));
      for (const input of structure.inputs) handles.push(ctx.handles.getHandle(locatedTensor(ops, input)));
      const replayable = buildSignature(ops, handles, signature);
      const entry = replayable ? this.#entries.find(signature) : undefined;
      if (entry !== undefined && entry.generation === (choose?.generation ?? 0)) {
        replay(launcher, ctx, ops, fused, structure, entry, handles, this.#params);
        return;
      }
      handles.length = 0;
      const decision = runMatmulBlockUncached(launcher, ctx, ops, fused, choose, replayable);
      if (replayable && decision !== undefined && this.#entries.remember(signature, decision)) launcher.counters.launchCacheEvictions++;
    } finally {
      handles.length = 0;
      this.#params.length = 0;
    }
  }

  /** The structure of `ops` (derived on first use), or `undefined` when `ops` does not match it or cannot be located. */
  #structureOf(ops: readonly OperationIr[]): MatmulStructure | undefined {
    const known = this.#structure;
    if (known === null) return undefined;
    if (known !== undefined) return sameKinds(known.kinds, ops) ? known : undefined;
    const structure = analyse(ops);
    this.#structure = structure ?? null;
    return structure;
  }
}

/** Derives the {@link MatmulStructure} of `ops` (a matmul, then its epilogue and drops). */
function analyse(ops: readonly OperationIr[]): MatmulStructure | undefined {
  const matmul = ops[0];
  if (matmul === undefined || matmul.kind !== "matmul") return undefined;
  const epilogue = new BlockGraph();
  epilogue.produce(matmul.out, "res");
  for (let i = 1; i < ops.length; i++) if (!epilogue.add(ops[i] as OperationIr)) return undefined;
  const located = locateBlock(ops, epilogue.inputs, epilogue.written());
  const lhs = locateTensor(ops, matmul.lhs.id);
  const rhs = locateTensor(ops, matmul.rhs.id);
  if (located === undefined || lhs === undefined || rhs === undefined || lhs.op !== 0 || rhs.op !== 0) return undefined;
  return {
    kinds: ops.map((o) => o.kind),
    lhs,
    rhs,
    lhsDies: matmul.lhs.status === "ReadWrite",
    rhsDies: matmul.rhs.status === "ReadWrite",
    inputs: located.inputs,
    written: located.written,
    elided: epilogue.elided(),
    producing: ops.filter((o) => o.kind !== "drop").length,
  };
}

/**
 * Writes the layout signature of one execution into `out` (see {@link MatmulLaunchCache}).
 * Returns false when two bound tensors share an allocation (never replayed).
 */
function buildSignature(ops: readonly OperationIr[], handles: readonly WebGpuHandle[], out: number[]): boolean {
  out.length = 0;
  if (sharesAllocation(handles)) return false;
  pushOutputShapes(out, ops);
  for (const h of handles) pushLayout(out, h);
  return true;
}

/** `launcher` on one stream, as {@link launchMatmulPlans} runs it (a class, not a literal: one per replay, see `plans` below). */
class StreamRunner implements MatmulRunner {
  constructor(
    readonly launcher: Launcher,
    readonly stream: StreamId,
  ) {}

  plan(key: string, build: () => KernelLaunchPlan): KernelLaunchPlan {
    return this.launcher.plan(key, build);
  }

  launch(plan: KernelLaunchPlan, bindings: readonly KernelBinding[], uniforms: Uint8Array | undefined): void {
    this.launcher.launch(plan, bindings, this.stream, uniforms);
  }

  empty(bytes: number): MemoryHandle {
    return this.launcher.empty(bytes, this.stream);
  }
}

/** Replays `entry`'s launch for this execution's tensors and `handles` (what the full path would do). */
function replay(
  launcher: Launcher,
  ctx: ExecutionContext<WebGpuHandle>,
  ops: readonly OperationIr[],
  fused: boolean,
  structure: MatmulStructure,
  entry: MatmulDecision,
  handles: readonly WebGpuHandle[],
  params: number[],
): void {
  if (fused) launcher.counters.elidedWrites += structure.elided;
  const written = structure.written;
  const outs = denseOutputs(launcher, ctx.stream, ops, written);
  // `Array.of` and classes, not literals, for what a replay builds (docs/performance.md#allocation-sites).
  const plans = Array.of<KernelLaunchPlan>();
  for (let k = 0; k < entry.plans.length; k++) {
    const built = entry.plans[k] as KernelLaunchPlan;
    plans.push(launcher.plan(entry.keys[k] as string, () => built));
  }
  for (let i = 1; i < ops.length; i++) pushParams(ops[i] as OperationIr, params);
  const inputs = Array.of<KernelBinding>();
  for (let k = 2; k < handles.length; k++) inputs.push(bindingOf(handles[k] as WebGpuHandle, "read"));
  const outputs = Array.of<KernelBinding>();
  for (const h of outs) outputs.push(bindingOf(h, "write"));
  const stream = ctx.stream;
  const run = new StreamRunner(launcher, stream);
  const [lhs, rhs] = handles as [WebGpuHandle, WebGpuHandle];
  launchMatmulPlans(plans, entry.split, entry.total, run, bindingOf(lhs, "read"), bindingOf(rhs, "read"), inputs, outputs, encodeParamValues(params, entry.paramDtypes));
  if (fused && structure.producing > 1) launcher.counters.fusedLaunches++;
  for (let j = 0; j < written.length; j++) ctx.handles.registerHandle(producedAt(ops, written[j] as number).id, outs[j] as WebGpuHandle);
  if (structure.lhsDies) ctx.handles.removeHandle(locatedTensor(ops, structure.lhs).id);
  if (structure.rhsDies) ctx.handles.removeHandle(locatedTensor(ops, structure.rhs).id);
  for (const input of structure.inputs) if (input.dies) ctx.handles.removeHandle(locatedTensor(ops, input).id);
  for (const op of ops) if (op.kind === "drop") ctx.handles.removeHandle(op.tensor.id);
}
