import type { ExecutionContext, FuserProperties, FuserStatus, OperationFuser, OperationIr, Optimization, TensorId } from "@weft/fusion";
import { BlockFallback, isContiguous, numElements, retireSoftmaxBlock, softmaxEnds, SoftmaxPattern } from "@weft/fusion";
import type { CpuHandle } from "../handle/cpu-handle.js";
import { BindingSet } from "../kernels/cpu-kernel.js";
import { softmaxKernel } from "../kernels/softmax-kernel.js";
import type { CpuRuntime } from "../runtime/cpu-runtime.js";
import { MAX_FUSED_OPERATIONS } from "./elementwise-fuser.js";

/**
 * Fuses the op sequence `Tensor.softmax` records along the last axis (`SoftmaxPattern`: max,
 * sub, exp, sum, div, f32) with the `drop`s of its four intermediates into one
 * {@link SoftmaxOptimization}: one launch instead of four blocks (max | sub+exp | sum | div).
 * The WebGPU backend's `SoftmaxFuser`.
 *
 * @remarks
 * **Ready** once the five ops were accepted and the four intermediates were dropped in the block
 * (only the result is written). **Score** 500: above the elementwise and matmul fusers' blocks
 * (neither takes a `reduce`). **Invariants.** Once `closed` it ignores everything until `reset()`.
 */
export class SoftmaxFuser implements OperationFuser<Optimization<CpuHandle>> {
  readonly #runtime: CpuRuntime;
  #pattern = new SoftmaxPattern();
  #count = 0;
  #dropped = new Set<TensorId>();
  #status: FuserStatus = "open";

  constructor(runtime: CpuRuntime) {
    this.#runtime = runtime;
  }

  fuse(operation: OperationIr): void {
    if (this.#status === "closed") return;
    if (this.#count >= MAX_FUSED_OPERATIONS) {
      this.#status = "closed";
      return;
    }
    if (operation.kind === "drop") {
      if (this.#count === 0) {
        this.#status = "closed";
        return;
      }
      this.#dropped.add(operation.tensor.id);
      this.#count++;
      return;
    }
    if (!this.#pattern.accept(operation)) {
      this.#status = "closed";
      return;
    }
    this.#count++;
  }

  #ready(): boolean {
    return this.#pattern.complete && this.#pattern.intermediates.every((id) => this.#dropped.has(id));
  }

  finish(): Optimization<CpuHandle> {
    return new SoftmaxOptimization(this.#runtime, this.#count);
  }

  reset(): void {
    this.#pattern.reset();
    this.#count = 0;
    this.#dropped = new Set();
    this.#status = "open";
  }

  status(): FuserStatus {
    return this.#status;
  }

  properties(): FuserProperties {
    return this.#ready() ? { score: 500, ready: true } : { score: 0, ready: false };
  }

  len(): number {
    return this.#count;
  }

  clone(): OperationFuser<Optimization<CpuHandle>> {
    const copy = new SoftmaxFuser(this.#runtime);
    copy.#pattern = this.#pattern.clone();
    copy.#count = this.#count;
    copy.#dropped = new Set(this.#dropped);
    copy.#status = this.#status;
    return copy;
  }
}

/**
 * `Tensor.softmax` along the last axis (what {@link SoftmaxFuser} accepts) as one CPU kernel
 * (`softmaxKernel`: the five kernels' values, bit for bit). An input that is not dense f32 rows,
 * or empty, runs the ops one by one.
 */
export class SoftmaxOptimization implements Optimization<CpuHandle> {
  readonly name = "softmax";
  readonly len: number;
  readonly #runtime: CpuRuntime;

  constructor(runtime: CpuRuntime, len: number) {
    this.#runtime = runtime;
    this.len = len;
  }

  execute(ctx: ExecutionContext<CpuHandle>, operations: readonly OperationIr[]): void {
    const ops = operations.length === this.len ? operations : operations.slice(0, this.len);
    const runtime = this.#runtime;
    const { max, div } = softmaxEnds(ops);
    const x = ctx.handles.getHandle(max.input);
    if (x.dtype !== "f32" || numElements(x.shape) === 0 || !isContiguous(x)) {
      for (const op of ops) runtime.executeOperation(op, ctx);
      return;
    }
    const y = runtime.allocate(div.out.shape, "f32", ctx.stream);
    try {
      const set = new BindingSet();
      const input = { binding: set.bind(x.memory, "read"), dtype: "f32" as const, layout: x };
      const output = { binding: set.bind(y.memory, "write"), dtype: "f32" as const, layout: y };
      const kernel = softmaxKernel(input, output, set.writable());
      const fallback = new BlockFallback(runtime.fallbackPort, ctx, ops);
      fallback.output(div.out, y);
      runtime.client.group(fallback, () => runtime.launch(kernel, set, ctx.stream), ctx.stream);
    } catch (error) {
      runtime.releaseHandle(y);
      throw error;
    }
    runtime.stats.fusedLaunches++;
    ctx.handles.registerHandle(div.out.id, y);
    retireSoftmaxBlock(ops, ctx.handles);
  }
}
