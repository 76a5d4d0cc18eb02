import type { ExecutionPlanId, ExecutionPlanStore } from "../store/execution-plan-store.js";
import { truncateInPlace } from "../arrays.js";
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

/** A plan whose operations may still match the segment; reused across segments (see `Policy`). */
interface Candidate {
  plan: ExecutionPlanId;
  readonly validator: OperationsValidator<number>;
}

/** One trigger of an available plan: `validator` watches an `on-operations` trigger's keys. */
interface WatchedTrigger {
  readonly validator: OperationsValidator<number> | undefined;
  readonly always: boolean;
}

interface Available {
  readonly plan: ExecutionPlanId;
  readonly size: number;
  readonly triggers: WatchedTrigger[];
}

const EXPLORE: Action = { kind: "explore" };
const DEFER: Action = { kind: "defer" };

/** Whether one of `triggers` fires: an `always` trigger, or an `on-operations` one fully matched. */
function fires(triggers: readonly WatchedTrigger[]): boolean {
  for (const t of triggers) if (t.always || t.validator?.state.kind === "found") return true;
  return false;
}

/** Whether one of `triggers` is an `on-operations` trigger still matching. */
function watching(triggers: readonly WatchedTrigger[]): boolean {
  for (const t of triggers) if (t.validator?.validating === true) return true;
  return false;
}

/**
 * Decides, from the cached plans, whether a stream's segment should explore, wait or execute.
 * Burn's `Policy` (one per stream).
 *
 * @remarks
 * **How.** Plans whose operations still match the segment prefix are *candidates*; once fully
 * matched they become *available* and their triggers are watched on the operations that follow.
 * A plan is *found* when an `on-operations` trigger matched or it has an `always` trigger.
 * **Cost.** Each update resolves the operation's key to its interned id once (one map lookup),
 * then compares one integer per live candidate and watched trigger; validators borrow the plan's
 * interned key arrays, and the candidate list is compacted in place (no allocation per update).
 * Candidates are only the plans starting with the segment's first operation.
 * **Bound.** Its lists hold plans of the store matching the current segment; `reset()` clears them.
 */
export class Policy<O> {
  /**
   * The live candidates are `#candidates[0, #candidateCount)`; the array is never truncated (setting
   * an array's length to 0 drops its store, and the next segment's pushes grew a new one).
   * Candidates that left the list wait in `#spare[0, #spareCount)` for the next segment, so a
   * segment's candidates (and their validators) are objects of earlier segments. **Bound.** Both
   * hold at most the most candidates one segment had (plans sharing a first operation).
   */
  readonly #candidates: Candidate[] = [];
  #candidateCount = 0;
  readonly #spare: Candidate[] = [];
  #spareCount = 0;
  readonly #availables: Available[] = [];
  #found: { plan: ExecutionPlanId; size: number } | undefined;
  #numOperations = 0;
  /** The store's eviction count when this policy last dropped evicted plans. */
  #seenEvictions = 0;

  /** Forgets the segment (after an execution; the caller re-feeds the remaining operations). */
  reset(): void {
    for (let i = 0; i < this.#candidateCount; i++) this.#free(this.#candidates[i] as Candidate);
    this.#candidateCount = 0;
    truncateInPlace(this.#availables, 0);
    this.#found = undefined;
    this.#numOperations = 0;
  }

  /**
   * Feeds the next operation of the segment: its relative key, and that key's interned id in
   * `store` when the caller has it (`ExecutionPlanStore.keyIdOf`).
   */
  update(store: ExecutionPlanStore<O>, key: string, id: number = store.keyId(key)): void {
    const position = this.#numOperations;
    if (position === 0) {
      const plans = store.find(key);
      for (const plan of plans) this.#candidates[this.#candidateCount++] = this.#candidate(plan, store.get(plan).keyIds);
    }
    // Triggers of plans that were already available watch the operations after them.
    for (const available of this.#availables) {
      for (const trigger of available.triggers) trigger.validator?.update(id, position - available.size);
    }
    const candidates = this.#candidates;
    const count = this.#candidateCount;
    let kept = 0;
    for (let c = 0; c < count; c++) {
      const candidate = candidates[c] as Candidate;
      candidate.validator.update(id, position);
      const state = candidate.validator.state;
      if (state.kind === "validating") {
        candidates[kept++] = candidate;
        continue;
      }
      this.#free(candidate);
      if (state.kind === "found") {
        const plan = store.tryGet(candidate.plan);
        if (plan === undefined) continue;
        const triggers: WatchedTrigger[] = [];
        for (let t = 0; t < plan.triggers.length; t++) {
          const trigger = plan.triggers[t];
          if (trigger === undefined || trigger.kind === "on-sync") continue;
          const ids = plan.triggerKeyIds[t];
          triggers.push({ validator: ids === undefined ? undefined : new OperationsValidator(ids), always: trigger.kind === "always" });
        }
        this.#availables.push({ plan: candidate.plan, size: state.size, triggers });
      }
    }
    this.#candidateCount = kept;
    this.#numOperations = position + 1;
    if (this.#found === undefined) {
      for (const available of this.#availables) {
        if (fires(available.triggers)) {
          this.#found = { plan: available.plan, size: available.size };
          break;
        }
      }
    }
  }

  /** A candidate for `plan` (its interned keys `keyIds`): a spare one restarted, or a new one. */
  #candidate(plan: ExecutionPlanId, keyIds: readonly number[]): Candidate {
    if (this.#spareCount === 0) return { plan, validator: new OperationsValidator(keyIds) };
    const spare = this.#spare[--this.#spareCount] as Candidate;
    spare.plan = plan;
    spare.validator.restart(keyIds);
    return spare;
  }

  /** `candidate` left the list: kept for a later segment. */
  #free(candidate: Candidate): void {
    this.#spare[this.#spareCount++] = candidate;
  }

  /**
   * The advice for a segment of `numOperations` operations in `mode`. Plans `store` no longer
   * holds (evicted while this segment was matching them) are never advised.
   */
  action(numOperations: number, mode: ExecutionMode, store?: ExecutionPlanStore<O>): Action {
    if (store !== undefined) this.#dropEvicted(store);
    if (this.#found !== undefined && this.#found.size <= numOperations) return { kind: "execute", plan: this.#found.plan };
    if (mode === "lazy") {
      if (this.#candidateCount > 0) return DEFER;
      for (const available of this.#availables) {
        if (available.size === numOperations) return DEFER;
        if (watching(available.triggers)) return DEFER;
      }
      return EXPLORE;
    }
    for (const available of this.#availables) if (available.size === numOperations) return { kind: "execute", plan: available.plan };
    return EXPLORE;
  }

  /** Forgets candidates, availables and the found plan that `store` evicted (free unless it evicted since). */
  #dropEvicted(store: ExecutionPlanStore<O>): void {
    if (store.evictions === this.#seenEvictions) return;
    this.#seenEvictions = store.evictions;
    if (this.#found !== undefined && !store.has(this.#found.plan)) this.#found = undefined;
    let kept = 0;
    for (let i = 0; i < this.#candidateCount; i++) {
      const c = this.#candidates[i] as Candidate;
      if (store.has(c.plan)) this.#candidates[kept++] = c;
      else this.#free(c);
    }
    this.#candidateCount = kept;
    kept = 0;
    for (const a of this.#availables) if (store.has(a.plan)) this.#availables[kept++] = a;
    this.#availables.length = kept;
  }
}
