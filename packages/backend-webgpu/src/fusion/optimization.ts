import type { ExecutionContext, OperationIr, Optimization } from "@weft/fusion";
import type { WebGpuHandle } from "../handle/web-gpu-handle.js";

/** Which fused kernel family an optimization runs. */
export type FusedKind = "elementwise" | "reduce" | "matmul";

/** What an optimization executes against (the runtime, without a dependency cycle). */
export interface BlockExecutor {
  executeBlock(kind: FusedKind, ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[]): void;
}

/**
 * A fused block of the WebGPU runtime: `len` operations that run as ONE kernel (a multi-pass
 * reduction is one kernel launched per pass).
 *
 * @remarks
 * **Why it holds no kernel.** It is built from relative operations and executed with global ones;
 * the kernel is derived at execution from the global operations and the inputs' layouts, and
 * looked up in the runtime's cache by its canonical key, so one optimization serves every replay.
 */
export class WebGpuOptimization implements Optimization<WebGpuHandle> {
  readonly len: number;
  readonly name: FusedKind;
  readonly #executor: BlockExecutor;

  constructor(executor: BlockExecutor, kind: FusedKind, len: number) {
    this.#executor = executor;
    this.name = kind;
    this.len = len;
  }

  execute(ctx: ExecutionContext<WebGpuHandle>, operations: readonly OperationIr[]): void {
    this.#executor.executeBlock(this.name, ctx, operations.slice(0, this.len));
  }
}
