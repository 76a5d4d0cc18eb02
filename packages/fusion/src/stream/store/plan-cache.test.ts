import { describe, expect, it } from "vitest";
import { MemoryTuneStore } from "@weft/runtime";
import type { FusionDevice } from "../../device/fusion-device.js";
import type { FusionTensor } from "../../tensor/fusion-tensor.js";
import { createTestDevice, fromValues, reduce, scalar, unary } from "../../testing/index.js";
import type { TestHandle } from "../../testing/index.js";
import type { PlanCacheState } from "./plan-cache.js";
import { planCacheKey } from "./plan-cache.js";

/**
 * A step with two interleaved chains of different shapes and an independent reduction between
 * them: the plans reorder operations (so the persisted order matters), and hold fused blocks.
 */
async function step(device: FusionDevice<TestHandle>, seed: number): Promise<number[]> {
  const x = fromValues(device, [seed, seed + 1, seed + 2, seed + 3], [2, 2]);
  const y = fromValues(device, [seed, -seed, 1], [3]);
  const a = scalar(device, "add", x, 1);
  const b = unary(device, "neg", y);
  const s = reduce(device, "sum", x, [1]);
  const c = unary(device, "exp", a);
  const d = scalar(device, "mul", b, 2);
  for (const t of [a, b, x, y]) t.dispose();
  const out: FusionTensor[] = [c, d, s];
  const values: number[] = [];
  for (const t of out) values.push(...(await t.read()));
  for (const t of out) t.dispose();
  await device.syncAll();
  return values;
}

/** Plain JSON, as a file or IndexedDB gives it back. */
const roundTrip = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

describe("persisted plans (PlanCache)", () => {
  it("plans exported as JSON and imported into a fresh device run a repeated graph with 0 explorations", async () => {
    const a = createTestDevice().device;
    const want = await step(a, 1);
    expect(a.inspector.explorations).toBeGreaterThan(0);
    const state = roundTrip(a.planCache.export());
    expect(state.plans.length).toBe(a.inspector.plans);
    expect(state.plans.some((p) => p.order.some((position, i) => position !== i)), "a plan runs out of stream order").toBe(true);

    const b = createTestDevice().device;
    const result = b.planCache.import(state);
    expect(result).toEqual({ imported: state.plans.length, rejected: 0, reasons: [] });
    b.inspector.clearLog();
    expect(await step(b, 1)).toEqual(want);
    expect(b.inspector.explorations, "every plan came from the cache").toBe(0);
    a.inspector.clearLog();
    await step(a, 1);
    expect(b.inspector.composition(), "the same blocks as where they were explored").toEqual(a.inspector.composition());
    expect(b.memory().liveHandles).toBe(0);
  });

  it("plans of another library version or adapter are not loaded", async () => {
    const a = createTestDevice().device;
    await step(a, 2);
    const state = a.planCache.export();
    const b = createTestDevice("elementwise", { planCache: { adapter: "another adapter", store: new MemoryTuneStore() } }).device;
    expect(b.planCache.import(state).imported).toBe(0);
    expect(planCacheKey("test", "x", "1.0.0")).not.toBe(planCacheKey("test", "x", "1.0.1"));
    expect(b.inspector.plans).toBe(0);
  });

  it("a damaged plan is rejected with its reason, the others load, and values stay right", async () => {
    const a = createTestDevice().device;
    const want = await step(a, 3);
    const state = roundTrip(a.planCache.export()) as { plans: Record<string, unknown>[] } & PlanCacheState;
    const n = state.plans.length;
    const fused = state.plans.findIndex((p) => (p["steps"] as { kind: string }[]).some((s) => s.kind === "optimization"));
    expect(fused).toBeGreaterThanOrEqual(0);
    const damaged = roundTrip(state);
    const plans = damaged.plans as unknown as Record<string, unknown>[];
    const victim = plans[fused]!;
    const ops = victim["operations"] as { key: string }[];
    ops[0]!.key = ops[0]!.key + "|0fr";
    plans.push({ ...roundTrip(state.plans[fused]!), steps: [{ kind: "optimization", fuser: 7, len: 1 }] });
    plans.push({ ...roundTrip(state.plans[fused]!), order: [...(state.plans[fused]!["order"] as number[])].reverse() });
    plans.push({ nonsense: true });
    const b = createTestDevice().device;
    const result = b.planCache.import(damaged);
    expect(result.imported).toBe(n - 1);
    expect(result.rejected).toBe(4);
    expect(result.reasons.join("; ")).toMatch(/does not match its key/);
    expect(await step(b, 3)).toEqual(want);
  });

  it("persisting through a store: a second device loads what the first one wrote, within the plan bound", async () => {
    const store = new MemoryTuneStore<PlanCacheState>();
    const options = { planCache: { adapter: "test", store }, maxPlans: 2 };
    const a = createTestDevice("elementwise", options).device;
    await step(a, 4);
    expect(a.planCache.pending, "a write is scheduled after new plans").toBe(true);
    await a.planCache.flush();
    const records = await store.loadAll();
    expect([...records.keys()]).toEqual([a.planCache.key]);
    expect(records.get(a.planCache.key)?.plans.length).toBeLessThanOrEqual(2);

    const b = createTestDevice("elementwise", options).device;
    const loaded = await b.planCache.load();
    expect(loaded.imported).toBe(records.get(a.planCache.key)?.plans.length);
    expect(b.inspector.plans).toBeLessThanOrEqual(2);
  });

  it("a write nobody awaits (dispose's, the timer's) that fails is dropped, never an unhandled rejection; an awaited flush rejects to its caller", async () => {
    class FailingStore extends MemoryTuneStore<PlanCacheState> {
      override async put(): Promise<void> {
        throw new Error("disk full");
      }
    }
    const unhandled: unknown[] = [];
    const hear = (reason: unknown): void => void unhandled.push(reason);
    process.on("unhandledRejection", hear);
    try {
      const a = createTestDevice("elementwise", { planCache: { adapter: "test", store: new FailingStore() } }).device;
      await step(a, 4);
      expect(a.planCache.pending, "a write is scheduled after new plans").toBe(true);
      a.dispose(); // starts the pending write in the background: it fails
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled, "no unhandled rejection").toEqual([]);
      const b = createTestDevice("elementwise", { planCache: { adapter: "test", store: new FailingStore() } }).device;
      await step(b, 4);
      await expect(b.planCache.flush(), "an awaited flush hears the failure").rejects.toThrow("disk full");
      b.dispose();
    } finally {
      process.off("unhandledRejection", hear);
    }
  });
});
