/**
 * Async lifetime scopes on the engine: what a scope (and a `Stream.spawn` task) disposes, keeps
 * and hands on — when it returns, throws, awaits, nests, runs concurrently with another, meets
 * `tidy`, and runs for many ops — each test ending with no live wrapper and no live handle.
 */
import { Deferred, Stream, StreamId } from "@weft/environment";
import { describe, expect, it } from "vitest";
import { ScopeSettledError } from "../errors/tensor-errors.js";
import { createTestDevice, fromValues, scalar, unary } from "../testing/index.js";
import type { FusionDevice } from "../device/fusion-device.js";
import type { TestHandle } from "../testing/index.js";
import type { LifetimeScope } from "./ownership.js";
import { dispose, keep, scope } from "./scope.js";
import { tidy } from "./tidy.js";

const macrotask = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

async function expectQuiescent(device: FusionDevice<TestHandle>, why: string): Promise<void> {
  await device.syncAll();
  const m = device.memory();
  expect({ liveTensors: m.liveTensors, liveHandles: m.liveHandles }, why).toEqual({ liveTensors: 0, liveHandles: 0 });
}

describe("scope", () => {
  it("disposes what it created and keeps what it returns, across awaits", async () => {
    const { device } = createTestDevice();
    const x = fromValues(device, [1, 2]);
    const y = await scope(async () => {
      const a = unary(device, "exp", x);
      await macrotask();
      const b = scalar(device, "mul", a, 2);
      await b.read();
      return { result: scalar(device, "add", b, 1) };
    });
    expect(device.memory().liveTensors, "x and the returned tensor only").toBe(2);
    expect(Array.from(await y.result.read())).toEqual([1, 2].map((v) => Math.fround(Math.fround(Math.fround(Math.exp(v)) * 2) + 1)));
    expect(x.disposed, "a borrowed input is never disposed by the scope").toBe(false);
    dispose([x, y]);
    await expectQuiescent(device, "after disposing the input and the result");
  });

  it("disposes everything it created when it throws, synchronously or after an await", async () => {
    const { device } = createTestDevice();
    await expect(
      scope(() => {
        fromValues(device, [1]);
        throw new Error("sync boom");
      }),
    ).rejects.toThrow("sync boom");
    await expect(
      scope(async () => {
        const a = fromValues(device, [1]);
        await macrotask();
        scalar(device, "add", a, 1);
        throw new Error("async boom");
      }),
    ).rejects.toThrow("async boom");
    await expectQuiescent(device, "a failed scope leaves nothing");
  });

  it("nests: an inner scope's result belongs to the outer scope, which disposes it unless returned", async () => {
    const { device } = createTestDevice();
    let inner: { disposed: boolean } | undefined;
    const kept = await scope(async () => {
      const a = fromValues(device, [3]);
      inner = await scope(async () => {
        await macrotask();
        return scalar(device, "mul", a, 2);
      });
      expect(inner.disposed, "the inner result is alive in the outer scope").toBe(false);
      const twice = await scope(async () => scalar(device, "add", a, 1));
      return twice;
    });
    expect(inner?.disposed, "not returned by the outer scope: disposed when it settled").toBe(true);
    expect(Array.from(await kept.read())).toEqual([4]);
    kept.dispose();
    await expectQuiescent(device, "nested scopes");
  });

  it("concurrent scopes on different tasks never dispose each other's tensors", async () => {
    const { device } = createTestDevice();
    const gates = [new Deferred<void>(), new Deferred<void>()];
    const made: { disposed: boolean }[][] = [[], []];
    const task = (i: number) =>
      scope(async () => {
        const mine = fromValues(device, [i]);
        made[i]?.push(mine);
        await gates[i]?.promise;
        const more = scalar(device, "add", mine, 10);
        made[i]?.push(more);
        return Array.from(await more.read());
      });
    const first = task(0);
    const second = task(1);
    gates[0]?.resolve();
    expect(await first).toEqual([10]);
    expect(made[0]?.every((t) => t.disposed), "the settled scope disposed its own").toBe(true);
    expect(made[1]?.some((t) => t.disposed), "the other, still running, lost nothing").toBe(false);
    gates[1]?.resolve();
    expect(await second).toEqual([11]);
    await expectQuiescent(device, "two concurrent scopes");
  });

  it("tidy inside a scope hands its kept result to the scope; a scope inside tidy is not tidy's", async () => {
    const { device } = createTestDevice();
    let fromTidy: { disposed: boolean } | undefined;
    await scope(async () => {
      const a = fromValues(device, [1]);
      fromTidy = tidy(() => scalar(device, "add", scalar(device, "mul", a, 2), 1));
      await macrotask();
      expect(fromTidy.disposed, "kept by tidy, owned by the scope").toBe(false);
    });
    expect(fromTidy?.disposed, "the scope disposed what tidy handed it").toBe(true);
    let pending: Promise<{ disposed: boolean }> | undefined;
    tidy(() => {
      pending = scope(async () => {
        const b = fromValues(device, [2]);
        await macrotask();
        return b;
      });
    });
    const b = await (pending as Promise<{ disposed: boolean; dispose(): void }>);
    expect(b.disposed, "the scope's result outlives the tidy that opened it").toBe(false);
    b.dispose();
    await expectQuiescent(device, "tidy and scope mixed");
  });

  it("keep takes a tensor out of every scope; dispose walks arrays, objects, Maps and Sets", async () => {
    const { device } = createTestDevice();
    const cache = await scope(async () => {
      const kept = keep(fromValues(device, [5]));
      fromValues(device, [6]);
      return { note: "the cache is not returned" as const, kept };
    });
    expect(cache.kept.disposed, "kept survives").toBe(false);
    const t = [fromValues(device, [1]), fromValues(device, [2]), fromValues(device, [3]), fromValues(device, [4])];
    dispose({ list: [t[0]], nested: { map: new Map([["x", t[1]]]), set: new Set([t[2]]) }, direct: t[3], kept: cache.kept });
    expect([...t, cache.kept].every((x) => x?.disposed)).toBe(true);
    dispose([t[0], "not a tensor", 7, null]);
    await expectQuiescent(device, "keep and dispose");
  });

  it("track hands a tensor to the scope; tracking after it settled throws and changes nothing", async () => {
    const { device } = createTestDevice();
    const outside = fromValues(device, [1]);
    let handle: { track<T>(v: T): T } | undefined;
    await scope(async (s) => {
      handle = s;
      s.track({ outside });
    });
    expect(outside.disposed, "tracked by the scope: disposed with it").toBe(true);
    const late = fromValues(device, [2]);
    expect(() => handle?.track(late)).toThrow(ScopeSettledError);
    expect(late.disposed).toBe(false);
    late.dispose();
    await expectQuiescent(device, "track");
  });

  it("a callback running after its scope settled creates tensors for the nearest open scope", async () => {
    const { device } = createTestDevice();
    let late: { disposed: boolean } | undefined;
    await scope(async () => {
      const timer = new Deferred<void>();
      await scope(async () => {
        setTimeout(() => {
          late = fromValues(device, [1]);
          timer.resolve();
        }, 0);
      });
      await timer.promise;
      expect(late?.disposed, "adopted by the outer scope, still open").toBe(false);
    });
    expect(late?.disposed, "disposed when the outer scope settled").toBe(true);
    await expectQuiescent(device, "late creation");
  });

  it("a long scope's bookkeeping stays bounded by what it still owns", async () => {
    const { device } = createTestDevice();
    let seen: LifetimeScope | undefined;
    await scope(async (s) => {
      seen = s as LifetimeScope;
      let x = fromValues(device, [0]);
      for (let i = 0; i < 2000; i++) {
        const next = scalar(device, "add", x, 1);
        x.dispose();
        x = next;
        if (i % 1000 === 0) await macrotask();
      }
      expect(seen._entries, "2000 ops, one live tensor: the list is compacted").toBeLessThanOrEqual(2 * 1 + 64);
      expect(Array.from(await x.read())).toEqual([2000]);
    });
    await expectQuiescent(device, "a long scope");
  });
});

describe("Stream.spawn tasks are scopes", () => {
  it("disposes what a task creates and does not return, on the task's own stream", async () => {
    const { device } = createTestDevice();
    const w = fromValues(device, [2]);
    const results = await Promise.all(
      [1, 2, 3].map((i) =>
        Stream.spawn(async () => {
          const home = StreamId.current();
          const x = fromValues(device, [i]);
          const y = scalar(device, "mul", x, 10);
          await macrotask();
          const z = unary(device, "neg", y);
          expect(z.stream, "the task's tensors live on its stream").toBe(home);
          return Array.from(await z.read());
        }),
      ),
    );
    expect(results).toEqual([[-10], [-20], [-30]]);
    expect(device.memory().liveTensors, "only the weight created outside the tasks").toBe(1);
    w.dispose();
    await expectQuiescent(device, "spawned tasks");
  });

  it("a task's returned tensor belongs to the scope that spawned it; a failed task leaves nothing", async () => {
    const { device } = createTestDevice();
    const out = await scope(async () => {
      const r = await Stream.spawn(async () => fromValues(device, [7]));
      await expect(
        Stream.spawn(async () => {
          fromValues(device, [8]);
          await macrotask();
          throw new Error("task failed");
        }),
      ).rejects.toThrow("task failed");
      return { r, dropped: await Stream.spawn(async () => fromValues(device, [9])) };
    });
    expect(Array.from(await out.r.read())).toEqual([7]);
    dispose(out);
    await expectQuiescent(device, "tasks inside a scope");
  });
});
