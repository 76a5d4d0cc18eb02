import { describe, expect, it } from "vitest";
import type { RelativeOperation } from "../../ir/relative.js";
import { OperationConverter } from "../../ir/relative.js";
import type { OperationIr } from "../../ir/operation-ir.js";
import type { TensorId } from "../../ir/tensor-ir.js";
import { ExecutionPlanStore } from "../store/execution-plan-store.js";
import { Policy } from "./policy.js";

const op = (key: string): RelativeOperation => ({ op: { kind: "drop", tensor: { id: 0 as never, shape: [], dtype: "f32", status: "ReadWrite" } }, key, maxShapeId: -1 });

function storeWith(...plans: [string[], Parameters<ExecutionPlanStore<never>["add"]>[3]][]): ExecutionPlanStore<never> {
  const store = new ExecutionPlanStore<never>();
  for (const [keys, trigger] of plans) store.add(keys.map(op), keys.map((_, i) => i), [{ kind: "operations", len: keys.length }], trigger);
  return store;
}

function feed(policy: Policy<never>, store: ExecutionPlanStore<never>, keys: string[]): void {
  for (const k of keys) policy.update(store, k);
}

describe("Policy", () => {
  it("explores when no plan starts with the segment's first operation", () => {
    const store = storeWith([["a", "b"], { kind: "always" }]);
    const policy = new Policy<never>();
    feed(policy, store, ["x"]);
    expect(policy.action(1, "lazy")).toEqual({ kind: "explore" });
  });

  it("defers while a candidate still matches, and never executes a plan longer than the segment", () => {
    const store = storeWith([["a", "b", "c"], { kind: "always" }]);
    const policy = new Policy<never>();
    feed(policy, store, ["a", "b"]);
    expect(policy.action(2, "lazy"), "the plan may still match").toEqual({ kind: "defer" });
    expect(policy.action(2, "sync"), "a sync cannot wait for a 3-op plan on 2 ops").toEqual({ kind: "explore" });
  });

  it("executes a plan once its on-operations trigger arrives", () => {
    const store = storeWith([["a", "b"], { kind: "on-operations", keys: ["c", "d"] }]);
    const policy = new Policy<never>();
    feed(policy, store, ["a", "b", "c"]);
    expect(policy.action(3, "lazy"), "the trigger is half seen").toEqual({ kind: "defer" });
    feed(policy, store, ["d"]);
    expect(policy.action(4, "lazy")).toEqual({ kind: "execute", plan: 0 });
  });

  it("explores when the operations after a matched plan invalidate its trigger", () => {
    const store = storeWith([["a", "b"], { kind: "on-operations", keys: ["c"] }]);
    const policy = new Policy<never>();
    feed(policy, store, ["a", "b", "z"]);
    expect(policy.action(3, "lazy")).toEqual({ kind: "explore" });
  });

  it("executes an exactly matching plan at a sync, and an always plan at once", () => {
    const store = storeWith([["a", "b"], { kind: "on-sync" }], [["q"], { kind: "always" }]);
    const policy = new Policy<never>();
    feed(policy, store, ["a", "b"]);
    expect(policy.action(2, "lazy"), "lazily an on-sync plan only waits").toEqual({ kind: "defer" });
    expect(policy.action(2, "sync")).toEqual({ kind: "execute", plan: 0 });
    policy.reset();
    feed(policy, store, ["q"]);
    expect(policy.action(1, "lazy")).toEqual({ kind: "execute", plan: 1 });
  });

  it("the store deduplicates triggers and finds plans by their exact operations", () => {
    const store = storeWith([["a", "b"], { kind: "on-sync" }]);
    store.addTrigger(0, { kind: "on-sync" });
    store.addTrigger(0, { kind: "on-operations", keys: ["c"] });
    store.addTrigger(0, { kind: "on-operations", keys: ["c"] });
    expect(store.get(0).triggers).toHaveLength(2);
    expect(store.findExact(["a", "b"].map(op))).toBe(0);
    expect(store.findExact(["a"].map(op)), "a prefix is a different plan").toBeUndefined();
  });

  it("reused candidates (segment after segment, some invalidated mid-way) match exactly as fresh ones", () => {
    // Plans sharing first keys, so a segment starts with several candidates and drops some.
    const store = storeWith(
      [["a", "b", "c"], { kind: "always" }],
      [["a", "b", "d"], { kind: "always" }],
      [["a", "x"], { kind: "always" }],
      [["b", "c"], { kind: "always" }],
    );
    const segments: [string[], unknown][] = [
      [["a", "b", "d"], { kind: "execute", plan: 1 }],
      [["a", "x"], { kind: "execute", plan: 2 }],
      [["a", "b"], { kind: "defer" }],
      [["b", "c"], { kind: "execute", plan: 3 }],
      [["a", "b", "c"], { kind: "execute", plan: 0 }],
      [["a", "z"], { kind: "explore" }],
      [["a", "b", "d"], { kind: "execute", plan: 1 }],
    ];
    const reused = new Policy<never>();
    for (let round = 0; round < 3; round++) {
      for (const [keys, expected] of segments) {
        const fresh = new Policy<never>();
        feed(fresh, store, keys);
        feed(reused, store, keys);
        expect(fresh.action(keys.length, "lazy"), `fresh ${keys.join("")}`).toEqual(expected);
        expect(reused.action(keys.length, "lazy"), `reused ${keys.join("")} (round ${round})`).toEqual(expected);
        reused.reset();
      }
    }
  });

  it("a key's id memoized on its trie node follows the store: unknown, interned, evicted, interned again", () => {
    const converter = new OperationConverter();
    const drop = (id: number): OperationIr => ({ kind: "drop", tensor: { id: id as TensorId, shape: [4], dtype: "f32", status: "ReadWrite" } });
    const node = converter.convert(drop(7));
    const other = converter.convert(drop(8));
    const store = new ExecutionPlanStore<never>(1);
    const plan = (key: string): void => void store.add([op(key)], [0], [{ kind: "operations", len: 1 }], { kind: "always" });
    expect(store.keyIdOf(node), "no plan names the key").toBe(-1);
    expect(store.keyIdOf(node), "asked again: still unknown").toBe(-1);
    plan(node.key);
    const first = store.keyIdOf(node);
    expect(first, "interned once a plan names it (the memo of -1 is stale)").toBe(store.keyId(node.key));
    expect(first).toBeGreaterThanOrEqual(0);
    plan(other.key); // capacity 1: evicts the first plan and forgets its key
    expect(store.keyIdOf(node), "its plan was evicted").toBe(-1);
    expect(store.keyIdOf(other)).toBe(store.keyId(other.key));
    plan(node.key);
    const again = store.keyIdOf(node);
    expect(again, "interned again under a new id (ids are never reused)").toBe(store.keyId(node.key));
    expect(again).not.toBe(first);
    const elsewhere = new ExecutionPlanStore<never>();
    expect(elsewhere.keyIdOf(node), "another store's memo is not this one's").toBe(-1);
    expect(store.keyIdOf(node), "and asking the other store left this one's answer intact").toBe(again);
  });
});
