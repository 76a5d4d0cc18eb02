import { invariant } from "@weft/environment";
import { BlockFallback, elementCount, forEachTensor, isContiguous, retireSoftmaxBlock, softmaxEnds, type BlockFallbackPort, type ExecutionContext, type OperationIr, type Optimization } from "@weft/fusion";
import { contiguousHandle } from "../handle/webgpu-handle.js";
import { MAX_SOFTMAX_ROW, softmaxKernel, softmaxKey } from "../kernels/softmax.js";
import { bindingOf, bytesOf } from "./run-elementwise.js";
import type { WebGpuHandle } from "../handle/webgpu-handle.js";
import { ElementwiseLaunchCache } from "./elementwise-launch-cache.js";
import type { Launcher } from "./launcher.js";
import { runElementwiseBlock } from "./run-elementwise.js";
import { chainLayout, runMatmulBlock, type ChainLayout, type MatmulChooser } from "./run-matmul.js";
import { MatmulChainLaunchCache } from "./matmul-chain-launch-cache.js";
import { ReduceLaunchCache } from "./reduce-launch-cache.js";
import { MatmulLaunchCache } from "./matmul-launch-cache.js";
import { runReduceBlock } from "./run-reduce.js";

/** Which fused kernel family an optimization runs. */
export type FusedKind = "elementwise" | "reduce" | "matmul";

/**
 * A fused block of the WebGPU runtime: `len` operations that run as ONE kernel (a multi-pass
 * reduction is one kernel launched per pass). One subclass per {@link FusedKind}; each holds what
 * it needs to run itself (the launcher, its launch cache, the matmul chooser) and runs down from
 * there: nothing calls back into the runtime.
 *
 * @remarks
 * **Why it holds no kernel.** It is built from relative operations and executed with global ones;
 * the kernel is derived at execution from the global operations and the inputs' layouts, and
 * looked up in the launcher's cache by its canonical key, so one optimization serves every replay.
 * **Stream.** The block runs on `ctx.stream`, passed down explicitly.
 * **A rejected kernel.** The block's launches form one launch group (`Launcher.group`) with a
 * `BlockFallback`: when the device rejects one of its kernels (compile or validation), or it
 * reads bytes a failure claims, the block re-runs op by op in its place, so only the ops that
 * truly fail deliver errors, to exactly the tensors computed from them (docs/errors.md). The
 * fallback holds the block's tensors (`canMut` ignores holds): the block still chooses its
 * in-place writes.
 */
export abstract class WebGpuOptimization implements Optimization<WebGpuHandle> {
  readonly len: number;
  abstract readonly name: FusedKind;
  protected readonly launcher: Launcher;
  readonly #fallback: BlockFallbackPort<WebGpuHandle>;

  constructor(launcher: Launcher, len: number, fallback: BlockFallbackPort<WebGpuHandle>) {
    this.launcher = launcher;
    this.len = len;
    this.#fallback = fallback;
  }

  execute(ctx: ExecutionContext<WebGpuHandle>, operations: readonly OperationIr[]): void {
    const ops = operations.length === this.len ? operations : operations.slice(0, this.len);
    const fallback = new BlockFallback(this.#fallback, ctx, ops);
    this.launcher.group(
      fallback,
      () => {
        this.run(ctx, ops);
        fallback.outputsFrom(ctx.handles);
      },
      ctx.stream,
    );
  }

  /** Runs exactly the block's `len` operations. */
  protected abstract run(ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[]): void;
}

/**
 * A chain of elementwise and creation operations with one reference shape as one kernel.
 *
 * @remarks
 * **Launch cache.** Its executions with inputs of an already-seen layout reuse the derived kernel,
 * key and binding pattern (bounded; see {@link ElementwiseLaunchCache}).
 * **Dead blocks.** A block whose every product dies in it (a `tidy` step nobody read, cut whole by
 * the fuser) launches nothing: it only frees its dying inputs and dropped tensors
 * (`ElementwiseLaunchCache.runDead`).
 */
export class ElementwiseOptimization extends WebGpuOptimization {
  readonly name = "elementwise" as const;
  /** Replayable launches of this block (bounded by the cache). */
  readonly #launches = new ElementwiseLaunchCache();

  /** A block that writes nothing runs without a launch group (it launches nothing to fall back from). */
  override execute(ctx: ExecutionContext<WebGpuHandle>, operations: readonly OperationIr[]): void {
    const ops = operations.length === this.len ? operations : operations.slice(0, this.len);
    if (this.#launches.runDead(this.launcher, ctx, ops, true)) return;
    super.execute(ctx, ops);
  }

  protected run(ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[]): void {
    runElementwiseBlock(this.launcher, ctx, ops, true, this.#launches);
  }
}

/**
 * An elementwise prologue, one reduction and an elementwise epilogue as one kernel (one per pass).
 * The {@link ReduceFuser} accepted only blocks `planReduceBlock` can plan, so execution never falls
 * back to running the operations one by one.
 *
 * @remarks
 * **Launch cache.** Its executions with inputs of an already-seen layout replay the passes' plans,
 * keys and partial sizes (bounded; see {@link ReduceLaunchCache}).
 */
export class ReduceOptimization extends WebGpuOptimization {
  readonly name = "reduce" as const;
  /** Replayable launches of this block (bounded by the cache). */
  readonly #launches = new ReduceLaunchCache();

  protected run(ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[]): void {
    invariant(runReduceBlock(this.launcher, ctx, ops, true, this.#launches), "the reduce fuser accepts only blocks the reduce kernel can plan");
  }
}

/**
 * A matmul and the elementwise epilogue on its output as one kernel, tiled as `choose` says
 * (default: the heuristic `chooseMatmulConfig`); later executions with operands of the same
 * layouts replay the first one's decisions (bounded; see {@link MatmulLaunchCache}).
 */
export class MatmulOptimization extends WebGpuOptimization {
  readonly name = "matmul" as const;
  readonly #choose: MatmulChooser | undefined;

  constructor(launcher: Launcher, len: number, fallback: BlockFallbackPort<WebGpuHandle>, choose?: MatmulChooser) {
    super(launcher, len, fallback);
    this.#choose = choose;
  }

  /** Replays of this optimization's launches by operand layouts (see {@link MatmulLaunchCache}). */
  readonly #launches = new MatmulLaunchCache();

  protected run(ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[]): void {
    runMatmulBlock(this.launcher, ctx, ops, true, this.#choose, this.#launches);
  }
}

/**
 * `Tensor.softmax` along the last axis (the five ops `SoftmaxFuser` recognises, with their
 * `drop`s) as one kernel (`softmaxKernel`): one workgroup per row.
 *
 * @remarks
 * Rows of more than {@link MAX_SOFTMAX_ROW} elements, empty inputs, and inputs that are not
 * dense rows run the five ops one by one (the runtime's own kernels), so every input is served;
 * the fused kernel's values are those of the five kernels (see `softmaxKernel`).
 */
export class SoftmaxOptimization extends WebGpuOptimization {
  readonly name = "reduce" as const;
  readonly #runtime: BlockFallbackPort<WebGpuHandle>["runtime"];

  constructor(launcher: Launcher, len: number, fallback: BlockFallbackPort<WebGpuHandle>) {
    super(launcher, len, fallback);
    this.#runtime = fallback.runtime;
  }

  protected run(ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[]): void {
    runSoftmaxBlock(this.launcher, this.#runtime, ctx, ops);
  }
}

/**
 * Runs a softmax block (the five ops `SoftmaxFuser` recognises, with their `drop`s) as one kernel;
 * rows of more than {@link MAX_SOFTMAX_ROW} elements, empty inputs and inputs that are not dense
 * rows run the ops one by one on `runtime`.
 */
function runSoftmaxBlock(launcher: Launcher, runtime: BlockFallbackPort<WebGpuHandle>["runtime"], ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[]): void {
  const { max, div } = softmaxEnds(ops);
  const x = ctx.handles.getHandle(max.input);
  const n = x.shape[x.shape.length - 1] ?? 0;
  const total = elementCount(x.shape);
  if (n < 1 || n > MAX_SOFTMAX_ROW || total === 0 || x.dtype !== "f32" || !isContiguous(x)) {
    for (const op of ops) runtime.executeOperation(op, ctx);
    return;
  }
  const spec = { rows: total / n, n, offset: x.offset };
  const key = softmaxKey(spec, launcher.profile);
  const plan = launcher.plan(key, () => softmaxKernel(spec, launcher.profile, key));
  const y = contiguousHandle(launcher.empty(bytesOf(div.out.shape, "f32"), ctx.stream), div.out.shape, "f32");
  launcher.launch(plan, [bindingOf(x, "read"), bindingOf(y, "write")], ctx.stream);
  launcher.counters.fusedLaunches++;
  launcher.counters.elidedWrites += 4;
  ctx.handles.registerHandle(div.out.id, y);
  retireSoftmaxBlock(ops, ctx.handles);
}

/**
 * A matmul, its elementwise epilogue and a softmax along the last axis of the epilogue's result
 * (`MatmulSoftmaxFuser`) as one kernel (`matmulChainKernel`, one layer): one workgroup per output row.
 *
 * @remarks
 * **Two launches where one does not fit.** A product too large for one workgroup per row
 * (`matmulChainFits`: `N` above the workgroup size, a long `K`, many multiply-adds), an empty
 * one, or a block whose epilogue must write another product runs as the two blocks the search
 * would otherwise have cut: the matmul with its epilogue (`runMatmulBlock`, which writes the
 * softmax's input), then the softmax (the softmax kernel, or its ops one by one).
 */
export class MatmulSoftmaxOptimization extends WebGpuOptimization {
  readonly name = "matmul" as const;
  readonly #choose: MatmulChooser | undefined;
  readonly #runtime: BlockFallbackPort<WebGpuHandle>["runtime"];

  constructor(launcher: Launcher, len: number, fallback: BlockFallbackPort<WebGpuHandle>, choose?: MatmulChooser) {
    super(launcher, len, fallback);
    this.#choose = choose;
    this.#runtime = fallback.runtime;
  }

  /** Replays of this optimization's fused launches by operand layouts (see {@link MatmulChainLaunchCache}). */
  readonly #launches = new MatmulChainLaunchCache();
  /** The head as a chain of one layer (from its first execution: every execution has the same op kinds). */
  #layout: ChainLayout | undefined;
  /**
   * Replays of the matmul block it runs where the head does not fit one kernel (attention scores
   * over long rows run that way on every execution), as `MatmulOptimization` keeps them.
   */
  readonly #matmulLaunches = new MatmulLaunchCache();

  protected run(ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[]): void {
    const at = ops.findIndex((o) => o.kind === "reduce");
    invariant(at > 0, "a matmul+softmax block has its softmax after the matmul");
    if (this.#launches.run(this.launcher, ctx, ops, (this.#layout ??= { starts: [0], at }))) return;
    runMatmulBlock(this.launcher, ctx, ops.slice(0, at), true, this.#choose, this.#matmulLaunches);
    runSoftmaxBlock(this.launcher, this.#runtime, ctx, ops.slice(at));
  }
}

/**
 * A chain of products, each layer's left operand the previous layer's epilogue result, with each
 * layer's epilogue and optionally a softmax on the last one (`MatmulChainFuser`), as one kernel
 * (`matmulChainKernel`): one workgroup per row through every layer.
 *
 * @remarks
 * **Its parts where one kernel does not fit.** A chain past the kernel's bounds (`matmulChainFits`:
 * a layer wider than a workgroup, a long `K`, many multiply-adds), an empty one, or one whose
 * intermediates are still used after the block runs as one matmul block per layer and the softmax
 * block, in order: each `drop` goes to the part holding its tensor's last use, so those blocks
 * still never write a product that dies in them (`splitChain`). The fuser sees relative shapes
 * only, so the same optimization serves a small MLP fused and a wide one in parts.
 */
export class MatmulChainOptimization extends WebGpuOptimization {
  readonly name = "matmul" as const;
  readonly #choose: MatmulChooser | undefined;
  readonly #runtime: BlockFallbackPort<WebGpuHandle>["runtime"];
  /** The block's layout (where each layer and the softmax start), from its first execution: every execution has the same op kinds. */
  #layout: ChainLayout | undefined;
  /** Replays of this optimization's fused launches by operand layouts (see {@link MatmulChainLaunchCache}). */
  readonly #launches = new MatmulChainLaunchCache();
  /** Replays of each layer's matmul block when the chain runs in parts. */
  readonly #layerLaunches: MatmulLaunchCache[] = [];

  constructor(launcher: Launcher, len: number, fallback: BlockFallbackPort<WebGpuHandle>, choose?: MatmulChooser) {
    super(launcher, len, fallback);
    this.#choose = choose;
    this.#runtime = fallback.runtime;
  }

  protected run(ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[]): void {
    const layout = (this.#layout ??= chainLayout(ops));
    if (this.#launches.run(this.launcher, ctx, ops, layout)) return;
    const parts = splitChain(ops, layout);
    parts.layers.forEach((part, l) => runMatmulBlock(this.launcher, ctx, part, true, this.#choose, (this.#layerLaunches[l] ??= new MatmulLaunchCache())));
    if (parts.softmax !== undefined) runSoftmaxBlock(this.launcher, this.#runtime, ctx, parts.softmax);
  }
}

/**
 * A matmul chain's parts as blocks of their own: each layer's matmul and epilogue, then the softmax's
 * ops, each followed by the `drop`s of the tensors whose last use (or production) it holds, in
 * block order. A drop of a tensor no op of the block touches goes to the first part.
 */
function splitChain(ops: readonly OperationIr[], layout: ChainLayout): { readonly layers: OperationIr[][]; readonly softmax: OperationIr[] | undefined } {
  const bounds = [...layout.starts, ...(layout.at >= 0 ? [layout.at] : [])];
  const parts: OperationIr[][] = bounds.map(() => []);
  const partOf = (i: number): number => {
    let p = 0;
    while (p + 1 < bounds.length && (bounds[p + 1] as number) <= i) p++;
    return p;
  };
  const last = new Map<number, number>();
  ops.forEach((op, i) => {
    if (op.kind === "drop") return;
    parts[partOf(i)]?.push(op);
    forEachTensor(op, (t) => last.set(t.id, partOf(i)));
  });
  for (const op of ops) if (op.kind === "drop") parts[last.get(op.tensor.id) ?? 0]?.push(op);
  const layers = parts.slice(0, layout.starts.length);
  return { layers, softmax: layout.at >= 0 ? parts[layout.starts.length] : undefined };
}
