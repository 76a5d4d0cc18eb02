import { type CacheStats, LruCache } from "@weft/environment";
import type { Optimization } from "../../runtime/fusion-runtime.js";
import type { RelativeOperation } from "../../ir/relative.js";
import type { KeyNode } from "../../ir/relative-key.js";
import type { OperationFuser } from "../../runtime/fusion-runtime.js";
import type { ExecutionPlanState } from "./plan-state.js";
import { planFromState, planToState } from "./plan-state.js";

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
 * One step of an {@link ExecutionStrategy}, covering the next `len` operations of the plan's
 * execution order: a fused block, or operations run one by one (unfused). A fused block names
 * the stream fuser (its index in `FusionRuntime.fusers()`) that built it, so a persisted plan can
 * build it again (`plan-state.ts`).
 */
export type ExecutionStep<O> =
  | { readonly kind: "optimization"; readonly optimization: O; readonly fuser: number; readonly len: number }
  | { readonly kind: "operations"; readonly len: number };

/**
 * How a plan executes the prefix `[0, n)` it covers: consecutive steps over the plan's
 * {@link ExecutionPlan.order} whose lengths sum to `n`.
 */
export type ExecutionStrategy<O> = readonly ExecutionStep<O>[];

/**
 * A cached decision: for this relative operation sequence, run this strategy. Burn's
 * `ExecutionPlan`.
 *
 * **Invariants.** `order` is a permutation of `0 … operations.length − 1` that respects every
 * hazard of the operations (read after write, free after read); `strategy` cuts it into steps
 * whose lengths sum to `operations.length`.
 */
export interface ExecutionPlan<O> {
  readonly id: ExecutionPlanId;
  /** The relative operations the plan covers, a segment prefix, in stream order. */
  readonly operations: readonly RelativeOperation[];
  /**
   * The execution order: segment positions in the order they run (independent blocks may run out
   * of stream order, never against a hazard).
   */
  readonly order: readonly number[];
  /** When to run it; deduplicated, grows as the same operations are explored with other tails. */
  readonly triggers: ExecutionTrigger[];
  readonly strategy: ExecutionStrategy<O>;
  /**
   * The largest relative shape id the plan relies on (its operations', or an optimization's own
   * `maxRelativeShapeId`): the bound check of docs/pitfalls.md#p12.
   */
  readonly maxRelativeShapeId: number;
  /** The interned ids ({@link ExecutionPlanStore.keyId}) of `operations`' keys, what validators compare. */
  readonly keyIds: readonly number[];
  /** Per trigger (same index): the interned ids of an `on-operations` trigger's keys, else `undefined`. */
  readonly triggerKeyIds: (readonly number[] | undefined)[];
}

/** Throws unless `order` is a permutation of `0 … n − 1` that `strategy`'s steps cover exactly. */
function checkOrder(n: number, order: readonly number[], strategy: ExecutionStrategy<unknown>): void {
  const seen = new Uint8Array(n);
  let ok = order.length === n;
  for (const p of order) {
    if (!Number.isInteger(p) || p < 0 || p >= n || seen[p] === 1) ok = false;
    else seen[p] = 1;
  }
  let covered = 0;
  for (const step of strategy) covered += step.len;
  if (!ok || covered !== n) throw new RangeError(`an execution plan's order must be a permutation of its ${n} operations, covered by its steps`);
}

function sameTrigger(a: ExecutionTrigger, b: ExecutionTrigger): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind !== "on-operations" || b.kind !== "on-operations") return true;
  return a.keys.length === b.keys.length && a.keys.every((k, i) => k === b.keys[i]);
}

/** What {@link ExecutionPlanStore.importState} did with persisted plans. */
export interface PlanImport {
  /** Plans added (or, already held, given the persisted triggers). */
  readonly imported: number;
  /** Plans left out, with why (a stale or damaged cache; the first few reasons). */
  readonly rejected: number;
  readonly reasons: readonly string[];
}

/** Default {@link ExecutionPlanStore} capacity: plans kept per device. */
export const DEFAULT_MAX_PLANS = 1024;

/** What `find` answers for a first key no plan starts with (one shared empty list). */
const NO_PLANS: readonly ExecutionPlanId[] = [];

/**
 * The execution plans of one device, shared by all of its streams. Burn's `ExecutionPlanStore`.
 *
 * @remarks
 * **Why.** Exploration (feeding fusers, picking blocks) is the expensive part of the engine; a
 * repeated graph must find its plan here and run without exploring again.
 * **Interned keys.** Every relative key a plan or trigger names gets a small integer id
 * ({@link ExecutionPlanStore.keyId}); the policy resolves each incoming operation's key once and
 * its validators compare integers. A key no plan names resolves to `-1`, which matches nothing.
 * Ids are never reused, so a validator of an evicted plan can never match another key.
 * **Bound.** At most `capacity` plans (default {@link DEFAULT_MAX_PLANS}); relative keys hold no
 * shapes or scalar values, so plans grow only with distinct graph *structures*, and a program
 * that keeps producing new ones (generated code, ever-changing control flow) evicts the least
 * recently used plan (its optimizations and their launch caches with it). An evicted plan's id
 * is gone: {@link ExecutionPlanStore.tryGet} answers `undefined` and the policy of a stream that
 * was matching it drops it (the segment explores again). The index holds one list per distinct
 * first key of a held plan; the interned keys are exactly the keys held plans and their
 * triggers name (reference-counted).
 */
export class ExecutionPlanStore<O> {
  /**
   * Held plans by id in recency order; evicting one also forgets its index entry and its keys.
   * An `LruCache`: re-inserting every used plan into a `Map` (a delete, then a set) rebuilt the
   * `Map`'s table every few hundred uses, in the old generation (docs/performance.md#what-a-request-leaves-behind).
   */
  readonly #plans: LruCache<ExecutionPlanId, ExecutionPlan<O>>;
  /** First relative op key → ids of the held plans starting with it. */
  readonly #index = new Map<string, ExecutionPlanId[]>();
  /** Relative key → interned id and how many plan keys/trigger keys name it. */
  readonly #keyIds = new Map<string, { readonly id: number; refs: number }>();
  #nextId = 0;
  #nextKeyId = 0;
  #added = 0;
  /** Called after a plan was stored (a persisting `PlanCache` schedules a write). */
  onAdded: (() => void) | undefined;

  constructor(capacity: number = DEFAULT_MAX_PLANS) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) {
      throw new RangeError(`ExecutionPlanStore: capacity must be a positive integer, got ${capacity}`);
    }
    this.#plans = new LruCache(capacity, { onEvict: (_id, plan) => this.#forget(plan) });
  }

  /** The interned id of `key`, or `-1` when no plan or trigger names it (it matches nothing). */
  keyId(key: string): number {
    return this.#keyIds.get(key)?.id ?? -1;
  }

  /**
   * {@link ExecutionPlanStore.keyId} of `node.key`, remembered on the node until this store's
   * interned keys change (`#keyVersion`): what the policy asks for every recorded operation.
   */
  keyIdOf(node: KeyNode): number {
    if (node.internedBy === this && node.internedAt === this.#keyVersion) return node.internedId;
    const id = this.keyId(node.key);
    node.internedBy = this;
    node.internedAt = this.#keyVersion;
    node.internedId = id;
    return id;
  }

  /** Bumped whenever a key is interned anew or forgotten (what `keyIdOf`'s memo checks). */
  #keyVersion = 0;

  #intern(key: string): number {
    let entry = this.#keyIds.get(key);
    if (entry === undefined) {
      entry = { id: this.#nextKeyId++, refs: 0 };
      this.#keyIds.set(key, entry);
      this.#keyVersion++;
    }
    entry.refs++;
    return entry.id;
  }

  #unintern(key: string): void {
    const entry = this.#keyIds.get(key);
    if (entry === undefined) return;
    if (--entry.refs <= 0) {
      this.#keyIds.delete(key);
      this.#keyVersion++;
    }
  }

  #triggerKeyIds(trigger: ExecutionTrigger): readonly number[] | undefined {
    return trigger.kind === "on-operations" ? trigger.keys.map((k) => this.#intern(k)) : undefined;
  }

  /** Number of plans held. */
  get size(): number {
    return this.#plans.size;
  }

  /** Plans evicted so far (a policy re-checks its plans only when this changed). */
  get evictions(): number {
    return this.#plans.evictions;
  }

  /** Interned relative keys held (bounded by the held plans' keys). */
  get internedKeys(): number {
    return this.#keyIds.size;
  }

  /** The plan `id`; throws a `RangeError` when it does not exist (never did, or was evicted). */
  get(id: ExecutionPlanId): ExecutionPlan<O> {
    const plan = this.#plans.peek(id);
    if (plan === undefined) throw new RangeError(`no execution plan ${id} (never stored, or evicted)`);
    return plan;
  }

  /** The plan `id`, or `undefined` when it was evicted. */
  tryGet(id: ExecutionPlanId): ExecutionPlan<O> | undefined {
    return this.#plans.peek(id);
  }

  /** Whether plan `id` is held. */
  has(id: ExecutionPlanId): boolean {
    return this.#plans.has(id);
  }

  /** Records that the cached plan `id` runs (without exploring): a hit, and its most recent use. */
  use(id: ExecutionPlanId): void {
    // `get` refreshes it (a relink, nothing allocated) and counts the hit: the store's hits are the
    // cache's, since `use` is the only caller of `get` (the store's own lookups `peek`).
    this.#plans.get(id);
  }

  /** Plans held, capacity, hits (cached plans run), misses (plans stored) and evictions. */
  stats(): CacheStats {
    const plans = this.#plans.stats();
    return { size: plans.size, capacity: plans.capacity, hits: plans.hits, misses: this.#added, evictions: plans.evictions };
  }

  /** Ids of the plans whose first operation has key `firstKey`. */
  find(firstKey: string): readonly ExecutionPlanId[] {
    return this.#index.get(firstKey) ?? NO_PLANS;
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

  /**
   * Stores a new plan running `operations` in `order` with `strategy` (evicting the least recently
   * used beyond the capacity); returns its id.
   * @throws RangeError when `order` is not a permutation of the operations' positions or the
   *   strategy does not cover it exactly (an explorer bug).
   */
  add(
    operations: readonly RelativeOperation[],
    order: readonly number[],
    strategy: ExecutionStrategy<O>,
    trigger: ExecutionTrigger,
  ): ExecutionPlanId {
    const first = operations[0];
    if (first === undefined) throw new RangeError("an execution plan covers at least one operation");
    checkOrder(operations.length, order, strategy);
    let max = -1;
    for (const op of operations) max = Math.max(max, op.maxShapeId);
    for (const step of strategy) {
      if (step.kind === "optimization") {
        const own = (step.optimization as Partial<Optimization<unknown>>).maxRelativeShapeId;
        if (own !== undefined) max = Math.max(max, own);
      }
    }
    const id = this.#nextId++;
    this.#added++;
    this.#plans.set(id, {
      id,
      operations,
      order,
      triggers: [trigger],
      strategy,
      maxRelativeShapeId: max,
      keyIds: operations.map((op) => this.#intern(op.key)),
      triggerKeyIds: [this.#triggerKeyIds(trigger)],
    });
    const list = this.#index.get(first.key);
    if (list === undefined) this.#index.set(first.key, [id]);
    else list.push(id);
    this.onAdded?.();
    return id;
  }

  /** The held plans in their serialisable form (`plan-state.ts`), least recently used first. */
  exportState(): ExecutionPlanState[] {
    return [...this.#plans.values()].map(planToState);
  }

  /**
   * Adds persisted plans (least recently used first, as {@link exportState} lists them), each
   * rebuilt with the stream fusers `prototypes` and checked (`planFromState`); a plan whose
   * operations are already held only adds its triggers. Beyond the capacity the least recently
   * used are evicted as usual, so the newest persisted plans survive.
   */
  importState(states: readonly unknown[], prototypes: readonly OperationFuser<O>[]): PlanImport {
    let imported = 0;
    const reasons: string[] = [];
    for (const state of states) {
      const plan = planFromState(state, prototypes);
      if (typeof plan === "string") {
        reasons.push(plan);
        continue;
      }
      const [first, ...rest] = plan.triggers;
      if (first === undefined) continue;
      let id = this.findExact(plan.operations);
      if (id === undefined) id = this.add(plan.operations, plan.order, plan.strategy, first);
      else this.addTrigger(id, first);
      for (const trigger of rest) this.addTrigger(id, trigger);
      imported++;
    }
    return { imported, rejected: reasons.length, reasons: reasons.slice(0, 8) };
  }

  /** Adds `trigger` to plan `id` unless it already has it. */
  addTrigger(id: ExecutionPlanId, trigger: ExecutionTrigger): void {
    const plan = this.get(id);
    if (plan.triggers.some((t) => sameTrigger(t, trigger))) return;
    plan.triggers.push(trigger);
    plan.triggerKeyIds.push(this.#triggerKeyIds(trigger));
  }

  /** An evicted plan leaves the index, and its keys are uninterned (the cache counts the eviction). */
  #forget(plan: ExecutionPlan<O>): void {
    const id = plan.id;
    const firstKey = plan.operations[0]?.key;
    if (firstKey !== undefined) {
      const list = this.#index.get(firstKey);
      const at = list?.indexOf(id) ?? -1;
      if (list !== undefined && at >= 0) list.splice(at, 1);
      if (list !== undefined && list.length === 0) this.#index.delete(firstKey);
    }
    for (const op of plan.operations) this.#unintern(op.key);
    for (const trigger of plan.triggers) if (trigger.kind === "on-operations") for (const k of trigger.keys) this.#unintern(k);
  }
}
