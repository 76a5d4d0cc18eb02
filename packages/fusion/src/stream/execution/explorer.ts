import type { OperationIr } from "../../ir/operation-ir.js";
import type { RelativeOperation } from "../../ir/relative.js";
import type { OperationFuser } from "../../runtime/fusion-runtime.js";
import type { ExecutionStrategy } from "../store/execution-plan-store.js";
import type { ExecutionMode } from "./policy.js";
import { BlockSearch, DEFAULT_MAX_BLOCKS } from "./search/block-search.js";
import { scheduleBlocks } from "./search/schedule-blocks.js";

/**
 * What one exploration produced. Burn's `ExplorationAction`.
 * - `continue`: lazy, a block's fuser is still open; wait for more operations.
 * - `completed`: a strategy for the prefix `[0, len)`, run in `order` (a permutation of
 *   `0 … len−1`); `stoppedAt` is how many operations had been fed when the search stopped (the
 *   operations `[len, stoppedAt)` become the plan's trigger).
 * - `unfused`: the exploration budget is spent; run the whole segment unfused in stream order
 *   (never cached).
 */
export type Exploration<O> =
  | { readonly kind: "continue" }
  | {
      readonly kind: "completed";
      readonly order: readonly number[];
      readonly strategy: ExecutionStrategy<O>;
      readonly len: number;
      readonly stoppedAt: number;
    }
  | { readonly kind: "unfused" };

/**
 * A budget of explorations shared by every stream of a device (`maxExplorations`).
 * **Bound.** One counter; `max` is fixed at construction (`Infinity` when unbounded).
 */
export class ExplorationBudget {
  /** Explorations completed so far (the inspector's exploration count). */
  count = 0;
  constructor(readonly max: number) {}
  get spent(): boolean {
    return this.count >= this.max;
  }
}

/**
 * Finds how to execute a segment with the backend's fusers: Burn's `Explorer` over a block-graph
 * search (docs/fusion-search.md).
 *
 * - lazy: operations are registered one at a time in a `BlockSearch` (blocks of operations
 *   sharing tensors, each with its own fusers); while some block's fuser is open, wait. Then the
 *   prefix up to the last operation a block's best fusion covers is cut into blocks and ordered
 *   by `scheduleBlocks`; the operations after it stay pending.
 * - sync: the whole segment is scheduled (docs/pitfalls.md#p10: a sync plan covers the whole segment, so the
 *   next identical sync finds it).
 *
 * Blocks may run out of stream order — an independent reduction after a chain it does not touch,
 * two chains one after the other — but never against a hazard (read after write, free after
 * read), and every plan covers a prefix `[0, n)` of the segment.
 *
 * **Bound.** Holds the stream's fusers and the search over the operations fed since the last
 * reset (at most the segment).
 */
export class Explorer<O> {
  readonly #fusers: readonly OperationFuser<O>[];
  readonly #budget: ExplorationBudget;
  readonly #search: BlockSearch<O>;
  /** Operations of the segment already fed to the search (lazy incremental feeding). */
  #fed = 0;

  constructor(fusers: readonly OperationFuser<O>[], budget: ExplorationBudget, maxBlocks = DEFAULT_MAX_BLOCKS) {
    this.#fusers = fusers;
    this.#budget = budget;
    this.#search = new BlockSearch(fusers, maxBlocks);
  }

  /** Forgets the fed operations (after an execution: the remaining ones are fed again). */
  reset(): void {
    this.#search.reset();
    this.#fed = 0;
  }

  /** Explores the segment `operations` (relative) in `mode`. */
  explore(operations: readonly RelativeOperation[], mode: ExecutionMode): Exploration<O> {
    if (this.#budget.spent) return { kind: "unfused" };
    while (this.#fed < operations.length && this.#search.stillOptimizing) {
      const op = operations[this.#fed++];
      if (op !== undefined) this.#search.register(op.op);
    }
    if (mode === "lazy") {
      if (this.#search.stillOptimizing) return { kind: "continue" };
      this.#budget.count++;
      const len = Math.max(1, this.#search.coveredPrefix());
      const stoppedAt = this.#fed;
      const schedule = scheduleBlocks(relativeOps(operations, len), this.#fusers);
      return { kind: "completed", order: schedule.order, strategy: schedule.steps, len, stoppedAt };
    }
    this.#budget.count++;
    const schedule = scheduleBlocks(relativeOps(operations, operations.length), this.#fusers);
    this.reset();
    return { kind: "completed", order: schedule.order, strategy: schedule.steps, len: operations.length, stoppedAt: operations.length };
  }
}

function relativeOps(operations: readonly RelativeOperation[], len: number): OperationIr[] {
  const ops: OperationIr[] = [];
  for (let i = 0; i < len; i++) {
    const op = operations[i];
    if (op !== undefined) ops.push(op.op);
  }
  return ops;
}
