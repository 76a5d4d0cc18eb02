import type { ExecutionContext, OperationIr, Optimization } from "@weft/fusion";
import type { WebGpuHandle } from "../handle/webgpu-handle.js";
import { ElementwiseLaunchCache } from "./elementwise-launch-cache.js";

/** Which fused kernel family an optimization runs. */
export type FusedKind = "elementwise" | "reduce" | "matmul";

/** What an optimization executes against (the runtime, without a dependency cycle). */
export interface BlockExecutor {
  /** Runs `ops` as one fused block; `cache` (elementwise only) replays earlier launches of the same layouts. */
  executeBlock(kind: FusedKind, ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[], cache?: ElementwiseLaunchCache): void;
}

/**
 * A fused block of the WebGPU runtime: `len` operations that run as ONE kernel (a multi-pass
 * reduction is one kernel launched per pass).
 *
 * @remarks
 * **Why it holds no kernel.** It is built from relative operations and executed with global ones;
 * the kernel is derived at execution from the global operations and the inputs' layouts, and
 * looked up in the runtime's cache by its canonical key, so one optimization serves every replay.
 * **Launch cache.** An elementwise optimization keeps an `ElementwiseLaunchCache`: its
 * executions with inputs of an already-seen layout reuse the derived kernel, key and binding
 * pattern (bounded; see that class).
 */
export class WebGpuOptimization implements Optimization<WebGpuHandle> {
  readonly len: number;
  readonly name: FusedKind;
  readonly #executor: BlockExecutor;
  /** Replayable launches of this block (elementwise only; bounded by the cache). */
  readonly #launches: ElementwiseLaunchCache | undefined;

  constructor(executor: BlockExecutor, kind: FusedKind, len: number) {
    this.#executor = executor;
    this.name = kind;
    this.len = len;
    this.#launches = kind === "elementwise" ? new ElementwiseLaunchCache() : undefined;
  }

  execute(ctx: ExecutionContext<WebGpuHandle>, operations: readonly OperationIr[]): void {
    const ops = operations.length === this.len ? operations : operations.slice(0, this.len);
    this.#executor.executeBlock(this.name, ctx, ops, this.#launches);
  }
}
