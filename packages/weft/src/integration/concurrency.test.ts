/**
 * Concurrent tasks through the public API: Burn's `multi_threads.rs` (three tasks borrow a shared
 * tensor and keep computing with it before and after its owner lets go; pitfalls docs/pitfalls.md#p14, docs/pitfalls.md#p17),
 * concurrency without reordering (docs/design.md#streams: one task's pending work is never run or
 * reordered by another task's read), and the plan cache (a repeated model step explores nothing).
 * Deterministic: tasks are sequenced by promises and `setTimeout(0)` turns, never by sleeps.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Deferred, Stream, type StreamPolicy, getStreamPolicy, setStreamPolicy } from "@weft/environment";
import { type Device, type Tensor, setDevice, tensor, tidy } from "@weft/tensor";
import { BACKENDS, blocksOn, freshStream, inspectorOf, macrotask, quiescentDevice, settle, snapshot } from "./harness.js";
import { valuesOf } from "./sources.js";

describe.each(BACKENDS)("concurrent tasks on $name", (backend) => {
  let device: Device;
  let baseline = 0;
  let savedPolicy: StreamPolicy;

  beforeAll(async () => {
    device = await backend.create();
  });
  beforeEach(async () => {
    device = await quiescentDevice(device, backend);
    setDevice(device);
    savedPolicy = getStreamPolicy();
    setStreamPolicy("per-task");
    baseline = snapshot(device).bytesInUse;
  });
  afterEach(() => {
    setStreamPolicy(savedPolicy);
  });

  describe.each([
    { variant: "the owner disposes the shared tensor", ownerDisposes: true },
    { variant: "the owner keeps the shared tensor", ownerKeeps: true },
  ])("multi_threads: three tasks borrow a shared tensor, $variant", ({ ownerDisposes }) => {
    it("every task computes N ops while the owner holds it and M after, with exact values and nothing left", async () => {
      const N = 4;
      const M = 3;
      const base = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => i * 0.5);
      const shared = tidy(() => tensor([0, 1, 2, 3, 4, 5, 6, 7]).mul(0.5)); // pending on the root stream
      const borrowed = new Deferred<void>();
      const ownerDone = new Deferred<void>();
      let count = 0;
      const tasks = [0, 1, 2].map((k) =>
        Stream.spawn(async () => {
          const mine = shared.clone();
          if (++count === 3) borrowed.resolve();
          let acc: Tensor = mine.clone();
          const step = async (i: number): Promise<void> => {
            const next = acc.add(mine);
            acc.dispose();
            acc = next;
            if ((i + k) % 2 === 0) await macrotask(); // tasks interleave differently
          };
          for (let i = 0; i < N; i++) await step(i);
          await ownerDone.promise;
          for (let i = 0; i < M; i++) await step(i);
          const values = await valuesOf(acc);
          acc.dispose();
          mine.dispose();
          return values;
        }),
      );
      await borrowed.promise;
      if (ownerDisposes === true) shared.dispose();
      ownerDone.resolve();
      const results = await Promise.all(tasks);
      for (const [k, r] of results.entries()) {
        expect(r, `task ${k}: shared × (1 + N + M), the same whether or not the owner let go`).toEqual(base.map((v) => v * (1 + N + M)));
      }
      if (ownerDisposes !== true) {
        expect(await valuesOf(shared), "the owner's tensor is intact after three tasks used it").toEqual(base);
        shared.dispose();
      }
      expect(await settle(device, baseline), "nothing leaks once every task finished").toEqual([]);
    });
  });

  it("two tasks with interleaved awaits each get exactly their own results, and a read never runs the other's pending work", async () => {
    const sa = freshStream();
    const sb = freshStream();
    const aRecorded = new Deferred<void>();
    const bRead = new Deferred<void>();
    const observed: { before: string[]; after: string[]; pending: number | undefined } = { before: [], after: [], pending: undefined };
    const a = Stream.run(sa, async () => {
      const x = tensor([1, 2, 3]);
      const y = tidy(() => x.mul(2).add(1)); // pending on sa
      observed.before = blocksOn(device, sa);
      observed.pending = inspectorOf(device).queueLengths().get(sa);
      aRecorded.resolve();
      await bRead.promise; // B reads while A's work is pending
      observed.after = blocksOn(device, sa);
      const mid = await valuesOf(y);
      await macrotask();
      const z = tidy(() => y.sub(x)); // A continues after B finished
      const end = await valuesOf(z);
      for (const t of [x, y, z]) t.dispose();
      return { mid, end };
    });
    const b = Stream.run(sb, async () => {
      await aRecorded.promise;
      const p = tensor([10, 20, 30]);
      const q = tidy(() => p.mul(2).add(1)); // the same shape of work as A's
      const first = await valuesOf(q);
      expect(inspectorOf(device).queueLengths().get(sa), "B's read left A's pending segment as it was").toBe(observed.pending);
      bRead.resolve();
      await macrotask();
      const r = tidy(() => q.neg());
      const second = await valuesOf(r);
      for (const t of [p, q, r]) t.dispose();
      return { first, second };
    });
    const [ra, rb] = await Promise.all([a, b]);
    expect(ra, "task A gets its own results").toEqual({ mid: [3, 5, 7], end: [2, 3, 4] });
    expect(rb, "task B gets its own results").toEqual({ first: [21, 41, 61], second: [-21, -41, -61] });
    expect(observed.pending, "A's work was still pending when B read").toBeGreaterThan(0);
    expect(observed.after, "no block of A's stream executed for B's read").toEqual(observed.before);
    expect(await settle(device, baseline), "nothing leaks").toEqual([]);
  });

  it("eight spawned tasks interleaving at every await each get their own values, executed on their own streams", async () => {
    const before = new Set(inspectorOf(device).executedBlocks.map((b) => b.stream));
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, k) =>
        Stream.spawn(async () => {
          const x = tensor([k, k + 1]);
          await macrotask();
          const y = tidy(() => x.mul(k).add(k));
          await macrotask();
          const values = await valuesOf(y);
          x.dispose();
          y.dispose();
          return { values };
        }),
      ),
    );
    for (const [k, r] of results.entries()) {
      expect(r.values, `task ${k}: (x · k) + k`).toEqual([k * k + k, (k + 1) * k + k]);
    }
    const streams = new Set(inspectorOf(device).executedBlocks.map((b) => b.stream).filter((s) => !before.has(s)));
    expect(streams.size, "each task's work executed on its own stream").toBeGreaterThanOrEqual(8);
    expect(await settle(device, baseline), "nothing leaks").toEqual([]);
  });

  it("running the same model step twice explores 0 times the second time (plan cache through the API)", async () => {
    // A shape no other scenario uses, so the first step really has to explore.
    const w = tensor([[1, 0, 0], [0, 2, 0], [0, 0, 3], [1, 1, 1], [0, 0, 0]]); // [5, 3]
    const bias = tensor([0.5, -100, 0]);
    const step = (rows: number[][]): Tensor => tidy(() => tensor(rows).matmul(w).add(bias).relu().sum(1));
    const s = freshStream();
    const inspector = inspectorOf(device);
    const e0 = inspector.explorations;
    const first = await Stream.run(s, async () => {
      const out = step([[1, 1, 1, 1, 1], [2, 0, 0, 0, 0], [0, 0, 1, 0, 0]]);
      const v = await valuesOf(out);
      out.dispose();
      return v;
    });
    const e1 = inspector.explorations;
    const second = await Stream.run(s, async () => {
      const out = step([[0, 0, 0, 0, 1], [1, 0, 0, 0, 0], [0, 1, 0, 0, 0]]);
      const v = await valuesOf(out);
      out.dispose();
      return v;
    });
    const e2 = inspector.explorations;
    // Row · w = [a+d, 2b+d, 3c+d]; + bias; relu; sum.
    expect(first, "the first step's values").toEqual([2.5 + 0 + 4, 2.5, 0.5 + 0 + 3]);
    expect(second, "the second step's values").toEqual([0.5, 1.5, 0.5]);
    expect(e1 - e0, "the first step explored (it is new to this device)").toBeGreaterThan(0);
    expect(e2 - e1, "the second step of the same shape of work explored nothing").toBe(0);
    w.dispose();
    bias.dispose();
    expect(await settle(device, baseline), "nothing leaks").toEqual([]);
  });
});
