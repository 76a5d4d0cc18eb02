import type { ExecutionContext, OperationIr } from "@weft/fusion";
import { locatedTensor, locateTensor, producedAt, retireSoftmaxBlock, sameKinds, type TensorLocator } from "@weft/fusion";
import type { KernelBinding } from "@weft/server";
import { encodeParamValues } from "../codegen/wgsl/params.js";
import { contiguousHandle, type WebGpuHandle } from "../handle/webgpu-handle.js";
import { pushParams } from "./elementwise-ops.js";
import { type InputLocator, locateBlock, pushLayout, pushOutputShapes, sharesAllocation, SignatureEntries } from "./launch-signature.js";
import type { Launcher } from "./launcher.js";
import { MAX_MATMUL_LAUNCH_ENTRIES } from "./matmul-launch-cache.js";
import { bindingOf, bytesOf } from "./run-elementwise.js";
import { matmulSoftmaxEpilogue, runMatmulSoftmaxBlock, type MatmulSoftmaxDecision } from "./run-matmul.js";

/** What never changes between executions of one matmul+softmax optimization (see {@link MatmulSoftmaxLaunchCache}). */
interface MatmulSoftmaxStructure {
  /** The op kinds, checked on every execution (a cheap guard against a foreign block). */
  readonly kinds: readonly OperationIr["kind"][];
  /** Where the softmax starts (its `max`). */
  readonly at: number;
  readonly lhs: TensorLocator;
  readonly rhs: TensorLocator;
  readonly lhsDies: boolean;
  readonly rhsDies: boolean;
  /** The epilogue's inputs (besides the product), with whether each dies in the block. */
  readonly inputs: readonly InputLocator[];
  /** The index of the softmax's `div` (its output is the block's only written tensor). */
  readonly div: number;
  /** Products never written: every product of the matmul and its epilogue, and the softmax's four intermediates. */
  readonly elided: number;
}

/**
 * The per-optimization memory of fused matmul+softmax launches (`MatmulSoftmaxOptimization`):
 * an execution whose operands and epilogue inputs have the layouts of an earlier fused one
 * replays its kernel plan and key instead of building the epilogue graph, the spec and the key
 * again — a served classifier runs the same head on every request (docs/performance.md, "One
 * launch fewer per request").
 *
 * @remarks
 * **Signature.** Every op's output shape and the layout of both operands and of every epilogue
 * input, as `MatmulLaunchCache` keeps them; the epilogue's values are uniforms, collected from
 * each execution's operations before the softmax ({@link pushParams}). An execution that did not
 * run fused (the product did not fit) is never remembered, so its signature always takes the full
 * path, which decides again.
 * **Not replayed.** Executions where two bound tensors share an allocation (`x · xᵀ`), or whose op
 * kinds differ from the first one's.
 * **Bounded by** `MAX_MATMUL_LAUNCH_ENTRIES` signatures (oldest dropped first).
 * **Invariant.** A replayed launch binds, allocates, registers and frees exactly what
 * `runMatmulSoftmaxBlock` would for the same operations and handles, and counts the same counters.
 */
export class MatmulSoftmaxLaunchCache {
  #structure: MatmulSoftmaxStructure | null | undefined;
  readonly #entries = new SignatureEntries<MatmulSoftmaxDecision>(MAX_MATMUL_LAUNCH_ENTRIES);

  /** Number of layout signatures held (tests). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Runs the block as one kernel (replaying a matching earlier execution) when it fits; returns
   * false, having done nothing, otherwise (see `runMatmulSoftmaxBlock`).
   */
  run(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[], at: number): boolean {
    const structure = this.#structureOf(ops, at);
    if (structure === undefined) return runMatmulSoftmaxBlock(launcher, ctx, ops, at) !== undefined;
    const handles = this.#entries.handles;
    const signature = this.#entries.signature;
    const params = this.#entries.params;
    try {
      handles.length = 0;
      handles.push(ctx.handles.getHandle(locatedTensor(ops, structure.lhs)), ctx.handles.getHandle(locatedTensor(ops, structure.rhs)));
      for (const input of structure.inputs) handles.push(ctx.handles.getHandle(locatedTensor(ops, input)));
      signature.length = 0;
      const replayable = !sharesAllocation(handles);
      if (replayable) {
        pushOutputShapes(signature, ops);
        for (const h of handles) pushLayout(signature, h);
        const entry = this.#entries.find(signature);
        if (entry !== undefined) {
          replay(launcher, ctx, ops, structure, entry, handles, params);
          return true;
        }
      }
      handles.length = 0;
      const ran = runMatmulSoftmaxBlock(launcher, ctx, ops, at);
      if (ran === undefined) return false;
      if (replayable && ran.replay !== undefined && this.#entries.remember(signature, ran.replay)) launcher.counters.launchCacheEvictions++;
      return true;
    } finally {
      handles.length = 0;
      params.length = 0;
    }
  }

  /** The structure of `ops` (derived on first use), or `undefined` when `ops` does not match it or cannot be located. */
  #structureOf(ops: readonly OperationIr[], at: number): MatmulSoftmaxStructure | undefined {
    const known = this.#structure;
    if (known === null) return undefined;
    if (known !== undefined) return known.at === at && sameKinds(known.kinds, ops) ? known : undefined;
    const structure = analyse(ops, at);
    this.#structure = structure ?? null;
    return structure;
  }
}

/** Derives the {@link MatmulSoftmaxStructure} of `ops` (a matmul, its epilogue, the softmax from `at`, drops). */
function analyse(ops: readonly OperationIr[], at: number): MatmulSoftmaxStructure | undefined {
  const matmul = ops[0];
  if (matmul === undefined || matmul.kind !== "matmul") return undefined;
  const epilogue = matmulSoftmaxEpilogue(ops, at);
  const located = epilogue === undefined ? undefined : locateBlock(ops, epilogue.inputs, []);
  const lhs = locateTensor(ops, matmul.lhs.id);
  const rhs = locateTensor(ops, matmul.rhs.id);
  let div = -1;
  for (let i = at; i < ops.length; i++) {
    const op = ops[i];
    if (op?.kind === "binary" && op.op === "div") div = i;
  }
  if (epilogue === undefined || located === undefined || lhs === undefined || rhs === undefined || lhs.op !== 0 || rhs.op !== 0 || div < 0) return undefined;
  return {
    kinds: ops.map((o) => o.kind),
    at,
    lhs,
    rhs,
    lhsDies: matmul.lhs.status === "ReadWrite",
    rhsDies: matmul.rhs.status === "ReadWrite",
    inputs: located.inputs,
    div,
    elided: epilogue.outputs.length + 4,
  };
}

/** Replays `entry`'s launch for this execution's tensors and `handles` (what `runMatmulSoftmaxBlock` would do). */
function replay(
  launcher: Launcher,
  ctx: ExecutionContext<WebGpuHandle>,
  ops: readonly OperationIr[],
  structure: MatmulSoftmaxStructure,
  entry: MatmulSoftmaxDecision,
  handles: readonly WebGpuHandle[],
  params: number[],
): void {
  const stream = ctx.stream;
  const out = producedAt(ops, structure.div);
  const y = contiguousHandle(launcher.empty(bytesOf(out.shape, "f32"), stream), out.shape, "f32");
  const plan = launcher.plan(entry.key, () => entry.plan);
  for (let i = 1; i < structure.at; i++) pushParams(ops[i] as OperationIr, params);
  const bindings: KernelBinding[] = [];
  for (const h of handles) bindings.push(bindingOf(h, "read"));
  bindings.push(bindingOf(y, "write"));
  launcher.launch(plan, bindings, stream, encodeParamValues(params, entry.paramDtypes));
  launcher.counters.fusedLaunches++;
  launcher.counters.elidedWrites += structure.elided;
  ctx.handles.registerHandle(out.id, y);
  if (structure.lhsDies) ctx.handles.removeHandle(locatedTensor(ops, structure.lhs).id);
  if (structure.rhsDies) ctx.handles.removeHandle(locatedTensor(ops, structure.rhs).id);
  for (const input of structure.inputs) if (input.dies) ctx.handles.removeHandle(locatedTensor(ops, input).id);
  for (let i = 0; i < structure.at; i++) {
    const op = ops[i] as OperationIr;
    if (op.kind === "drop") ctx.handles.removeHandle(op.tensor.id);
  }
  retireSoftmaxBlock(ops.slice(structure.at), ctx.handles);
}
