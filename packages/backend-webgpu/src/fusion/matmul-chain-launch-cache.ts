import type { ExecutionContext, OperationIr } from "@weft/fusion";
import { locatedTensor, locateTensor, sameKinds, type TensorLocator } from "@weft/fusion";
import type { KernelBinding } from "@weft/server";
import { encodeParamValues } from "../codegen/wgsl/params.js";
import { contiguousHandle, type WebGpuHandle } from "../handle/webgpu-handle.js";
import { pushParams } from "./elementwise-ops.js";
import { type InputLocator, locateBlock, pushLayout, pushOutputShapes, sharesAllocation, SignatureEntries } from "./launch-signature.js";
import type { Launcher } from "./launcher.js";
import { MAX_MATMUL_LAUNCH_ENTRIES } from "./matmul-launch-cache.js";
import { bindingOf, bytesOf } from "./run-elementwise.js";
import { chainOutput, layerEnd, matmulChainEpilogues, retireChainDrops, runMatmulChainBlock, type ChainLayout, type MatmulChainDecision } from "./run-matmul.js";

/** What never changes between executions of one matmul-chain optimization (see {@link MatmulChainLaunchCache}). */
interface MatmulChainStructure {
  /** The op kinds, checked on every execution (a cheap guard against a foreign block). */
  readonly kinds: readonly OperationIr["kind"][];
  readonly layout: ChainLayout;
  /** The first layer's left operand, and whether it dies in the block. */
  readonly lhs: TensorLocator;
  readonly lhsDies: boolean;
  /** Every layer's right operand, and whether each dies in the block. */
  readonly rhs: readonly TensorLocator[];
  readonly rhsDies: readonly boolean[];
  /** Every layer's epilogue inputs (besides its product), layer by layer, with whether each dies in the block. */
  readonly inputs: readonly InputLocator[];
  /** The index of the op producing the chain's output (the softmax's `div`, or the last layer's value): the only written tensor. */
  readonly out: number;
  /** Products never written: every layer's but the output, and the softmax's four intermediates. */
  readonly elided: number;
}

/**
 * The per-optimization memory of fused matmul-chain launches (`MatmulChainOptimization`, and
 * `MatmulSoftmaxOptimization`'s classifier head, a chain of one layer): an execution whose operands
 * and epilogue inputs have the layouts of an earlier fused one replays its kernel plan and key
 * instead of building the layers' epilogue graphs, the spec and the key again — a served model runs
 * the same layers on every request (docs/performance.md#one-launch-fewer,
 * docs/performance.md#serving-p99-structure).
 *
 * @remarks
 * **Signature.** Every op's output shape and the layout of the first operand, of every layer's
 * right operand and of every epilogue input, as `MatmulLaunchCache` keeps them; the epilogues'
 * values are uniforms, collected from each execution's layer ops in order ({@link pushParams}). An
 * execution that did not run fused (the chain did not fit) is never remembered, so its signature
 * always takes the full path, which decides again.
 * **Not replayed.** Executions where two bound tensors share an allocation (`x · xᵀ`), or whose op
 * kinds differ from the first one's.
 * **Bounded by** `MAX_MATMUL_LAUNCH_ENTRIES` signatures (oldest dropped first).
 * **Invariant.** A replayed launch binds, allocates, registers and frees exactly what
 * `runMatmulChainBlock` would for the same operations and handles, and counts the same counters.
 */
export class MatmulChainLaunchCache {
  #structure: MatmulChainStructure | null | undefined;
  readonly #entries = new SignatureEntries<MatmulChainDecision>(MAX_MATMUL_LAUNCH_ENTRIES);

  /** Number of layout signatures held (tests). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Runs the chain as one kernel (replaying a matching earlier execution) when it fits; returns
   * false, having done nothing, otherwise (see `runMatmulChainBlock`).
   */
  run(launcher: Launcher, ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[], layout: ChainLayout): boolean {
    const structure = this.#structureOf(ops, layout);
    if (structure === undefined) return runMatmulChainBlock(launcher, ctx, ops, layout) !== undefined;
    const handles = this.#entries.handles;
    const signature = this.#entries.signature;
    const params = this.#entries.params;
    try {
      handles.length = 0;
      handles.push(ctx.handles.getHandle(locatedTensor(ops, structure.lhs)));
      for (const r of structure.rhs) handles.push(ctx.handles.getHandle(locatedTensor(ops, r)));
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
      const ran = runMatmulChainBlock(launcher, ctx, ops, layout);
      if (ran === undefined) return false;
      if (replayable && ran.replay !== undefined && this.#entries.remember(signature, ran.replay)) launcher.counters.launchCacheEvictions++;
      return true;
    } finally {
      handles.length = 0;
      params.length = 0;
    }
  }

  /** The structure of `ops` (derived on first use), or `undefined` when `ops` does not match it or cannot be located. */
  #structureOf(ops: readonly OperationIr[], layout: ChainLayout): MatmulChainStructure | undefined {
    const known = this.#structure;
    if (known === null) return undefined;
    if (known !== undefined) return sameLayout(known.layout, layout) && sameKinds(known.kinds, ops) ? known : undefined;
    const structure = analyse(ops, layout);
    this.#structure = structure ?? null;
    return structure;
  }
}

const sameLayout = (a: ChainLayout, b: ChainLayout): boolean => a.at === b.at && a.starts.length === b.starts.length && a.starts.every((s, i) => s === b.starts[i]);

/** Derives the {@link MatmulChainStructure} of `ops` (layers from `layout.starts`, the softmax from `layout.at`, drops). */
function analyse(ops: readonly OperationIr[], layout: ChainLayout): MatmulChainStructure | undefined {
  const graphs = matmulChainEpilogues(ops, layout);
  const out = chainOutput(ops, layout, graphs);
  if (graphs === undefined || out < 0) return undefined;
  const first = ops[layout.starts[0] ?? -1];
  if (first === undefined || first.kind !== "matmul") return undefined;
  const lhs = locateTensor(ops, first.lhs.id);
  if (lhs === undefined || lhs.op !== layout.starts[0]) return undefined;
  const rhs: TensorLocator[] = [];
  const rhsDies: boolean[] = [];
  for (const start of layout.starts) {
    const mm = ops[start];
    if (mm === undefined || mm.kind !== "matmul") return undefined;
    const r = locateTensor(ops, mm.rhs.id);
    if (r === undefined || r.op !== start) return undefined;
    rhs.push(r);
    rhsDies.push(mm.rhs.status === "ReadWrite");
  }
  const inputs: InputLocator[] = [];
  for (const graph of graphs) {
    const located = locateBlock(ops, graph.inputs, []);
    if (located === undefined) return undefined;
    inputs.push(...located.inputs);
  }
  let produced = 0;
  for (const g of graphs) produced += g.outputs.length;
  return {
    kinds: ops.map((o) => o.kind),
    layout,
    lhs,
    lhsDies: first.lhs.status === "ReadWrite",
    rhs,
    rhsDies,
    inputs,
    out,
    elided: produced + (layout.at >= 0 ? 4 : -1),
  };
}

/** Replays `entry`'s launch for this execution's tensors and `handles` (what `runMatmulChainBlock` would do). */
function replay(
  launcher: Launcher,
  ctx: ExecutionContext<WebGpuHandle>,
  ops: readonly OperationIr[],
  structure: MatmulChainStructure,
  entry: MatmulChainDecision,
  handles: readonly WebGpuHandle[],
  params: number[],
): void {
  const stream = ctx.stream;
  const producer = ops[structure.out] as Exclude<OperationIr, { kind: "drop" }>;
  const out = producer.out;
  const y = contiguousHandle(launcher.empty(bytesOf(out.shape, "f32"), stream), out.shape, "f32");
  const plan = launcher.plan(entry.key, () => entry.plan);
  const { starts } = structure.layout;
  for (let l = 0; l < starts.length; l++) {
    const end = layerEnd(structure.layout, l, ops.length);
    for (let i = (starts[l] as number) + 1; i < end; i++) pushParams(ops[i] as OperationIr, params);
  }
  const bindings = Array.of<KernelBinding>();
  for (const h of handles) bindings.push(bindingOf(h, "read"));
  bindings.push(bindingOf(y, "write"));
  launcher.launch(plan, bindings, stream, encodeParamValues(params, entry.paramDtypes));
  launcher.counters.fusedLaunches++;
  launcher.counters.elidedWrites += structure.elided;
  ctx.handles.registerHandle(out.id, y);
  if (structure.lhsDies) ctx.handles.removeHandle(locatedTensor(ops, structure.lhs).id);
  structure.rhs.forEach((r, l) => {
    if (structure.rhsDies[l] === true) ctx.handles.removeHandle(locatedTensor(ops, r).id);
  });
  for (const input of structure.inputs) if (input.dies) ctx.handles.removeHandle(locatedTensor(ops, input).id);
  retireChainDrops(ops, structure.layout, ctx.handles);
}
