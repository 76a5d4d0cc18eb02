import type { OperationIr } from "../../ir/operation-ir.js";
import type { RelativeOperation } from "../../ir/relative.js";
import { mapOperation } from "../../ir/operation-descriptor.js";
import { OperationConverter } from "../../ir/relative.js";
import type { OperationFuser } from "../../runtime/fusion-runtime.js";
import { isValidSchedule, freshFuser } from "../execution/search/schedule-blocks.js";
import type { ExecutionPlan, ExecutionStep, ExecutionStrategy, ExecutionTrigger } from "./execution-plan-store.js";

/** One relative operation of a persisted plan: the operation, its key and its largest shape id. */
export interface RelativeOperationState {
  readonly op: OperationIr;
  readonly key: string;
  readonly maxShapeId: number;
}

/**
 * One step of a persisted plan: a fused block names the stream fuser that builds it (its index in
 * `FusionRuntime.fusers()`), never the optimization itself.
 */
export type ExecutionStepState =
  | { readonly kind: "optimization"; readonly fuser: number; readonly len: number }
  | { readonly kind: "operations"; readonly len: number };

/**
 * The serialisable form of an {@link ExecutionPlan}: plain JSON. Burn's `OptimizationState`
 * (docs/fusion-search.md, "Persisted plans").
 *
 * @remarks
 * **Why no optimization.** An optimization is a function of the relative operations its fuser was
 * fed (fusers decide on relative shapes and kinds only), so the plan keeps *which* fuser built
 * each block and {@link planFromState} feeds that fuser the block's operations again. Backends
 * need no serialisation of their own, and a plan can never carry a kernel its fuser would not
 * build.
 */
export interface ExecutionPlanState {
  readonly operations: readonly RelativeOperationState[];
  readonly order: readonly number[];
  readonly triggers: readonly ExecutionTrigger[];
  readonly steps: readonly ExecutionStepState[];
}

/** What {@link planFromState} rebuilt: a plan's parts, ready for `ExecutionPlanStore.add`. */
export interface RestoredPlan<O> {
  readonly operations: readonly RelativeOperation[];
  readonly order: readonly number[];
  readonly strategy: ExecutionStrategy<O>;
  readonly triggers: readonly ExecutionTrigger[];
}

/** The serialisable form of `plan`. */
export function planToState(plan: ExecutionPlan<unknown>): ExecutionPlanState {
  return {
    operations: plan.operations.map((o) => ({ op: o.op, key: o.key, maxShapeId: o.maxShapeId })),
    order: [...plan.order],
    triggers: plan.triggers.map((t) => (t.kind === "on-operations" ? { kind: t.kind, keys: [...t.keys] } : { kind: t.kind })),
    steps: plan.strategy.map((s) => (s.kind === "optimization" ? { kind: s.kind, fuser: s.fuser, len: s.len } : { kind: s.kind, len: s.len })),
  };
}

/**
 * Rebuilds a plan from its persisted form with the stream fusers `prototypes`, checking everything
 * a stale or damaged cache could get wrong; returns why it was rejected instead (a string).
 *
 * @remarks
 * **Checks.** Every operation is the relative form of itself with the key it was stored under
 * (converted again from scratch: same key, same largest shape id, same operation); the order is a
 * permutation its steps cover exactly and respects every hazard (`isValidSchedule`); each fused
 * block's fuser exists, accepts exactly the block's operations and is ready; triggers are
 * well-formed. So a plan that loads runs exactly what a fresh exploration could have chosen.
 */
export function planFromState<O>(state: unknown, prototypes: readonly OperationFuser<O>[]): RestoredPlan<O> | string {
  if (!isRecord(state) || !Array.isArray(state["operations"]) || !Array.isArray(state["order"]) || !Array.isArray(state["steps"]) || !Array.isArray(state["triggers"])) {
    return "not an execution plan";
  }
  const operations = state["operations"] as unknown[];
  if (operations.length === 0) return "a plan covers at least one operation";
  const restored: RelativeOperation[] = [];
  try {
    const converter = new OperationConverter();
    for (const o of operations) {
      if (!isRecord(o) || typeof o["key"] !== "string" || typeof o["maxShapeId"] !== "number" || !isRecord(o["op"])) return "a malformed operation";
      const op = o["op"] as unknown as OperationIr;
      // Relative shape ids as distinct dims (id 0 is dim 1): converting again gives the same ids.
      const again = converter.toRelative(mapOperation(op, (t) => ({ ...t, shape: t.shape.map((s) => (s === 0 ? 1 : s + 1)) }), (v) => v));
      if (again.key !== o["key"] || again.maxShapeId !== o["maxShapeId"] || JSON.stringify(again.op) !== JSON.stringify(op)) {
        return `operation ${restored.length} does not match its key`;
      }
      restored.push({ op, key: again.key, maxShapeId: again.maxShapeId });
    }
  } catch {
    return "an operation of an unknown form";
  }
  const order = state["order"] as unknown[];
  if (!isPermutation(order, restored.length)) return "the order is not a permutation of the operations";
  const stepStates = state["steps"] as unknown[];
  const strategy: ExecutionStep<O>[] = [];
  const ops = restored.map((o) => o.op);
  let at = 0;
  for (const s of stepStates) {
    if (!isRecord(s) || !Number.isSafeInteger(s["len"]) || (s["len"] as number) < 1) return "a malformed step";
    const len = s["len"] as number;
    const positions = order.slice(at, at + len);
    at += len;
    if (positions.length !== len) return "the steps cover more than the plan";
    if (s["kind"] === "operations") {
      strategy.push({ kind: "operations", len });
      continue;
    }
    const index = s["fuser"];
    const prototype = typeof index === "number" ? prototypes[index] : undefined;
    if (s["kind"] !== "optimization" || prototype === undefined) return "a step naming no fuser of this runtime";
    const fuser = freshFuser(prototype);
    for (const p of positions) fuser.fuse(ops[p] as OperationIr);
    if (fuser.len() !== len || !fuser.properties().ready) return `fuser ${index} no longer builds a block of ${len} operations`;
    strategy.push({ kind: "optimization", optimization: fuser.finish(), fuser: index as number, len });
  }
  if (at !== restored.length) return "the steps do not cover the plan";
  if (!isValidSchedule(ops, order, strategy)) return "the order breaks a hazard";
  const triggers: ExecutionTrigger[] = [];
  for (const t of state["triggers"] as unknown[]) {
    if (!isRecord(t)) return "a malformed trigger";
    if (t["kind"] === "always" || t["kind"] === "on-sync") triggers.push({ kind: t["kind"] });
    else if (t["kind"] === "on-operations" && Array.isArray(t["keys"]) && t["keys"].every((k) => typeof k === "string")) {
      triggers.push({ kind: "on-operations", keys: t["keys"] as string[] });
    } else return "a malformed trigger";
  }
  if (triggers.length === 0) return "a plan without trigger";
  return { operations: restored, order, strategy, triggers };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isPermutation(order: readonly unknown[], n: number): order is number[] {
  if (order.length !== n) return false;
  const seen = new Uint8Array(n);
  for (const p of order) {
    if (typeof p !== "number" || !Number.isInteger(p) || p < 0 || p >= n || seen[p] === 1) return false;
    seen[p] = 1;
  }
  return true;
}
