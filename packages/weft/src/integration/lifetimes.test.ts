/**
 * Lifetimes through the public API, on the CPU backend and on WebGPU: `weft.scope` and
 * `Stream.spawn` tasks that return, throw, await, nest and run concurrently, `tidy` inside them,
 * `keep`/`dispose`, the loop that used to leak a tensor per step, and both stream policies. Every
 * scenario checks its values, then that nothing is left: no tensor wrapper, no handle, no stream,
 * `bytesInUse` at its baseline.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Deferred, Stream, StreamId, type StreamPolicy, getStreamPolicy, setStreamPolicy } from "@weft/environment";
import { ScopeSettledError } from "@weft/fusion";
import { type Device, type Tensor, dispose, keep, ones, scope, setDevice, tensor, tidy } from "@weft/tensor";
import { BACKENDS, macrotask, quiescentDevice, settle, snapshot } from "./harness.js";
import { valuesOf } from "./sources.js";

describe.each(BACKENDS)("lifetimes on $name", (backend) => {
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
    baseline = snapshot(device).bytesInUse;
  });
  afterEach(() => {
    setStreamPolicy(savedPolicy);
  });

  async function expectClean(why: string): Promise<void> {
    expect(await settle(device, baseline), `${why}: nothing may remain once synced`).toEqual([]);
  }

  it("x.add(1).mul(0.5) in a 300-step loop keeps one tensor alive, not one more per step, with a scope per step", async () => {
    let x = tensor([1, 2, 3, 4]);
    const live: number[] = [];
    for (let i = 0; i < 300; i++) {
      const next = await scope(async () => x.add(1).mul(0.5));
      x.dispose();
      x = next;
      if (i % 50 === 0) live.push(device.memory().liveTensors);
    }
    expect(new Set(live), "the number of live tensors does not grow with the steps").toEqual(new Set([1]));
    // x ↦ (x + 1) / 2 converges to 1.
    expect(Array.from(await x.data()).every((v) => Math.abs(v - 1) < 1e-6)).toBe(true);
    x.dispose();
    await expectClean("the loop");
  });

  it("a scope that throws after an await disposes everything it created, and the error arrives", async () => {
    const w = tensor([[1, 2], [3, 4]]);
    await expect(
      scope(async () => {
        const h = w.matmul(w).relu();
        await macrotask();
        await h.data();
        h.add(1).exp();
        throw new Error("model failed");
      }),
    ).rejects.toThrow("model failed");
    expect(device.memory().liveTensors, "only the weight").toBe(1);
    w.dispose();
    await expectClean("a throwing scope");
  });

  it("nested scopes with awaits: each returned tensor lands in the enclosing scope", async () => {
    const result = await scope(async () => {
      const a = ones([3]).mul(2);
      const b = await scope(async () => {
        await macrotask();
        const inner = await scope(async () => a.add(1));
        return inner.mul(inner);
      });
      await macrotask();
      return { b, twice: b.mul(2) };
    });
    expect(await valuesOf(result.b)).toEqual([9, 9, 9]);
    expect(await valuesOf(result.twice)).toEqual([18, 18, 18]);
    expect(device.memory().liveTensors, "the two returned tensors only").toBe(2);
    dispose(result);
    await expectClean("nested scopes");
  });

  it.each(["single", "per-task"] as const)("four concurrent scopes sharing weights each get their own values (policy %s)", async (policy) => {
    setStreamPolicy(policy);
    const w = keep(tidy(() => tensor([[1, 0], [0, 1]]).mul(2)));
    const gates = Array.from({ length: 4 }, () => new Deferred<void>());
    const streams: StreamId[] = [];
    const results = Array.from({ length: 4 }, (_, i) =>
      scope(async () => {
        streams.push(StreamId.current());
        const x = tensor([[i, 1]]);
        const h = x.matmul(w);
        await gates[i]?.promise;
        const y = h.add(x); // a tensor operand, not a scalar: one kernel for all four
        await macrotask();
        return valuesOf(y);
      }),
    );
    for (const g of [...gates].reverse()) {
      g.resolve();
      await macrotask();
    }
    const values = await Promise.all(results);
    expect(values).toEqual(Array.from({ length: 4 }, (_, i) => [3 * i, 3]));
    const distinct = new Set(streams).size;
    expect(distinct, policy === "per-task" ? "every scope is a task on its own stream" : "scopes record on the caller's stream").toBe(policy === "per-task" ? 4 : 1);
    w.dispose();
    await expectClean(`concurrent scopes under ${policy}`);
  });

  it("Stream.spawn tasks dispose what they create; one failing leaves the others intact", async () => {
    const w = tensor([1, 2, 3]);
    const outcomes = await Promise.allSettled(
      [0, 1, 2, 3].map((k) =>
        Stream.spawn(async () => {
          const mine = w.mul(tensor([k])); // a tensor operand: one kernel for every task
          await macrotask();
          if (k === 2) throw new Error(`task ${k} failed`);
          const total = mine.sum();
          return (await total.item()) as number;
        }),
      ),
    );
    expect(outcomes.map((o) => (o.status === "fulfilled" ? o.value : "rejected"))).toEqual([0, 6, "rejected", 18]);
    expect(device.memory().liveTensors, "only the tensor made outside the tasks").toBe(1);
    w.dispose();
    await expectClean("spawned tasks");
  });

  it("a task's returned tensor is the caller's; a task inside a scope hands its result to the scope", async () => {
    const fromTask = await Stream.spawn(async () => tensor([1, 2]).mul(3));
    expect(await valuesOf(fromTask), "usable on the caller's stream").toEqual([3, 6]);
    let inner: Tensor | undefined;
    await scope(async () => {
      inner = await Stream.spawn(async () => fromTask.add(1));
      expect(await valuesOf(inner)).toEqual([4, 7]);
    });
    expect(inner?.disposed, "the scope disposed the task's result it did not return").toBe(true);
    fromTask.dispose();
    await expectClean("task results");
  });

  it("scope.track hands a tensor to a scope; tracking after it settled is a typed error", async () => {
    const made = tensor([1]);
    let handle: { track<T>(v: T): T } | undefined;
    await scope(async (s) => {
      handle = s;
      await macrotask();
      s.track(made);
    });
    expect(made.disposed, "tracked, then disposed with the scope").toBe(true);
    const later = tensor([2]);
    expect(() => handle?.track(later)).toThrow(ScopeSettledError);
    later.dispose();
    await expectClean("track");
  });
});
