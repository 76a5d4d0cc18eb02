import { describe, expect, it } from "vitest";
import type { FusionDevice } from "../../device/fusion-device.js";
import type { FusionTensor } from "../../tensor/fusion-tensor.js";
import { ElementwiseFuser, TappedFuser, TestRuntime, binary, createTestDevice, fromValues, reduce, scalar, unary } from "../../testing/index.js";
import type { TestHandle } from "../../testing/index.js";
import { FusionDevice as Device } from "../../device/fusion-device.js";

/** One chain: upload, 5 elementwise ops, intermediates disposed, a reduction, everything freed. */
function chainOnce(device: FusionDevice<TestHandle>, seed: number, out: FusionTensor[]): void {
  const x = fromValues(device, [seed, seed + 1, seed + 2, seed + 3], [2, 2]);
  const a = unary(device, "exp", x);
  const b = scalar(device, "mul", a, seed);
  const c = binary(device, "add", b, x);
  const d = unary(device, "neg", c);
  const e = scalar(device, "sub", d, 1);
  for (const t of [a, b, c, d, x]) t.dispose();
  out.push(reduce(device, "sum", e, [1]));
  e.dispose();
}

async function pass(device: FusionDevice<TestHandle>, chains: number): Promise<number[]> {
  const results: FusionTensor[] = [];
  for (let i = 0; i < chains; i++) chainOnce(device, i % 5, results);
  const values: number[] = [];
  for (const r of results) values.push(...(await r.read()));
  for (const r of results) r.dispose();
  await device.syncAll();
  return values;
}

describe("Processor, Policy, Explorer and ExecutionPlanStore", () => {
  it("a repeated graph of 1000 ops explores 0 times on its second pass and reuses the same plans", async () => {
    const { device } = createTestDevice("elementwise");
    const first = await pass(device, 72);
    const ops = device.inspector.executedBlocks.reduce((n, b) => n + b.kinds.length, 0);
    expect(ops, "the graph (drops included) must have at least 1000 operations").toBeGreaterThanOrEqual(1000);
    const explored = device.inspector.explorations;
    const plans = device.inspector.plans;
    const composition = device.inspector.composition();
    device.inspector.clearLog();
    const second = await pass(device, 72);
    expect(device.inspector.explorations - explored, "the second pass must run entirely from the plan cache").toBe(0);
    expect(device.inspector.plans, "no plan is added for a graph already seen").toBe(plans);
    expect(device.inspector.composition(), "cached plans reproduce the explored composition").toEqual(composition);
    expect(second).toEqual(first);
    expect(explored, "repeats inside the first pass already hit the cache").toBeLessThan(20);
    expect(device.memory()).toMatchObject({ liveHandles: 0, streams: 0 });
  });

  it("a repeated graph on the plan-cache path never feeds a fuser (no exploration work at all)", async () => {
    let fed = 0;
    const runtime = new TestRuntime({
      fusers: (rt) => [
        new TappedFuser(new ElementwiseFuser(rt), {
          fuse: () => {
            fed++;
          },
        }),
      ],
    });
    const device = new Device<TestHandle>(runtime);
    const first = await pass(device, 24);
    expect(fed, "the first pass explores, so the fuser sees operations").toBeGreaterThan(0);
    const explored = device.inspector.explorations;
    fed = 0;
    const second = await pass(device, 24);
    expect(device.inspector.explorations - explored, "the second pass runs from the plan cache").toBe(0);
    expect(fed, "a cache hit needs neither the explorer nor the relative operations it would feed").toBe(0);
    expect(second, "cached plans compute the same values").toEqual(first);
  });

  it("an operation whose key no plan names invalidates every candidate", () => {
    const { device } = createTestDevice("elementwise");
    const step = (op: "exp" | "neg"): void => {
      const x = fromValues(device, [1, 2]);
      const y = unary(device, op, x);
      const z = scalar(device, "mul", y, 2);
      reduce(device, "sum", z, [0]);
    };
    step("exp");
    const explored = device.inspector.explorations;
    step("neg");
    expect(device.inspector.explorations, "neg is a key no cached plan names: the segment must be explored").toBeGreaterThan(explored);
  });

  it("a sync plan covers the whole segment, so the next identical sync does not explore (docs/pitfalls.md#p10)", async () => {
    const { device } = createTestDevice("elementwise+never-ready");
    const run = async (seed: number): Promise<void> => {
      const x = fromValues(device, [seed, 2, 3]);
      const y = unary(device, "exp", x);
      const z = reduce(device, "sum", y, [0]);
      const w = scalar(device, "add", z, seed);
      await device.sync();
      for (const t of [x, y, z, w]) t.dispose();
      await device.sync();
    };
    await run(1);
    const explored = device.inspector.explorations;
    const store = device.streams.store;
    const covering = Array.from({ length: store.size }, (_, i) => store.get(i).operations.length);
    expect(covering, "the first sync plan covers all 4 pending ops, unfused tail included").toContain(4);
    await run(7);
    await run(9);
    expect(device.inspector.explorations, "identical syncs find their plans").toBe(explored);
  });

  it("a cached plan naming a shape id the stream never assigned runs its operations unfused, in order (docs/pitfalls.md#p12)", async () => {
    const runtime = new TestRuntime({
      fusers: (rt) => [
        new TappedFuser(new ElementwiseFuser(rt), {
          finish: (opt) => ({ name: opt.name, len: opt.len, maxRelativeShapeId: 42, execute: (ctx, ops) => opt.execute(ctx, ops) }),
        }),
      ],
    });
    const device = new Device<TestHandle>(runtime);
    const x = fromValues(device, [1, 2]);
    const y = unary(device, "neg", x);
    const z = scalar(device, "mul", y, 3);
    expect(Array.from(await z.read())).toEqual([-3, -6]);
    expect(device.inspector.composition(), "the guard replaces the fused block with its ops, unfused").toEqual([
      "unfused init[init]",
      "unfused unary[unary]",
      "unfused binary-scalar[binary-scalar]",
    ]);
    for (const t of [x, y, z]) t.dispose();
    await device.syncAll();
    expect(device.memory().liveHandles).toBe(0);
  });

  it("maxExplorations bounds explorations; past it, segments run unfused in stream order", async () => {
    const { device } = createTestDevice("elementwise", { maxExplorations: 1 });
    const x = fromValues(device, [1, 2]);
    const y = unary(device, "exp", x);
    const z = unary(device, "neg", y);
    await z.read();
    expect(device.inspector.explorations, "only the first exploration (the init) is allowed").toBe(1);
    expect(device.inspector.composition()).toEqual(["unfused init[init]", "unfused unary[unary]", "unfused unary[unary]"]);
    for (const t of [x, y, z]) t.dispose();
    await device.syncAll();
  });

  it("the queue limit forces execution of a segment no fuser would release", () => {
    const { device } = createTestDevice("never-ready", { queueLimit: 8 });
    const x = fromValues(device, [1]);
    let t = x;
    for (let i = 0; i < 6; i++) t = unary(device, "neg", t);
    expect(device.streams.queueLength(device.streams.streamIds()[0] ?? (0 as never)), "7 ops pending below the limit").toBe(7);
    unary(device, "neg", t);
    expect(device.inspector.liveStreams(), "the 8th op reaches the limit and drains the stream").toEqual([]);
  });

  it("lazily, a plan runs the moment its trigger operations arrive, without exploring", () => {
    const { device } = createTestDevice("elementwise");
    const step = (): void => {
      const x = fromValues(device, [1, 2]);
      const y = unary(device, "exp", x);
      const z = scalar(device, "mul", y, 2);
      reduce(device, "sum", z, [0]);
    };
    step();
    const explored = device.inspector.explorations;
    device.inspector.clearLog();
    step();
    expect(device.inspector.explorations).toBe(explored);
    expect(device.inspector.composition(), "the reduce is the elementwise plan's trigger").toEqual([
      "unfused init[init]",
      "fused elementwise[unary,binary-scalar]",
      "unfused reduce[reduce]",
    ]);
  });

  it("the plan store is bounded: ever new graph structures evict the least recently used plan and results stay right", async () => {
    const { device } = createTestDevice("elementwise", { maxPlans: 4 });
    const structures = 40;
    for (let round = 0; round < 2; round++) {
      for (let k = 1; k <= structures; k++) {
        // A chain of k `add`s: a distinct relative structure per k.
        let t = fromValues(device, [1, 2]);
        for (let i = 0; i < k; i++) {
          const next = scalar(device, "add", t, 1);
          t.dispose();
          t = next;
        }
        expect(Array.from(await t.read()), `chain of ${k}`).toEqual([1 + k, 2 + k]);
        t.dispose();
        expect(device.streams.store.size, "never more plans than the capacity").toBeLessThanOrEqual(4);
      }
    }
    const stats = device.streams.store.stats();
    expect(stats.evictions, "old structures were evicted").toBeGreaterThan(0);
    // A structure used again right away hits its plan.
    const before = device.inspector.explorations;
    for (let i = 0; i < 3; i++) {
      const x = fromValues(device, [1]);
      const n = unary(device, "neg", x);
      const y = scalar(device, "mul", n, 2);
      n.dispose();
      expect(Array.from(await y.read())).toEqual([-2]);
      x.dispose();
      y.dispose();
    }
    expect(device.inspector.explorations - before, "explored once, then found in the store").toBeLessThanOrEqual(2);
    expect(device.memory()).toMatchObject({ liveHandles: 0 });
  });
});

