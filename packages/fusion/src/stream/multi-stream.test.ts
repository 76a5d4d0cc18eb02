/**
 * MultiStream scenarios. The core property (docs/concepts.md#multistream, docs/pitfalls.md#p7, docs/pitfalls.md#p8): the composition of a stream's
 * fused blocks depends only on that stream's own operation sequence, never on when a foreign
 * event (another stream's drop or read, a finalizer) lands. And at quiescence nothing is left:
 * zero handles, zero streams, zero memories.
 */
import { Stream, StreamId } from "@weft/environment";
import { describe, expect, it } from "vitest";
import type { FusionDevice } from "../device/fusion-device.js";
import type { FusionTensor } from "../tensor/fusion-tensor.js";
import { tidy } from "../tensor/tidy.js";
import type { TestHandle, TestRuntime } from "../testing/index.js";
import { binary, createTestDevice, fromValues, reduce, scalar, unary } from "../testing/index.js";

async function expectQuiescent(device: FusionDevice<TestHandle>, runtime: TestRuntime, why: string): Promise<void> {
  await device.syncAll();
  expect(device.memory(), `${why}: nothing may leak`).toMatchObject({ liveHandles: 0, streams: 0, pendingStreams: 0, liveTensors: 0 });
  expect(runtime.liveMemories, `${why}: every buffer is freed`).toBe(0);
  expect(device.inspector.sharedSources, `${why}: sharedSources is bounded`).toBe(0);
}

type Injection = "foreign-drop" | "foreign-read" | "finalizer" | "home-finalizer" | "foreign-borrow";

/** Runs a fixed sequence on `home`; `inject` lands before operation `at`. Returns the composition. */
async function compose(inject?: { kind: Injection; at: number }): Promise<{ composition: string[]; values: number[] }> {
  const { device, runtime } = createTestDevice("elementwise+never-ready");
  const home = StreamId.allocate();
  const foreign = StreamId.allocate();
  const [victim, base] = StreamId.executes(home, () => [fromValues(device, [1, 2]), fromValues(device, [3, 4])]) as [FusionTensor, FusionTensor];
  await device.sync(home);
  device.inspector.clearLog();
  const made: FusionTensor[] = [];
  const last = (): FusionTensor => made[made.length - 1] ?? base;
  const ops: (() => FusionTensor)[] = [
    () => unary(device, "exp", victim), // the victim's only use
    () => unary(device, "neg", base),
    () => scalar(device, "mul", last(), 2),
    () => binary(device, "add", last(), base),
    () => reduce(device, "sum", last(), [0]),
    () => scalar(device, "add", last(), 1),
  ];
  const reads: Promise<unknown>[] = [];
  const doInject = (): void => {
    if (inject === undefined) return;
    const queued = device.streams.queueLength(home);
    switch (inject.kind) {
      case "foreign-drop":
        StreamId.executes(foreign, () => victim.dispose());
        break;
      case "foreign-read":
        reads.push(Stream.run(foreign, () => base.read()));
        break;
      case "finalizer":
        device.simulateFinalization(victim);
        break;
      case "home-finalizer":
        StreamId.executes(home, () => device.simulateFinalization(victim));
        break;
      case "foreign-borrow": {
        // A short task on its own stream uses the home's (materialised) `base` in an op and reads
        // the result: its view is minted and then freed at the task's own boundary.
        const task = StreamId.allocate();
        const out = StreamId.executes(task, () => scalar(device, "mul", base, 3));
        reads.push(
          Stream.run(task, async () => {
            expect(Array.from(await out.read())).toEqual([9, 12]);
            out.dispose();
          }),
        );
        break;
      }
    }
    expect(device.streams.queueLength(home), `${inject.kind} before op ${inject.at} must neither drain nor enqueue`).toBe(queued);
  };
  for (const [i, op] of ops.entries()) {
    if (inject?.at === i) doInject();
    made.push(StreamId.executes(home, op));
  }
  if (inject?.at === ops.length) doInject();
  await Promise.all(reads);
  await device.sync(home);
  const composition = device.inspector.composition(home);
  const values = Array.from(await last().read());
  if (!victim.disposed) StreamId.executes(home, () => victim.dispose());
  StreamId.executes(home, () => {
    for (const t of [base, ...made]) t.dispose();
  });
  await expectQuiescent(device, runtime, `after ${inject?.kind ?? "baseline"}`);
  return { composition, values };
}

describe("MultiStream: composition is independent of foreign events", () => {
  for (const kind of ["foreign-drop", "finalizer", "home-finalizer"] as const) {
    it(`a ${kind} injected before each operation never changes the composition`, async () => {
      const baseline = await compose();
      expect(baseline.composition.length, "the baseline fuses something").toBeGreaterThan(0);
      // The victim is used by op 0 only, so it can be dropped before any later op.
      for (let at = 1; at <= 6; at++) {
        expect(await compose({ kind, at }), `${kind} injected before op ${at}`).toEqual(baseline);
      }
    });
  }

  it("a task borrowing a home tensor injected before each operation never changes the composition", async () => {
    const baseline = await compose();
    for (let at = 0; at <= 6; at++) {
      expect(await compose({ kind: "foreign-borrow", at }), `borrow injected before op ${at}`).toEqual(baseline);
    }
  });

  it("a foreign read of a materialised tensor injected before each operation never changes the composition", async () => {
    const baseline = await compose();
    for (let at = 0; at <= 6; at++) {
      expect(await compose({ kind: "foreign-read", at }), `read injected before op ${at}`).toEqual(baseline);
    }
  });

  it("a foreign drop of a tensor a pending op references is deferred to the next boundary", async () => {
    const { device, runtime } = createTestDevice("never-ready");
    const home = StreamId.allocate();
    const x = StreamId.executes(home, () => fromValues(device, [1]));
    await device.sync(home);
    const y = StreamId.executes(home, () => unary(device, "neg", x));
    StreamId.executes(StreamId.allocate(), () => x.dispose());
    expect(device.handles.hasHandle(x.id), "a pending op still reads x: its free waits").toBe(true);
    await device.sync(home);
    expect(device.handles.hasHandle(x.id), "freed at the boundary").toBe(false);
    StreamId.executes(home, () => y.dispose());
    await expectQuiescent(device, runtime, "deferred free");
  });

  it("a finalizer of a tensor that is not computed yet never drains: the free waits for the producer", async () => {
    const { device, runtime } = createTestDevice("never-ready");
    const x = fromValues(device, [1]);
    const y = unary(device, "neg", x);
    const pending = device.streams.queueLength(StreamId.current());
    device.simulateFinalization(y);
    expect(device.streams.queueLength(StreamId.current()), "nothing enqueued, nothing drained").toBe(pending);
    x.dispose();
    await expectQuiescent(device, runtime, "finalized pending tensor");
  });
});

describe("MultiStream: cross-stream sharing", () => {
  const owner = (): StreamId => StreamId.allocate();

  it("sharing a tensor that is not computed yet drains its stream once; later shares do not", async () => {
    const { device, runtime } = createTestDevice("elementwise+never-ready");
    const o = owner();
    const [a, b] = StreamId.executes(o, () => {
      const a = fromValues(device, [1, 2]);
      return [a, tidy(() => scalar(device, "mul", scalar(device, "add", a, 1), 3))];
    }) as [FusionTensor, FusionTensor];
    const peer1 = StreamId.allocate();
    const view1 = StreamId.executes(peer1, () => b.clone());
    expect(view1.id, "a share from another stream has a fresh id").not.toBe(b.id);
    expect(device.inspector.sharedSources).toBe(1);
    const more = StreamId.executes(o, () => unary(device, "neg", b));
    const pending = device.streams.queueLength(o);
    const view2 = StreamId.executes(StreamId.allocate(), () => b.clone());
    expect(device.streams.queueLength(o), "the second share of the same source must not drain again").toBe(pending);
    expect(Array.from(await view2.read())).toEqual([6, 9]);
    expect(Array.from(await more.read())).toEqual([-6, -9]);
    StreamId.executes(o, () => {
      for (const t of [a, b, more]) t.dispose();
    });
    expect(device.inspector.sharedSources, "the entry goes when the last wrapper of the id dies").toBe(0);
    StreamId.executes(peer1, () => view1.dispose());
    view2.dispose();
    await expectQuiescent(device, runtime, "share");
  });

  it("re-sharing onward (owner → peer → grandpeer) finds the view's handle and never drains the peer", async () => {
    const { device, runtime } = createTestDevice("never-ready");
    const o = owner();
    const peer = StreamId.allocate();
    const grand = StreamId.allocate();
    const src = StreamId.executes(o, () => tidy(() => unary(device, "neg", fromValues(device, [4]))));
    const view = StreamId.executes(peer, () => src.clone());
    const peerWork = StreamId.executes(peer, () => scalar(device, "add", view, 1));
    const peerPending = device.streams.queueLength(peer);
    const grandView = StreamId.executes(grand, () => view.clone());
    expect(device.streams.queueLength(peer), "the chained share is a fast path").toBe(peerPending);
    const grandWork = StreamId.executes(grand, () => scalar(device, "mul", grandView, 10));
    expect(Array.from(await grandWork.read())).toEqual([-40]);
    expect(Array.from(await peerWork.read())).toEqual([-3]);
    // Drops from the wrong streams, in reverse order.
    StreamId.executes(o, () => {
      for (const t of [grandWork, grandView, peerWork, view]) t.dispose();
    });
    StreamId.executes(grand, () => src.dispose());
    await device.syncAll();
    // The owner's input is still referenced by nothing but its own pending drop.
    await expectQuiescent(device, runtime, "re-share");
  });

  it("a round trip (owner → peer → owner) aliases the same buffer and computes the same values", async () => {
    const { device, runtime } = createTestDevice("elementwise");
    const o = owner();
    const peer = StreamId.allocate();
    const x = StreamId.executes(o, () => fromValues(device, [1, 2, 3]));
    const there = StreamId.executes(peer, () => x.clone());
    const back = StreamId.executes(o, () => there.clone());
    expect(new Set([x.id, there.id, back.id]).size, "each share mints a fresh id").toBe(3);
    const memory = (t: FusionTensor): number | undefined => device.handles.getHandleRef(t.id)?.memory.serial;
    expect(memory(back), "sharing copies nothing").toBe(memory(x));
    const y = StreamId.executes(o, () => binary(device, "add", back, x));
    expect(Array.from(await y.read())).toEqual([2, 4, 6]);
    StreamId.executes(o, () => [x, back, y].forEach((t) => t.dispose()));
    StreamId.executes(peer, () => there.dispose());
    await expectQuiescent(device, runtime, "round trip");
  });

  it("fan-out to 8 streams: each computes on the shared tensor; the owner drops first", async () => {
    const { device, runtime } = createTestDevice("elementwise+never-ready");
    const o = owner();
    const src = StreamId.executes(o, () => tidy(() => scalar(device, "add", fromValues(device, [1, 2]), 0)));
    const streams = Array.from({ length: 8 }, () => StreamId.allocate());
    const results = streams.map((s, i) =>
      StreamId.executes(s, () => {
        const v = src.clone();
        const r = scalar(device, "mul", v, i);
        v.dispose();
        return r;
      }),
    );
    StreamId.executes(o, () => src.dispose());
    for (const [i, r] of results.entries()) expect(Array.from(await r.read()), `stream ${i}`).toEqual([i, 2 * i]);
    streams.forEach((s, i) => StreamId.executes(s, () => results[i]?.dispose()));
    await expectQuiescent(device, runtime, "fan-out");
  });

  it("borrowing a foreign tensor in ops uses one view per stream, freed when the tensor dies", async () => {
    const { device, runtime } = createTestDevice("elementwise");
    const o = owner();
    const peer = StreamId.allocate();
    const x = StreamId.executes(o, () => fromValues(device, [2]));
    const [y, z] = StreamId.executes(peer, () => [unary(device, "neg", x), scalar(device, "mul", x, 5)]) as [FusionTensor, FusionTensor];
    expect(x._ref.views?.size, "both uses on peer share one view").toBe(1);
    expect(Array.from(await z.read())).toEqual([10]);
    StreamId.executes(o, () => x.dispose());
    StreamId.executes(peer, () => [y, z].forEach((t) => t.dispose()));
    await expectQuiescent(device, runtime, "borrowed views");
  });

  it("reading a tensor while its owner's work is pending drains only when the tensor is not computed", async () => {
    const { device, runtime } = createTestDevice("never-ready");
    const o = owner();
    const x = StreamId.executes(o, () => fromValues(device, [1]));
    await device.sync(o);
    const y = StreamId.executes(o, () => unary(device, "neg", x));
    const peer = StreamId.allocate();
    expect(Array.from(await Stream.run(peer, () => x.read())), "x exists: a direct read").toEqual([1]);
    expect(device.streams.queueLength(o), "the owner's segment is intact").toBe(1);
    expect(Array.from(await Stream.run(peer, () => y.read())), "y is pending: the read drains").toEqual([-1]);
    StreamId.executes(o, () => [x, y].forEach((t) => t.dispose()));
    await expectQuiescent(device, runtime, "read while pending");
  });

  it("drops in every order and from either stream leave nothing behind", async () => {
    const orders = permutations([0, 1, 2, 3]);
    for (const order of orders) {
      for (const fromOther of [false, true]) {
        const { device, runtime } = createTestDevice("elementwise+never-ready");
        const o = StreamId.allocate();
        const p = StreamId.allocate();
        const a = StreamId.executes(o, () => fromValues(device, [1, 2]));
        const b = StreamId.executes(o, () => scalar(device, "add", a, 1));
        const v = StreamId.executes(p, () => b.clone());
        const c = StreamId.executes(p, () => unary(device, "neg", v));
        const tensors: [FusionTensor, StreamId][] = [[a, o], [b, o], [v, p], [c, p]];
        for (const i of order) {
          const [t, home] = tensors[i] ?? [a, o];
          StreamId.executes(fromOther ? (home === o ? p : o) : home, () => t.dispose());
        }
        await expectQuiescent(device, runtime, `order ${order.join("")} ${fromOther ? "foreign" : "home"}`);
      }
    }
  });

  it("thousands of short-lived task streams do not accumulate bookkeeping", async () => {
    const { device, runtime } = createTestDevice("elementwise");
    for (let i = 0; i < 2000; i++) {
      const s = StreamId.allocate();
      const [x, y] = StreamId.executes(s, () => {
        const x = fromValues(device, [i]);
        return [x, unary(device, "neg", x)];
      });
      expect(Array.from(await Stream.run(s, () => y.read()))).toEqual([-i]);
      StreamId.executes(s, () => [x, y].forEach((t) => t.dispose()));
    }
    expect(device.streams.streamIds().length, "empty streams are removed without a sync").toBe(0);
    await expectQuiescent(device, runtime, "short-lived streams");
  });
});

describe("MultiStream: borrowed views are freed from the borrowing side", () => {
  it("a view is freed at the borrowing stream's next boundary once no pending op uses it", async () => {
    const { device, runtime } = createTestDevice("never-ready");
    const weights = fromValues(device, [1, 2]);
    await device.sync();
    const task = StreamId.allocate();
    const y = StreamId.executes(task, () => unary(device, "neg", weights));
    expect(device.streams.borrowedViews, "the pending op uses the view").toBe(1);
    const view = weights._ref.views?.get(task)?.id;
    expect(view !== undefined && device.handles.hasHandle(view), "the view aliases the weights").toBe(true);
    expect(Array.from(await Stream.run(task, () => y.read()))).toEqual([-1, -2]);
    expect(device.streams.borrowedViews, "the read drained the task: its boundary freed the view").toBe(0);
    expect(view !== undefined && device.handles.hasHandle(view), "the view's handle went with it").toBe(false);
    expect(device.memory().liveHandles, "the weights and y").toBe(2);
    expect(weights._ref.views?.size ?? 0, "the owner forgot it").toBe(0);
    // A later use from the same stream mints a new view and computes the same.
    const z = StreamId.executes(task, () => scalar(device, "add", weights, 1));
    expect(Array.from(await Stream.run(task, () => z.read()))).toEqual([2, 3]);
    StreamId.executes(task, () => [y, z].forEach((t) => t.dispose()));
    weights.dispose();
    await expectQuiescent(device, runtime, "borrowed view");
  });

  it("a view still used by a pending op survives a boundary that ran only an earlier prefix", async () => {
    const { device, runtime } = createTestDevice("never-ready");
    const weights = fromValues(device, [3]);
    const other = fromValues(device, [5]);
    await device.sync();
    const task = StreamId.allocate();
    const [a, b] = StreamId.executes(task, () => {
      const local = fromValues(device, [7]);
      const a = unary(device, "neg", local);
      local.dispose();
      return [a, binary(device, "add", weights, other)];
    }) as [FusionTensor, FusionTensor];
    // Only `a` is needed: the drain runs the whole segment, so both views go at that boundary.
    expect(Array.from(await Stream.run(task, () => a.read()))).toEqual([-7]);
    expect(device.streams.borrowedViews).toBe(0);
    expect(Array.from(await Stream.run(task, () => b.read()))).toEqual([8]);
    StreamId.executes(task, () => [a, b].forEach((t) => t.dispose()));
    weights.dispose();
    other.dispose();
    await expectQuiescent(device, runtime, "prefix boundary");
  });

  it("the source dying while a view is borrowed and pending frees each side exactly once", async () => {
    for (const order of ["source-first", "view-first"] as const) {
      const { device, runtime } = createTestDevice("never-ready");
      const weights = fromValues(device, [4]);
      await device.sync();
      const task = StreamId.allocate();
      const y = StreamId.executes(task, () => unary(device, "neg", weights));
      if (order === "source-first") weights.dispose();
      expect(Array.from(await Stream.run(task, () => y.read()))).toEqual([-4]);
      if (order === "view-first") weights.dispose();
      StreamId.executes(task, () => y.dispose());
      expect(device.streams.borrowedViews, order).toBe(0);
      await expectQuiescent(device, runtime, order);
    }
  });

  it("5,000 short tasks borrowing the same weights leave live handles flat", async () => {
    const { device, runtime } = createTestDevice("elementwise");
    const weights = fromValues(device, [1, 2, 3]);
    await device.sync();
    const baseline = device.memory().liveHandles;
    let peak = 0;
    for (let i = 0; i < 5000; i++) {
      const task = StreamId.allocate();
      const y = StreamId.executes(task, () => tidy(() => scalar(device, "add", unary(device, "neg", weights), i)));
      peak = Math.max(peak, device.memory().liveHandles);
      expect((await Stream.run(task, () => y.read()))[0]).toBe(i - 1);
      StreamId.executes(task, () => y.dispose());
    }
    expect(device.memory().liveHandles, "nothing piles up").toBe(baseline);
    expect(peak, "at most the live task's handles on top of the weights").toBeLessThanOrEqual(baseline + 3);
    expect(device.streams.viewsReleased, "one view per task, freed by the task").toBe(5000);
    expect(weights._ref.views?.size ?? 0).toBe(0);
    weights.dispose();
    await expectQuiescent(device, runtime, "5,000 tasks");
  });
});

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [items.slice()];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}
