import type { FuserProperties, FuserStatus, OperationFuser, OperationIr, Optimization } from "@weft/fusion";
import { broadcastsInto, isElementwise, operationInputs, sameShape } from "@weft/fusion";
import type { CpuHandle } from "../handle/cpu-handle.js";
import type { CpuRuntime } from "../runtime/cpu-runtime.js";
import { MAX_FUSED_OPERATIONS } from "./elementwise-fuser.js";
import { MatmulEpilogueOptimization } from "./matmul-optimization.js";

/** In relative shapes, shape id 0 always stands for a dim of size 1 (`OperationConverter`). */
const RELATIVE_ONE = 0;

/**
 * Fuses a `matmul` and the elementwise epilogue on its output (a serving layer's bias add and
 * activation) into one {@link MatmulEpilogueOptimization}: one launch instead of two or three, and
 * no tensor between them when nothing reads it afterwards. The WebGPU backend's `MatmulFuser`.
 *
 * @remarks
 * **Acceptance.** The block starts with a `matmul` (anything else closes the fuser at once). Then
 * every elementwise op whose output has exactly the matmul's output shape and whose inputs
 * broadcast into it is accepted; `drop`s are accepted; anything else (another kind, another shape,
 * the {@link MAX_FUSED_OPERATIONS} limit) closes it. Shapes are relative ids (0 broadcasts).
 * **Ready** only once an epilogue op was accepted: a lone matmul stays on the unfused path.
 * **Score** `(ops − 1) · 100`: above every elementwise block a matmul's output could start
 * (the elementwise fuser is closed by the matmul, so they never compete for its first op).
 * **Invariants.** Once `closed` it ignores everything until `reset()`; `len()` counts the accepted
 * prefix (drops included); it keeps no tensor ids past `reset()`.
 */
export class MatmulFuser implements OperationFuser<Optimization<CpuHandle>> {
  readonly #runtime: CpuRuntime;
  /** Accepted operations (drops included); cleared by `reset`, at most {@link MAX_FUSED_OPERATIONS}. */
  #count = 0;
  /** Accepted elementwise ops after the matmul. */
  #epilogue = 0;
  #status: FuserStatus = "open";
  /** The matmul's output shape (relative ids), once seen. */
  #out: readonly number[] | undefined;

  constructor(runtime: CpuRuntime) {
    this.#runtime = runtime;
  }

  fuse(operation: OperationIr): void {
    if (this.#status === "closed") return;
    if (this.#count >= MAX_FUSED_OPERATIONS) {
      this.#status = "closed";
      return;
    }
    const out = this.#out;
    if (out === undefined) {
      if (operation.kind !== "matmul") {
        this.#status = "closed";
        return;
      }
      this.#out = operation.out.shape;
      this.#count++;
      return;
    }
    if (operation.kind === "drop") {
      this.#count++;
      return;
    }
    if (!isElementwise(operation) || !sameShape(operation.out.shape, out) || !operationInputs(operation).every((t) => broadcastsInto(t.shape, out, RELATIVE_ONE))) {
      this.#status = "closed";
      return;
    }
    this.#count++;
    this.#epilogue++;
  }

  finish(): Optimization<CpuHandle> {
    return new MatmulEpilogueOptimization(this.#runtime, this.#count);
  }

  reset(): void {
    this.#count = 0;
    this.#epilogue = 0;
    this.#status = "open";
    this.#out = undefined;
  }

  status(): FuserStatus {
    return this.#status;
  }

  properties(): FuserProperties {
    return this.#epilogue === 0 ? { score: 0, ready: false } : { score: this.#epilogue * 100, ready: true };
  }

  len(): number {
    return this.#count;
  }

  clone(): OperationFuser<Optimization<CpuHandle>> {
    const copy = new MatmulFuser(this.#runtime);
    copy.#count = this.#count;
    copy.#epilogue = this.#epilogue;
    copy.#status = this.#status;
    copy.#out = this.#out;
    return copy;
  }
}
