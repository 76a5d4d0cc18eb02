import type { ExecutionPlanId, ExecutionPlanStore } from "../store/execution-plan-store.js";
import { OperationsValidator } from "./validator.js";

/** Lazy: an operation was just added; sync: the segment must be emptied now. Burn's `ExecutionMode`. */
export type ExecutionMode = "lazy" | "sync";

/**
 * What the {@link Policy} advises for the current segment. Burn's `Action`.
 * - `explore`: no cached plan fits; run the explorer.
 * - `defer`: a cached plan may still fit once more operations arrive (lazy only).
 * - `execute`: run cached plan `plan` on the segment's prefix.
 */
export type Action = { readonly kind: "explore" } | { readonly kind: "defer" } | { readonly kind: "execute"; readonly plan: ExecutionPlanId };

interface Candidate {
  readonly plan: ExecutionPlanId;
  readonly validator: OperationsValidator;
}

interface Available {
  readonly plan: ExecutionPlanId;
  readonly size: number;
  readonly triggers: { readonly validator: OperationsValidator | undefined; readonly always: boolean }[];
}

/**
 * Decides, from the cached plans, whether a stream's segment should explore, wait or execute.
 * Burn's `Policy` (one per stream).
 *
 * @remarks
 * **How.** Plans whose operations still match the segment prefix are *candidates*; once fully
 * matched they become *available* and their triggers are watched on the operations that follow.
 * A plan is *found* when an `on-operations` trigger matched or it has an `always` trigger.
 * **Cost.** Each update compares one key per live candidate and trigger: small, since candidates
 * are only the plans starting with the segment's first operation.
 * **Bound.** Its lists hold plans of the store matching the current segment; `reset()` clears them.
 */
export class Policy<O> {
  #candidates: Candidate[] = [];
  #availables: Available[] = [];
  #found: { plan: ExecutionPlanId; size: number } | undefined;
  #numOperations = 0;

  /** Forgets the segment (after an execution; the caller re-feeds the remaining operations). */
  reset(): void {
    this.#candidates = [];
    this.#availables = [];
    this.#found = undefined;
    this.#numOperations = 0;
  }

  /** Feeds the next operation of the segment (its relative key). */
  update(store: ExecutionPlanStore<O>, key: string): void {
    const position = this.#numOperations;
    if (position === 0) {
      this.#candidates = store.find(key).map((plan) => ({
        plan,
        validator: new OperationsValidator(store.get(plan).operations.map((o) => o.key)),
      }));
    }
    // Triggers of plans that were already available watch the operations after them.
    for (const available of this.#availables) {
      for (const trigger of available.triggers) trigger.validator?.update(key, position - available.size);
    }
    const still: Candidate[] = [];
    for (const candidate of this.#candidates) {
      candidate.validator.update(key, position);
      const state = candidate.validator.state;
      if (state.kind === "validating") still.push(candidate);
      else if (state.kind === "found") {
        const plan = store.get(candidate.plan);
        this.#availables.push({
          plan: candidate.plan,
          size: state.size,
          triggers: plan.triggers
            .filter((t) => t.kind !== "on-sync")
            .map((t) => ({
              validator: t.kind === "on-operations" ? new OperationsValidator(t.keys) : undefined,
              always: t.kind === "always",
            })),
        });
      }
    }
    this.#candidates = still;
    this.#numOperations = position + 1;
    if (this.#found === undefined) {
      for (const available of this.#availables) {
        if (available.triggers.some((t) => t.always || t.validator?.state.kind === "found")) {
          this.#found = { plan: available.plan, size: available.size };
          break;
        }
      }
    }
  }

  /** The advice for a segment of `numOperations` operations in `mode`. */
  action(numOperations: number, mode: ExecutionMode): Action {
    if (this.#found !== undefined && this.#found.size <= numOperations) return { kind: "execute", plan: this.#found.plan };
    if (mode === "lazy") {
      if (this.#candidates.length > 0) return { kind: "defer" };
      for (const available of this.#availables) {
        if (available.size === numOperations) return { kind: "defer" };
        if (available.triggers.some((t) => t.validator?.state.kind === "validating")) return { kind: "defer" };
      }
      return { kind: "explore" };
    }
    const exact = this.#availables.find((a) => a.size === numOperations);
    return exact === undefined ? { kind: "explore" } : { kind: "execute", plan: exact.plan };
  }
}
