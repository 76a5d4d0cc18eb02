import type { RelativeOperation } from "../../ir/relative.js";
import type { OperationFuser } from "../../runtime/fusion-runtime.js";
import type { ExecutionStep, ExecutionStrategy } from "../store/execution-plan-store.js";
import type { ExecutionMode } from "./policy.js";

/**
 * What one exploration produced. Burn's `ExplorationAction`.
 * - `continue`: lazy, a fuser is still open; wait for more operations.
 * - `completed`: a strategy for the prefix `[0, len)`; `stoppedAt` is how many operations had been
 *   fed when every fuser closed (the operations `[len, stoppedAt)` become the plan's trigger).
 * - `unfused`: the exploration budget is spent; run the whole segment unfused in stream order
 *   (never cached).
 */
export type Exploration<O> =
  | { readonly kind: "continue" }
  | { readonly kind: "completed"; readonly strategy: ExecutionStrategy<O>; readonly len: number; readonly stoppedAt: number }
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
 * Finds how to execute a segment with the backend's fusers. Burn's `Explorer` over a *linear
 * greedy search* instead of Burn's block DAG (a documented simplification):
 *
 * - lazy: operations are fed incrementally to every fuser; while one is open, wait. When all are
 *   closed, the best ready fuser (highest score, then first) gives one fused block over the prefix
 *   it accepted; if none is ready, the operations accepted before the closing one (at least one)
 *   run unfused.
 * - sync: the whole segment is covered: from each position, fusers are fed the rest; the best ready
 *   fuser's prefix becomes a block, or one operation runs unfused; repeat (bug P10: a sync plan
 *   covers the whole segment, so the next identical sync finds it).
 *
 * Blocks never reorder operations, so every strategy is a valid execution order (stream order),
 * and every plan covers a prefix `[0, n)` of the segment.
 *
 * **Bound.** Holds the stream's fusers and a count of the operations fed since the last reset.
 */
export class Explorer<O> {
  readonly #fusers: OperationFuser<O>[];
  readonly #budget: ExplorationBudget;
  /** Operations of the segment already fed to the fusers (lazy incremental feeding). */
  #fed = 0;

  constructor(fusers: OperationFuser<O>[], budget: ExplorationBudget) {
    this.#fusers = fusers;
    this.#budget = budget;
  }

  /** Forgets the fed operations (after an execution: the remaining ones are fed again). */
  reset(): void {
    for (const f of this.#fusers) f.reset();
    this.#fed = 0;
  }

  #anyOpen(): boolean {
    return this.#fusers.some((f) => f.status() === "open");
  }

  #best(): OperationFuser<O> | undefined {
    let best: OperationFuser<O> | undefined;
    let score = -Infinity;
    for (const f of this.#fusers) {
      const p = f.properties();
      if (p.ready && f.len() > 0 && p.score > score) {
        best = f;
        score = p.score;
      }
    }
    return best;
  }

  /** Explores the segment `operations` (relative) in `mode`. */
  explore(operations: readonly RelativeOperation[], mode: ExecutionMode): Exploration<O> {
    if (this.#budget.spent) return { kind: "unfused" };
    while (this.#fed < operations.length && this.#anyOpen()) {
      const op = operations[this.#fed++];
      if (op !== undefined) for (const f of this.#fusers) if (f.status() === "open") f.fuse(op.op);
    }
    if (mode === "lazy") {
      if (this.#anyOpen()) return { kind: "continue" };
      this.#budget.count++;
      const best = this.#best();
      const stoppedAt = this.#fed;
      if (best !== undefined) {
        const len = best.len();
        return { kind: "completed", strategy: [{ kind: "optimization", optimization: best.finish(), len }], len, stoppedAt };
      }
      const len = Math.max(1, stoppedAt - 1);
      return { kind: "completed", strategy: [{ kind: "operations", len }], len, stoppedAt };
    }
    this.#budget.count++;
    const steps: ExecutionStep<O>[] = [];
    let pos = 0;
    let first = true;
    while (pos < operations.length) {
      if (!first) {
        for (const f of this.#fusers) f.reset();
        for (let i = pos; i < operations.length && this.#anyOpen(); i++) {
          const op = operations[i];
          if (op !== undefined) for (const f of this.#fusers) if (f.status() === "open") f.fuse(op.op);
        }
      }
      first = false;
      const best = this.#best();
      if (best !== undefined) {
        const len = best.len();
        steps.push({ kind: "optimization", optimization: best.finish(), len });
        pos += len;
      } else {
        const last = steps[steps.length - 1];
        if (last?.kind === "operations") steps[steps.length - 1] = { kind: "operations", len: last.len + 1 };
        else steps.push({ kind: "operations", len: 1 });
        pos += 1;
      }
    }
    this.reset();
    return { kind: "completed", strategy: steps, len: operations.length, stoppedAt: operations.length };
  }
}
