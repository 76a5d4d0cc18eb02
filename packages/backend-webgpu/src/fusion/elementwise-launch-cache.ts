import type { ExecutionContext, OperationIr } from "@weft/fusion";
import type { KernelBinding } from "@weft/server";
import { encodeParamValues } from "../codegen/wgsl/params.js";
import { contiguousHandle, type WebGpuHandle } from "../handle/webgpu-handle.js";
import { BlockGraph } from "./block-graph.js";
import { outputBound, outputHandle } from "./pack-outputs.js";
import { pushParams } from "./elementwise-ops.js";
import type { Launcher } from "./launcher.js";
import { type InputLocator, locateBlock, pushLayout, pushOutputShapes, sharesAllocation, SignatureEntries } from "./launch-signature.js";
import { producedAt, sameKinds, locatedTensor } from "@weft/fusion";
import { bindingOf, bytesOf, runElementwiseBlockUncached, type ElementwiseDecision } from "./run-elementwise.js";

/** Most layout signatures one {@link ElementwiseLaunchCache} keeps (oldest dropped first). */
export const MAX_LAUNCH_ENTRIES = 8;

/**
 * What never changes between executions of one optimization: derived once from the first
 * execution's operations, since every execution of a cached plan has the same relative structure
 * (kinds, op names, dtypes, statuses, which positions name the same tensor).
 */
interface BlockStructure {
  /** The op kinds, checked on every execution (a cheap guard against a foreign block). */
  readonly kinds: readonly OperationIr["kind"][];
  readonly inputs: readonly InputLocator[];
  /** Op index of each written output, in production order. */
  readonly written: readonly number[];
  /** Produced tensors never written (write elision). */
  readonly elided: number;
  /** Number of producing (non-`drop`) operations. */
  readonly producing: number;
}

/** One replayable execution: what was decided (stored under the layout signature it was decided for). */
interface LaunchEntry {
  readonly decision: ElementwiseDecision;
  /** Per input slot, whether an output is written in place into it (bound `read-write`). */
  readonly readWrite: readonly boolean[];
}

/**
 * The per-optimization memory of fused elementwise launches: when a cached plan executes again with
 * inputs of the same layouts, the launch replays what the first such execution decided — the block
 * graph, the kernel spec and its key, the generated plan, in-place slots and the binding pattern —
 * instead of deriving them again (the steady-state host cost of a fused block).
 *
 * @remarks
 * **Signature.** A flat list of numbers compared element by element: every op's output shape, and
 * per input its shape, strides, offset, allocation size and `canMut()`. Together with the
 * structure (fixed per plan) these are everything the kernel key, vectorisation, write elision and
 * the in-place choice depend on ({@link canWriteInPlace}). Values (scalars, clamp bounds, fill
 * values, arange start/step, random seeds and bounds) are not part of it: they are the kernel's
 * parameters, collected from each execution's operations ({@link pushParams}) and passed as
 * uniforms, so a loop with a new scalar each step replays one entry.
 * **Not replayed.** Executions where two inputs share an allocation (they need temporary copies,
 * {@link distinctBindings}) and executions whose op kinds differ from the first one's always take
 * the full path.
 * **Bounded by** {@link MAX_LAUNCH_ENTRIES} signatures (oldest dropped first); the structure is one
 * entry per optimization.
 * **Invariant.** A replayed launch binds, allocates, registers and frees exactly what the full path
 * would for the same operations and handles, and counts the same counters.
 */
export class ElementwiseLaunchCache {
  #structure: BlockStructure | undefined;
  /** Replayable executions by layout signature; at most {@link MAX_LAUNCH_ENTRIES}. */
  readonly #entries = new SignatureEntries<LaunchEntry>(MAX_LAUNCH_ENTRIES);
  /** Number of layout signatures held (tests). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Runs `ops` when they write nothing (every tensor they produce dies in them: dead code) and
   * returns true; returns false, doing nothing, otherwise. Such a block launches no kernel: the
   * full path would only free the inputs that die and the dropped tensors, and count the elided
   * writes, which is all this does — without a launch group, a fallback or a layout signature.
   */
  runDead(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[], fused: boolean): boolean {
    const structure = this.#structureOf(ops);
    if (structure === undefined || structure.written.length !== 0) return false;
    if (fused) launcher.counters.elidedWrites += structure.elided;
    for (const input of structure.inputs) if (input.dies) ctx.handles.removeHandle(locatedTensor(ops, input).id);
    for (const op of ops) if (op.kind === "drop") ctx.handles.removeHandle(op.tensor.id);
    return true;
  }

  /** Runs the block: replays a matching earlier execution, else runs it in full and remembers it. */
  run(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[], fused: boolean): void {
    const structure = this.#structureOf(ops);
    if (structure === undefined) {
      runElementwiseBlockUncached(launcher, ctx, ops, fused);
      return;
    }
    const handles = this.#entries.handles;
    handles.length = 0;
    for (const input of structure.inputs) handles.push(ctx.handles.getHandle(locatedTensor(ops, input)));
    const signature = this.#entries.signature;
    if (!buildSignature(ops, handles, signature)) {
      handles.length = 0;
      runElementwiseBlockUncached(launcher, ctx, ops, fused);
      return;
    }
    const entry = this.#entries.find(signature);
    if (entry === undefined) {
      handles.length = 0;
      const decision = runElementwiseBlockUncached(launcher, ctx, ops, fused);
      if (!decision.copied && this.#remember(signature, decision, structure.inputs.length)) launcher.counters.launchCacheEvictions++;
      return;
    }
    const params = this.#entries.params;
    params.length = 0;
    for (const op of ops) pushParams(op, params);
    try {
      replay(launcher, ctx, ops, fused, structure, entry, handles, params);
    } finally {
      handles.length = 0;
      params.length = 0;
    }
  }

  /** Stores an execution; returns whether the oldest one was dropped to make room. */
  #remember(signature: readonly number[], decision: ElementwiseDecision, inputs: number): boolean {
    const readWrite = new Array<boolean>(inputs).fill(false);
    for (const slot of decision.inPlace) if (slot !== undefined) readWrite[slot] = true;
    return this.#entries.remember(signature, { decision, readWrite });
  }

  /** The structure of `ops` (derived on first use), or `undefined` when `ops` does not match it. */
  #structureOf(ops: readonly OperationIr[]): BlockStructure | undefined {
    const known = this.#structure;
    if (known !== undefined) {
      return sameKinds(known.kinds, ops) ? known : undefined;
    }
    const structure = analyse(ops);
    this.#structure = structure;
    return structure;
  }
}

/** Derives the {@link BlockStructure} of `ops` from their block graph. */
function analyse(ops: readonly OperationIr[]): BlockStructure | undefined {
  const block = new BlockGraph();
  for (const op of ops) if (!block.add(op)) return undefined;
  const located = locateBlock(ops, block.inputs, block.written());
  if (located === undefined) return undefined;
  return {
    kinds: ops.map((o) => o.kind),
    inputs: located.inputs,
    written: located.written,
    elided: block.elided(),
    producing: ops.filter((o) => o.kind !== "drop").length,
  };
}

/**
 * Writes the layout signature of one execution into `out` (see {@link ElementwiseLaunchCache}).
 * Returns false when two inputs share an allocation (never replayed).
 */
function buildSignature(ops: readonly OperationIr[], handles: readonly WebGpuHandle[], out: number[]): boolean {
  out.length = 0;
  if (sharesAllocation(handles)) return false;
  pushOutputShapes(out, ops);
  for (const h of handles) {
    pushLayout(out, h);
    out.push(h.memory.size, h.memory.canMut() ? 1 : 0);
  }
  return true;
}

/** Replays `entry`'s launch for this execution's tensors and `handles` (what the full path would do). */
function replay(
  launcher: Launcher,
  ctx: ExecutionContext<WebGpuHandle>,
  ops: readonly OperationIr[],
  fused: boolean,
  structure: BlockStructure,
  entry: LaunchEntry,
  handles: readonly WebGpuHandle[],
  params: readonly number[],
): void {
  const { decision, readWrite } = entry;
  if (fused) launcher.counters.elidedWrites += structure.elided;
  const written = structure.written;
  // `Array.of`, not `[]`: per-launch arrays stay off tracked allocation sites (docs/performance.md#allocation-sites).
  const outs = Array.of<WebGpuHandle>();
  if (decision.key !== undefined && decision.plan !== undefined) {
    const built = decision.plan;
    const plan = launcher.plan(decision.key, () => built);
    const bindings = Array.of<KernelBinding>();
    for (let k = 0; k < handles.length; k++) bindings.push(bindingOf(handles[k] as WebGpuHandle, readWrite[k] === true ? "read-write" : "read"));
    for (let j = 0; j < written.length; j++) {
      const t = producedAt(ops, written[j] as number);
      const slot = decision.inPlace[j];
      const inPlace = slot === undefined ? undefined : handles[slot];
      const pack = decision.packs?.[j];
      const made = outputHandle(launcher, ctx.stream, t, j, inPlace, pack, outs);
      outs.push(made);
      if (outputBound(j, inPlace, pack)) bindings.push(bindingOf(made, "write"));
    }
    launcher.launch(plan, bindings, ctx.stream, encodeParamValues(params, decision.paramDtypes));
    if (fused && structure.producing > 1) launcher.counters.fusedLaunches++;
  } else {
    // Nothing to compute (all results die, or an empty shape): outputs still need handles, and
    // are computed from the inputs (a failure claiming an input reaches them: see propagate).
    for (const index of written) {
      const t = producedAt(ops, index);
      outs.push(contiguousHandle(launcher.empty(bytesOf(t.shape, t.dtype), ctx.stream), t.shape, t.dtype));
    }
    launcher.propagate(handles.map((h) => h.memory), outs.map((h) => h.memory), ctx.stream);
  }
  for (let j = 0; j < written.length; j++) {
    const h = outs[j];
    if (h !== undefined) ctx.handles.registerHandle(producedAt(ops, written[j] as number).id, h);
  }
  for (const input of structure.inputs) if (input.dies) ctx.handles.removeHandle(locatedTensor(ops, input).id);
  for (const op of ops) if (op.kind === "drop") ctx.handles.removeHandle(op.tensor.id);
}
