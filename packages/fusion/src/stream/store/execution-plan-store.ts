import type { Optimization } from "../../runtime/fusion-runtime.js";
import type { RelativeOperation } from "../../ir/relative.js";

/** Identifies an {@link ExecutionPlan} in its {@link ExecutionPlanStore}. */
export type ExecutionPlanId = number;

/**
 * When a cached plan runs, once its operations matched the segment prefix. Burn's
 * `ExecutionTrigger`.
 * - `on-operations`: when the operations that followed it at exploration arrive (relative keys).
 * - `on-sync`: when a drain reaches the end of the segment exactly at the plan's end.
 * - `always`: as soon as the plan matched (nothing followed it when it was explored lazily).
 */
export type ExecutionTrigger =
  | { readonly kind: "on-operations"; readonly keys: readonly string[] }
  | { readonly kind: "on-sync" }
  | { readonly kind: "always" };

/**
 * One step of an {@link ExecutionStrategy}, covering the next `len` operations in stream order:
 * a fused block, or operations run one by one (unfused).
 */
export type ExecutionStep<O> =
  | { readonly kind: "optimization"; readonly optimization: O; readonly len: number }
  | { readonly kind: "operations"; readonly len: number };

/**
 * How a plan executes the prefix `[0, n)` it covers: consecutive steps in stream order whose
 * lengths sum to `n`. (Our explorer is linear, so steps never reorder operations.)
 */
export type ExecutionStrategy<O> = readonly ExecutionStep<O>[];

/**
 * A cached decision: for this relative operation sequence, run this strategy. Burn's
 * `ExecutionPlan`.
 *
 * **Invariant.** `strategy` covers exactly `operations.length` operations.
 */
export interface ExecutionPlan<O> {
  readonly id: ExecutionPlanId;
  /** The relative operations the plan covers, a segment prefix. */
  readonly operations: readonly RelativeOperation[];
  /** When to run it; deduplicated, grows as the same operations are explored with other tails. */
  readonly triggers: ExecutionTrigger[];
  readonly strategy: ExecutionStrategy<O>;
  /**
   * The largest relative shape id the plan relies on (its operations', or an optimization's own
   * `maxRelativeShapeId`): the bound check of bug P12.
   */
  readonly maxRelativeShapeId: number;
  /** The interned ids ({@link ExecutionPlanStore.keyId}) of `operations`' keys, what validators compare. */
  readonly keyIds: readonly number[];
  /** Per trigger (same index): the interned ids of an `on-operations` trigger's keys, else `undefined`. */
  readonly triggerKeyIds: (readonly number[] | undefined)[];
}

function sameTrigger(a: ExecutionTrigger, b: ExecutionTrigger): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind !== "on-operations" || b.kind !== "on-operations") return true;
  return a.keys.length === b.keys.length && a.keys.every((k, i) => k === b.keys[i]);
}

/**
 * The execution plans of one device, shared by all of its streams. Burn's `ExecutionPlanStore`.
 *
 * @remarks
 * **Why.** Exploration (feeding fusers, picking blocks) is the expensive part of the engine; a
 * repeated graph must find its plan here and run without exploring again.
 * **Interned keys.** Every relative key a plan or trigger names gets a small integer id
 * ({@link ExecutionPlanStore.keyId}); the policy resolves each incoming operation's key once and
 * its validators compare integers. A key no plan names resolves to `-1`, which matches nothing.
 * **Bound.** One plan per distinct explored relative sequence; plans are never evicted (a model
 * has finitely many graph shapes). The index holds one list per distinct first operation; the
 * interned keys are exactly the keys the plans and their triggers name.
 */
export class ExecutionPlanStore<O> {
  readonly #plans: ExecutionPlan<O>[] = [];
  /** First relative op key → ids of the plans starting with it. */
  readonly #index = new Map<string, ExecutionPlanId[]>();
  /** Relative key → interned id; one entry per distinct key named by a plan or trigger. */
  readonly #keyIds = new Map<string, number>();

  /** The interned id of `key`, or `-1` when no plan or trigger names it (it matches nothing). */
  keyId(key: string): number {
    return this.#keyIds.get(key) ?? -1;
  }

  #intern(key: string): number {
    let id = this.#keyIds.get(key);
    if (id === undefined) {
      id = this.#keyIds.size;
      this.#keyIds.set(key, id);
    }
    return id;
  }

  #triggerKeyIds(trigger: ExecutionTrigger): readonly number[] | undefined {
    return trigger.kind === "on-operations" ? trigger.keys.map((k) => this.#intern(k)) : undefined;
  }

  /** Number of plans stored. */
  get size(): number {
    return this.#plans.length;
  }

  /** The plan `id`. */
  get(id: ExecutionPlanId): ExecutionPlan<O> {
    const plan = this.#plans[id];
    if (plan === undefined) throw new RangeError(`no execution plan ${id}`);
    return plan;
  }

  /** Ids of the plans whose first operation has key `firstKey`. */
  find(firstKey: string): readonly ExecutionPlanId[] {
    return this.#index.get(firstKey) ?? [];
  }

  /** The plan covering exactly `operations`, if one exists. */
  findExact(operations: readonly RelativeOperation[]): ExecutionPlanId | undefined {
    const first = operations[0];
    if (first === undefined) return undefined;
    return this.find(first.key).find((id) => {
      const plan = this.get(id);
      return plan.operations.length === operations.length && plan.operations.every((op, i) => op.key === operations[i]?.key);
    });
  }

  /** Stores a new plan; returns its id. */
  add(
    operations: readonly RelativeOperation[],
    strategy: ExecutionStrategy<O>,
    trigger: ExecutionTrigger,
  ): ExecutionPlanId {
    const first = operations[0];
    if (first === undefined) throw new RangeError("an execution plan covers at least one operation");
    let max = -1;
    for (const op of operations) max = Math.max(max, op.maxShapeId);
    for (const step of strategy) {
      if (step.kind === "optimization") {
        const own = (step.optimization as Partial<Optimization<unknown>>).maxRelativeShapeId;
        if (own !== undefined) max = Math.max(max, own);
      }
    }
    const id = this.#plans.length;
    this.#plans.push({
      id,
      operations,
      triggers: [trigger],
      strategy,
      maxRelativeShapeId: max,
      keyIds: operations.map((op) => this.#intern(op.key)),
      triggerKeyIds: [this.#triggerKeyIds(trigger)],
    });
    const list = this.#index.get(first.key);
    if (list === undefined) this.#index.set(first.key, [id]);
    else list.push(id);
    return id;
  }

  /** Adds `trigger` to plan `id` unless it already has it. */
  addTrigger(id: ExecutionPlanId, trigger: ExecutionTrigger): void {
    const plan = this.get(id);
    if (plan.triggers.some((t) => sameTrigger(t, trigger))) return;
    plan.triggers.push(trigger);
    plan.triggerKeyIds.push(this.#triggerKeyIds(trigger));
  }
}
