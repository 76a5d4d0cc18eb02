import { DisposedDeviceError } from "../errors/tensor-errors.js";
import { ReentrancyError, StreamId } from "@weft/environment";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { DisposedTensorError } from "../errors/tensor-errors.js";
import type { OperationIr } from "../ir/operation-ir.js";
import type { ExecutionContext } from "../runtime/fusion-runtime.js";
import { FUSION_TENSOR, type FusionTensor } from "../tensor/fusion-tensor.js";
import { tidy } from "../tensor/tidy.js";
import { TestRuntime, binary, createTestDevice, fromValues, scalar, unary } from "../testing/index.js";
import type { TestHandle } from "../testing/index.js";
import { FusionDevice } from "./fusion-device.js";

/** V8's full collection, exposed at run time (the tests run without `--expose-gc`). */
function exposedGc(): () => void {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
}

describe("FusionDevice", () => {
  it("is lazy: nothing runs until a read needs it", async () => {
    const { device, runtime } = createTestDevice("elementwise");
    const x = fromValues(device, [1, 2]);
    const y = unary(device, "neg", x);
    expect(runtime.executedOperations, "an open elementwise fuser keeps the op pending").toBe(0);
    expect(Array.from(await y.read())).toEqual([-1, -2]);
    expect(runtime.executedOperations).toBe(1);
  });

  it("a tensor created and dropped inside one segment is never written", async () => {
    const { device, runtime } = createTestDevice("elementwise");
    const x = fromValues(device, [1, 2, 3]);
    const a = unary(device, "exp", x);
    const b = scalar(device, "mul", a, 2);
    a.dispose();
    expect(Array.from(await b.read())).toEqual([1, 2, 3].map((v) => Math.fround(Math.fround(Math.exp(v)) * 2)));
    expect(runtime.allocatedFor.has(a.id), "a's last use was inside the fused block").toBe(false);
    expect(runtime.allocatedFor.has(b.id)).toBe(true);
  });

  it("reuses a consumed input in place only when it is the sole owner (docs/pitfalls.md#p11)", async () => {
    const { device, runtime } = createTestDevice("elementwise");
    // Sole owner: x is disposed while its use is pending → the block consumes it in place.
    const x = fromValues(device, [1, 2]);
    const serial = (t: { id: number }): number | undefined => device.handles.getHandleRef(t.id as never)?.memory.serial;
    const xMemory = serial(x);
    const y = unary(device, "neg", x);
    x.dispose();
    await y.read();
    expect(runtime.inPlaceWrites, "a solely owned consumed input is reused").toBe(1);
    expect(serial(y), "y lives in x's memory").toBe(xMemory);
    // Shared (a same-stream clone holds it): no drop in the segment, no reuse.
    const s = fromValues(device, [3, 4]);
    const keep = s.clone();
    const z = unary(device, "neg", s);
    s.dispose();
    expect(Array.from(await z.read())).toEqual([-3, -4]);
    expect(runtime.inPlaceWrites, "a shared input is never written").toBe(1);
    expect(Array.from(await keep.read()), "the clone still sees the original values").toEqual([3, 4]);
    // Aliased (a view on another stream holds a reference): dropped, but canMut is false.
    const a = fromValues(device, [5, 6]);
    await device.sync();
    const other = StreamId.allocate();
    const view = StreamId.executes(other, () => a.clone());
    const w = unary(device, "neg", a);
    a.dispose();
    expect(Array.from(await w.read())).toEqual([-5, -6]);
    expect(runtime.inPlaceWrites, "an aliased input is never written in place").toBe(1);
    expect(Array.from(await view.read()), "the alias is unmodified").toEqual([5, 6]);
    for (const t of [y, keep, z, w]) t.dispose();
    StreamId.executes(other, () => view.dispose());
    await device.syncAll();
    expect(device.memory()).toMatchObject({ liveHandles: 0, streams: 0, liveTensors: 0 });
    expect(runtime.liveMemories).toBe(0);
  });

  it("clone invariance: an op gives the same result whether its input is shared or consumed", async () => {
    const values = [0.5, -1, 2, 7];
    const ops: ((d: FusionDevice<TestHandle>, t: ReturnType<typeof fromValues>) => ReturnType<typeof fromValues>)[] = [
      (d, t) => unary(d, "exp", t),
      (d, t) => scalar(d, "pow", t, 2),
      (d, t) => binary(d, "mul", t, t),
      (d, t) => unary(d, "relu", scalar(d, "sub", t, 1)),
    ];
    for (const [i, op] of ops.entries()) {
      const { device } = createTestDevice("elementwise");
      const consumed = fromValues(device, values);
      const r1 = op(device, consumed);
      consumed.dispose();
      const shared = fromValues(device, values);
      const r2 = op(device, shared);
      expect(Array.from(await r2.read()), `op ${i}: shared vs consumed input`).toEqual(Array.from(await r1.read()));
      expect(Array.from(await shared.read()), `op ${i}: a shared input is never modified`).toEqual(values);
    }
  });

  it("a use after dispose throws DisposedTensorError naming the op; dispose is idempotent", () => {
    const { device } = createTestDevice();
    const x = fromValues(device, [1]);
    x.dispose();
    x.dispose();
    expect(() => x.intoIr("matmul")).toThrow(DisposedTensorError);
    expect(() => x.intoIr("matmul")).toThrow(/matmul: tensor #\d+ with shape \[1\] was already disposed/);
    expect(() => x.clone()).toThrow(/clone/);
    expect(() => x.read()).toThrow(/read/);
    expect(device.memory().liveTensors).toBe(0);
  });

  it("same-stream clones share the id and count: the id is dropped with its last reference", async () => {
    const { device } = createTestDevice();
    const x = fromValues(device, [1]);
    const y = x.clone();
    expect(y.id).toBe(x.id);
    x.dispose();
    await device.sync();
    expect(device.memory().liveHandles, "y still holds the id").toBe(1);
    expect(Array.from(await y.read())).toEqual([1]);
    y.dispose();
    await device.sync();
    expect(device.memory().liveHandles).toBe(0);
  });

  it("tidy disposes what fn created except what its result reaches", async () => {
    const { device } = createTestDevice();
    const outside = fromValues(device, [1]);
    const wrapped = { [FUSION_TENSOR]: undefined as unknown };
    const result = tidy(() => {
      const a = unary(device, "neg", outside);
      const b = unary(device, "exp", a);
      const c = scalar(device, "add", b, 1);
      const d = scalar(device, "add", b, 2);
      const e = scalar(device, "add", b, 3);
      wrapped[FUSION_TENSOR] = e;
      return { list: [c], map: new Map([["d", d]]), wrapped, a: undefined };
    });
    expect(outside.disposed, "tensors from outside the scope are untouched").toBe(false);
    expect([result.list[0]?.disposed, result.map.get("d")?.disposed]).toEqual([false, false]);
    expect((wrapped[FUSION_TENSOR] as { disposed: boolean }).disposed, "reachable through [FUSION_TENSOR]").toBe(false);
    expect(device.memory().liveTensors, "outside + the 3 kept").toBe(4);
    expect(Array.from((await result.list[0]?.read()) ?? [])).toEqual([Math.fround(Math.exp(-1)) + 1].map(Math.fround));
    expect(() => tidy(() => Promise.resolve(1))).toThrow(/synchronous/);
  });

  it("tidy disposes its tensors when fn throws", () => {
    const { device } = createTestDevice();
    expect(() =>
      tidy(() => {
        fromValues(device, [1]);
        throw new Error("boom");
      }),
    ).toThrow("boom");
    expect(device.memory().liveTensors).toBe(0);
  });

  it("a fuser or kernel that calls back into the device throws ReentrancyError (docs/pitfalls.md#p3)", () => {
    let device: FusionDevice<TestHandle> | undefined;
    class Reentrant extends TestRuntime {
      override executeOperation(op: OperationIr, ctx: ExecutionContext<TestHandle>): void {
        if (op.kind === "unary" && device !== undefined) fromValues(device, [9]);
        super.executeOperation(op, ctx);
      }
    }
    device = new FusionDevice<TestHandle>(new Reentrant());
    const x = fromValues(device, [1]);
    expect(() => unary(device, "neg", x), "a kernel calling back must not corrupt the engine silently").toThrow(ReentrancyError);
    expect(device.memory().pendingStreams, "the engine state stayed consistent: the block was drained").toBe(0);
  });

  it("an execution names its stream in the context, whichever stream's call triggered it (docs/pitfalls.md#p5)", async () => {
    const seen: StreamId[] = [];
    class Recording extends TestRuntime {
      override executeOperation(op: OperationIr, ctx: ExecutionContext<TestHandle>): void {
        seen.push(ctx.stream);
        super.executeOperation(op, ctx);
      }
    }
    const device = new FusionDevice<TestHandle>(new Recording());
    const s = StreamId.allocate();
    const y = StreamId.executes(s, () => unary(device, "neg", fromValues(device, [1])));
    // The read is issued from the default stream: it drains `s`, whose block must run on `s`.
    expect(StreamId.current(), "the reading code is on another stream").not.toBe(s);
    await y.read();
    expect(seen, "the block ran on its home stream, passed explicitly").toEqual([s]);
  });

  it("disposing a computed tensor on an empty segment frees it at once, as one unfused drop, without exploring", async () => {
    const { device, runtime } = createTestDevice("elementwise");
    const x = fromValues(device, [1, 2]);
    const y = unary(device, "neg", x);
    await y.read();
    const explored = device.inspector.explorations;
    const live = runtime.liveMemories;
    device.inspector.clearLog();
    y.dispose();
    expect(device.inspector.composition(), "the drop is logged as the one-op block it always was").toEqual(["unfused drop[drop]"]);
    expect(runtime.liveMemories, "y's memory is released by the drop itself").toBe(live - 1);
    expect(device.inspector.explorations, "a lone drop never needs the explorer").toBe(explored);
    expect(device.memory().pendingStreams, "no stream entry is left behind").toBe(0);
    x.dispose();
    expect(device.memory()).toMatchObject({ liveTensors: 0, liveHandles: 0, streams: 0 });
  });

  it("disposing a computed tensor while an unrelated segment is pending frees it at once; a drop the segment references waits in it", async () => {
    const { device, runtime } = createTestDevice("elementwise");
    const x = fromValues(device, [1, 2]);
    const done = unary(device, "neg", x);
    await done.read();
    const pendingIn = fromValues(device, [3, 4]);
    await device.sync();
    const pending = unary(device, "exp", pendingIn); // an open elementwise block: the segment is not empty
    expect(device.streams.queueLength(StreamId.current()), "the exp is pending").toBe(1);
    const live = runtime.liveMemories;
    device.inspector.clearLog();
    done.dispose();
    expect(device.inspector.composition(), "no pending op reads `done`: one unfused drop, at once").toEqual(["unfused drop[drop]"]);
    expect(runtime.liveMemories, "done's memory is released by the drop itself").toBe(live - 1);
    expect(device.streams.queueLength(StreamId.current()), "the segment is untouched").toBe(1);
    pendingIn.dispose();
    expect(device.streams.queueLength(StreamId.current()), "the pending exp reads pendingIn: its drop joins the segment, in program order").toBe(2);
    expect(Array.from(await pending.read()), "and the block still reads it").toEqual([3, 4].map((v) => Math.fround(Math.exp(v))));
    pending.dispose();
    x.dispose();
    await device.syncAll();
    expect(device.memory()).toMatchObject({ liveTensors: 0, liveHandles: 0, streams: 0 });
  });

  it("wrappers that die in the turn they were created are never registered as leak candidates; survivors are, by the next microtask", async () => {
    const { device } = createTestDevice("elementwise");
    const x = fromValues(device, [1, 2]);
    const temporaries = Array.from({ length: 8 }, () => unary(device, "neg", x));
    for (const t of temporaries) t.dispose();
    const survivor = unary(device, "exp", x);
    expect(survivor._leakKey >= 0, "registration is batched, not paid at creation").toBe(false);
    await Promise.resolve();
    expect(temporaries.some((t) => t._leakKey >= 0), "a disposed wrapper is skipped by the batch").toBe(false);
    expect(survivor._leakKey >= 0 && x._leakKey >= 0, "live wrappers are covered by the leak backstop").toBe(true);
    device.simulateFinalization(survivor);
    expect(survivor._leakKey >= 0, "a finalized wrapper leaves the registry").toBe(false);
    expect(device.memory().liveTensors, "the finalizer gave the survivor's reference back").toBe(1);
    x.dispose();
    await device.syncAll();
    expect(device.memory()).toMatchObject({ liveTensors: 0, liveHandles: 0, streams: 0 });
  });

  it("a leaked wrapper is given back when the collector finds it (a real collection, not the simulated finalizer)", async () => {
    const gc = exposedGc();
    const { device, runtime } = createTestDevice("elementwise");
    const x = fromValues(device, [1, 2]);
    const live = runtime.liveMemories;
    ((): void => {
      // Read by nothing and never disposed: only the leak backstop can give its memory back.
      const leaked = unary(device, "exp", x);
      void leaked.read();
    })();
    await device.syncAll();
    expect(device.memory().liveTensors).toBe(2);
    expect(runtime.liveMemories, "the leaked output holds memory").toBe(live + 1);
    for (let i = 0; i < 20 && device.memory().liveTensors > 1; i++) {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 10)); // the registry's callbacks run as a task after the collection
    }
    expect(device.memory().liveTensors, "the finalizer ran: the leaked wrapper's reference was given back").toBe(1);
    await device.syncAll();
    expect(runtime.liveMemories, "and its memory with it").toBe(live);
    x.dispose();
    await device.syncAll();
    expect(device.memory()).toMatchObject({ liveTensors: 0, liveHandles: 0, streams: 0 });
  });

  it("many wrappers in one synchronous burst: the leak queue stays bounded by the live ones, survivors are registered by the next microtask", async () => {
    const { device } = createTestDevice("elementwise");
    const x = fromValues(device, [1]);
    let most = 0;
    for (let i = 0; i < 20_000; i++) {
      unary(device, "neg", x).dispose();
      most = Math.max(most, device._leakQueueLength);
    }
    expect(most, "20,000 wrappers created and disposed in one turn: the queue never passes its first limit (2048)").toBeLessThanOrEqual(2048);
    const kept: FusionTensor[] = [];
    for (let i = 0; i < 5_000; i++) {
      kept.push(unary(device, "neg", x));
      unary(device, "exp", x).dispose();
      most = Math.max(most, device._leakQueueLength);
    }
    expect(most, "5,000 survivors among 10,000 wrappers: at most twice the live ones plus 2048").toBeLessThanOrEqual(2 * 5_001 + 2048);
    expect(kept.some((t) => t._leakKey >= 0), "nothing is registered before the turn ends").toBe(false);
    await Promise.resolve();
    expect(kept.every((t) => t._leakKey >= 0) && x._leakKey >= 0, "every survivor is covered by the leak backstop after the turn").toBe(true);
    expect(device._leakQueueLength).toBe(0);
    for (const t of kept) t.dispose();
    x.dispose();
    await device.syncAll();
    expect(device.memory()).toMatchObject({ liveTensors: 0, liveHandles: 0, streams: 0 });
  });

  it("upload rejects data that does not fill the shape, naming the fix", () => {
    const { device } = createTestDevice();
    expect(() => device.upload({ data: new Float32Array(3), shape: [2, 2], dtype: "f32" })).toThrow(/3 values do not fill shape \[2, 2\]/);
    expect(device.memory().liveHandles).toBe(0);
  });

  it("dispose releases the backend once; later uses of the device or its tensors throw DisposedDeviceError", async () => {
    const { device, runtime } = createTestDevice("elementwise");
    let disposed = 0;
    (runtime as { dispose?: () => void }).dispose = () => void disposed++;
    const x = fromValues(device, [1, 2]);
    device.dispose();
    device.dispose();
    expect(disposed, "the runtime is released exactly once").toBe(1);
    expect(() => unary(device, "neg", x)).toThrow(DisposedDeviceError);
    expect(() => fromValues(device, [1])).toThrow(/was disposed/);
    await expect(x.read()).rejects.toThrow(DisposedDeviceError);
    x.dispose();
    expect(device.memory(), "the tensor count still balances").toMatchObject({ liveTensors: 0 });
  });
});

