import type { DType, ExecutionContext, OperationIr, ReduceOp } from "@weft/fusion";
import { kernelBinding, type KernelBinding, type MemoryHandle } from "@weft/server";
import { encodeParamValues } from "../codegen/wgsl/params.js";
import type { WebGpuHandle } from "../handle/webgpu-handle.js";
import { pushParams } from "./elementwise-ops.js";
import type { Launcher } from "./launcher.js";
import { denseOutputs, type InputLocator, locateBlock, pushDims, pushLayout, sharesAllocation, SignatureEntries } from "./launch-signature.js";
import { producedAt, sameKinds, locatedTensor } from "@weft/fusion";
import { bindingOf } from "./run-elementwise.js";
import { planReduceBlock, type ReduceDecision, runReduceBlockUncached } from "./run-reduce.js";

/** Most layout signatures one {@link ReduceLaunchCache} keeps (oldest dropped first). */
export const MAX_REDUCE_LAUNCH_ENTRIES = 8;

/**
 * What never changes between executions of one reduce optimization: derived once from the first
 * execution's operations ({@link planReduceBlock}), since every execution of a cached plan has the
 * same relative structure (kinds, op names, axes, dtypes, statuses, which positions name the same
 * tensor).
 */
interface ReduceStructure {
  /** The op kinds, checked on every execution (a cheap guard against a foreign block). */
  readonly kinds: readonly OperationIr["kind"][];
  /** The prologue's inputs, then the epilogue's, in binding order. */
  readonly inputs: readonly InputLocator[];
  /** How many of {@link inputs} are the prologue's. */
  readonly prologueInputs: number;
  /** Op index of each written output (the reduce's or an epilogue op's), in binding order. */
  readonly written: readonly number[];
  /** The reduce op's index. */
  readonly reduce: number;
  /** Produced tensors never written (prologue and epilogue). */
  readonly elided: number;
  /** Number of producing (non-`drop`) operations. */
  readonly producing: number;
}

/**
 * The per-optimization memory of fused reduce launches: when a cached plan executes again with
 * inputs of the same layouts, the launch replays what the first such execution decided — the
 * prologue and epilogue graphs, every pass's spec, key and generated plan, the partial buffers'
 * sizes and the uniform layout — instead of deriving them again (the steady-state host cost of a
 * reduction: ~120 µs per `x.sum()` on the H200 before, see docs/performance.md).
 *
 * @remarks
 * **Signature.** A flat list of numbers compared element by element: every producing op's output
 * shape and dtype, the reduce input's shape, axes, op and dtype, and per input (prologue's, then
 * epilogue's) its shape, strides, offset and dtype. Together with the structure (fixed per plan: op names, axes, dtypes, statuses) these
 * are everything a pass's key, its vectorisation, its chunk count and its dispatch depend on.
 * Values (scalars of the prologue and epilogue) are not part of it: they are the passes'
 * parameters, collected from each execution's operations ({@link pushParams}) and passed as
 * uniforms.
 * **Not replayed.** Executions where two inputs share an allocation (they need temporary copies),
 * executions that launch nothing (no output element), and executions whose op kinds differ from
 * the first one's always take the full path.
 * **Bounded by** {@link MAX_REDUCE_LAUNCH_ENTRIES} signatures (oldest dropped first); the structure
 * is one entry per optimization.
 * **Invariant.** A replayed launch allocates, binds, launches, registers and frees exactly what the
 * full path would for the same operations and handles, in the same order, and counts the same
 * counters (so error delivery through the block's fallback is unchanged).
 */
export class ReduceLaunchCache {
  /** Derived on the first execution; `null` when the block cannot be planned (never replayed). */
  #structure: ReduceStructure | null | undefined;
  /** Replayable executions by layout signature; at most {@link MAX_REDUCE_LAUNCH_ENTRIES}. */
  readonly #entries = new SignatureEntries<ReduceDecision>(MAX_REDUCE_LAUNCH_ENTRIES);
  /** Number of layout signatures held (tests). */
  get size(): number {
    return this.#entries.size;
  }

  /** Runs the block: replays a matching earlier execution, else runs it in full and remembers it. Returns false when it cannot be fused. */
  run(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[], fused: boolean): boolean {
    const structure = this.#structureOf(ops);
    if (structure === undefined) return runReduceBlockUncached(launcher, ctx, ops, fused) !== undefined;
    const handles = this.#entries.handles;
    const signature = this.#entries.signature;
    try {
      handles.length = 0;
      for (const input of structure.inputs) handles.push(ctx.handles.getHandle(locatedTensor(ops, input)));
      if (sharesAllocation(handles)) return runReduceBlockUncached(launcher, ctx, ops, fused) !== undefined;
      buildSignature(ops, structure, handles, signature);
      const entry = this.#entries.find(signature);
      if (entry === undefined) {
        handles.length = 0;
        const decision = runReduceBlockUncached(launcher, ctx, ops, fused);
        if (decision === undefined) return false;
        if (!decision.copied && decision.passes.length > 0 && this.#entries.remember(signature, decision)) launcher.counters.launchCacheEvictions++;
        return true;
      }
      const params = this.#entries.params;
      params.length = 0;
      for (const op of ops) pushParams(op, params);
      replay(launcher, ctx, ops, fused, structure, entry, handles, params);
      return true;
    } finally {
      handles.length = 0;
      this.#entries.params.length = 0;
    }
  }

  /** The structure of `ops` (derived on first use), or `undefined` when `ops` does not match it. */
  #structureOf(ops: readonly OperationIr[]): ReduceStructure | undefined {
    const known = this.#structure;
    if (known === null) return undefined;
    if (known !== undefined) {
      return sameKinds(known.kinds, ops) ? known : undefined;
    }
    const structure = analyse(ops);
    this.#structure = structure ?? null;
    return structure;
  }
}

/** Derives the {@link ReduceStructure} of `ops` from their prologue and epilogue graphs. */
function analyse(ops: readonly OperationIr[]): ReduceStructure | undefined {
  const planned = planReduceBlock(ops);
  if (planned === undefined) return undefined;
  const { prologue, epilogue } = planned;
  // As the full path does: the reduce input becomes a prologue input when no prologue op makes it.
  prologue.leaf(planned.reduce.input);
  const located = locateBlock(ops, [...prologue.inputs, ...epilogue.inputs], epilogue.written());
  if (located === undefined) return undefined;
  return {
    kinds: ops.map((o) => o.kind),
    inputs: located.inputs,
    prologueInputs: prologue.inputs.length,
    written: located.written,
    reduce: ops.indexOf(planned.reduce),
    elided: epilogue.elided() + prologue.elided(),
    producing: ops.filter((o) => o.kind !== "drop").length,
  };
}

/** Writes the layout signature of one execution into `out` (see {@link ReduceLaunchCache}). */
function buildSignature(ops: readonly OperationIr[], structure: ReduceStructure, handles: readonly WebGpuHandle[], out: number[]): void {
  out.length = 0;
  for (const op of ops) {
    if (op.kind === "drop") continue;
    pushDims(out, op.out.shape);
    out.push(DTYPE_CODE[op.out.dtype]);
  }
  // Structure the plan already fixes, kept as a guard (a foreign block with the same kinds misses).
  const reduce = ops[structure.reduce];
  if (reduce !== undefined && reduce.kind === "reduce") {
    pushDims(out, reduce.input.shape);
    pushDims(out, reduce.axes);
    out.push(REDUCE_CODE[reduce.op], DTYPE_CODE[reduce.input.dtype]);
  }
  for (const h of handles) {
    pushLayout(out, h);
    out.push(DTYPE_CODE[h.dtype]);
  }
}

/** Dtypes as signature numbers (distinct; the `Record` makes the table complete). */
const DTYPE_CODE: Readonly<Record<DType, number>> = { f32: 0, f16: 1, i32: 2, u32: 3, bool: 4 };
/** Reduce ops as signature numbers (distinct; the `Record` makes the table complete). */
const REDUCE_CODE: Readonly<Record<ReduceOp, number>> = { sum: 0, mean: 1, prod: 2, max: 3, min: 4, argmax: 5, argmin: 6, any: 7, all: 8 };

/** The uniform bytes of values `[from, to)` of `params`, or `undefined` for none. */
function uniforms(params: readonly number[], dtypes: readonly DType[], from: number, to: number): Uint8Array | undefined {
  if (to <= from) return undefined;
  return from === 0 && to === params.length ? encodeParamValues(params, dtypes) : encodeParamValues(params.slice(from, to), dtypes.slice(from, to));
}

/** Replays `entry`'s launches for this execution's tensors and `handles` (what the full path would do). */
function replay(
  launcher: Launcher,
  ctx: ExecutionContext<WebGpuHandle>,
  ops: readonly OperationIr[],
  fused: boolean,
  structure: ReduceStructure,
  entry: ReduceDecision,
  handles: readonly WebGpuHandle[],
  params: readonly number[],
): void {
  if (fused) launcher.counters.elidedWrites += structure.elided;
  const written = structure.written;
  const outs = denseOutputs(launcher, ctx.stream, ops, written);
  const split = structure.prologueInputs;
  let sourceBindings = Array.of<KernelBinding>();
  for (let k = 0; k < split; k++) sourceBindings.push(bindingOf(handles[k] as WebGpuHandle, "read"));
  let temps = Array.of<MemoryHandle>();
  for (const pass of entry.passes) {
    const built = pass.plan;
    const plan = launcher.plan(pass.key, () => built);
    const bindings = sourceBindings;
    let next = Array.of<MemoryHandle>();
    if (pass.chunks === 0) {
      for (let k = split; k < handles.length; k++) bindings.push(bindingOf(handles[k] as WebGpuHandle, "read"));
      for (const h of outs) bindings.push(bindingOf(h, "write"));
    } else {
      const bytes = entry.outer * pass.chunks * 4;
      next = entry.arg ? Array.of(launcher.empty(bytes, ctx.stream), launcher.empty(bytes, ctx.stream)) : Array.of(launcher.empty(bytes, ctx.stream));
      for (const m of next) bindings.push(kernelBinding(m.binding(), "write"));
    }
    launcher.launch(plan, bindings, ctx.stream, uniforms(params, entry.paramDtypes, pass.paramFrom, pass.paramTo));
    for (const m of temps) m.release();
    temps = next;
    sourceBindings = Array.of<KernelBinding>();
    for (const m of next) sourceBindings.push(kernelBinding(m.binding(), "read"));
  }
  if (fused && structure.producing > 1) launcher.counters.fusedLaunches++;
  for (let j = 0; j < written.length; j++) {
    const h = outs[j];
    if (h !== undefined) ctx.handles.registerHandle(producedAt(ops, written[j] as number).id, h);
  }
  for (const input of structure.inputs) if (input.dies) ctx.handles.removeHandle(locatedTensor(ops, input).id);
  for (const op of ops) if (op.kind === "drop") ctx.handles.removeHandle(op.tensor.id);
}
