import { invariant } from "@weft/environment";
import type { HandleContainer } from "../runtime/handle-container.js";
import type { OperationIr } from "./operation-ir.js";
import type { TensorId } from "./tensor-ir.js";

/**
 * Recognises, op by op, the sequence `Tensor.softmax` records along the last axis — `m = max(x)`,
 * `d = x − m`, `e = exp(d)`, `s = sum(e)`, `y = e / s`, all f32 with the reduced axis kept —
 * for the backends' softmax fusers (one home for the pattern; each backend decides what its
 * fused kernel takes at execution).
 *
 * @remarks
 * **Form.** Fusers see operations in the relative form (ids and shapes are dense relative ids),
 * so the pattern checks structure only: op kinds and names, the f32 dtype, the reduced axis
 * being the last, and that each op reads the previous ones' outputs (`sub(x, m)`, `exp(d)`,
 * `sum(e)`, `div(e, s)`). `drop`s are not its business: a fuser passes only the other ops.
 * **Invariants.** After a `false` from {@link accept} nothing more is accepted until
 * {@link reset}; {@link complete} once all five were accepted.
 */
export class SoftmaxPattern {
  /** Relative ids of x, m, d, e, s as they appear. */
  #ids: TensorId[] = [];
  #phase = 0;
  #failed = false;

  /** Whether all five ops were accepted. */
  get complete(): boolean {
    return this.#phase === 5;
  }

  /** The four intermediates (m, d, e, s) once accepted: what must die in the block for only `y` to be written. */
  get intermediates(): readonly TensorId[] {
    return this.#ids.slice(1);
  }

  /** Whether `op` (not a `drop`) is the next op of the pattern; a `false` ends the match. */
  accept(op: OperationIr): boolean {
    if (this.#failed || !this.#next(op)) {
      this.#failed = true;
      return false;
    }
    this.#phase++;
    return true;
  }

  #next(op: OperationIr): boolean {
    const ids = this.#ids;
    switch (this.#phase) {
      case 0: {
        if (op.kind !== "reduce" || op.op !== "max" || !op.keepDims || op.input.dtype !== "f32") return false;
        const rank = op.input.shape.length;
        if (rank === 0 || op.axes.length !== 1 || op.axes[0] !== rank - 1) return false;
        ids.push(op.input.id, op.out.id);
        return true;
      }
      case 1:
        if (op.kind !== "binary" || op.op !== "sub" || op.lhs.id !== ids[0] || op.rhs.id !== ids[1] || op.out.dtype !== "f32") return false;
        ids.push(op.out.id);
        return true;
      case 2:
        if (op.kind !== "unary" || op.op !== "exp" || op.input.id !== ids[2] || op.out.dtype !== "f32") return false;
        ids.push(op.out.id);
        return true;
      case 3: {
        if (op.kind !== "reduce" || op.op !== "sum" || !op.keepDims || op.input.id !== ids[3] || op.out.dtype !== "f32") return false;
        const rank = op.input.shape.length;
        if (op.axes.length !== 1 || op.axes[0] !== rank - 1) return false;
        ids.push(op.out.id);
        return true;
      }
      case 4:
        return op.kind === "binary" && op.op === "div" && op.lhs.id === ids[3] && op.rhs.id === ids[4] && op.out.dtype === "f32";
      default:
        return false;
    }
  }

  /** Forgets everything (a new block). */
  reset(): void {
    this.#ids = [];
    this.#phase = 0;
    this.#failed = false;
  }

  /** An independent copy (the explorer clones fusers). */
  clone(): SoftmaxPattern {
    const copy = new SoftmaxPattern();
    copy.#ids = [...this.#ids];
    copy.#phase = this.#phase;
    copy.#failed = this.#failed;
    return copy;
  }
}

/** The `max` (whose input is `x`) and the `div` (whose output is `y`) of a block {@link SoftmaxPattern} accepted, with its drops. */
export function softmaxEnds(ops: readonly OperationIr[]): { readonly max: Extract<OperationIr, { kind: "reduce" }>; readonly div: Extract<OperationIr, { kind: "binary" }> } {
  const max = ops[0];
  invariant(max !== undefined && max.kind === "reduce", "a softmax block starts with its max");
  let div: OperationIr | undefined;
  for (const op of ops) if (op.kind === "binary" && op.op === "div") div = op;
  invariant(div !== undefined && div.kind === "binary", "a softmax block ends with its division");
  return { max, div };
}

/**
 * Removes from `handles` what a fused softmax block (`y` registered) leaves behind, as its five
 * ops would have: every dropped tensor, and `x` when its last use (`ReadWrite`) is in the block.
 */
export function retireSoftmaxBlock<H>(ops: readonly OperationIr[], handles: HandleContainer<H>): void {
  for (const op of ops) {
    if (op.kind === "drop") handles.removeHandle(op.tensor.id);
    else if (op.kind === "reduce" && op.op === "max" && op.input.status === "ReadWrite") handles.removeHandle(op.input.id);
    else if (op.kind === "binary" && op.op === "sub" && op.lhs.status === "ReadWrite") handles.removeHandle(op.lhs.id);
  }
}
