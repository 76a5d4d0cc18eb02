import { InjectedFaultError } from "@weft/server";
import { describe, expect, it } from "vitest";
import type { TestHandle } from "../../testing/index.js";
import { createTestDevice, fromValues, scalar, unary } from "../../testing/index.js";
import type { FusionDevice } from "../../device/fusion-device.js";
import type { FusionTensor } from "../../tensor/fusion-tensor.js";
import type { OperationIr } from "../../ir/operation-ir.js";
import { OperationConverter } from "../../ir/relative.js";
import type { TensorId, TensorIr } from "../../ir/tensor-ir.js";
import { OperationQueue, type ExecutionEnv } from "./operation-queue.js";

function handleOf(device: FusionDevice<TestHandle>, t: FusionTensor): TestHandle {
  const handle = device.handles.getHandleRef(t.id);
  if (handle === undefined) throw new Error(`tensor #${t.id} has no handle`);
  return handle;
}

describe("OperationQueue error delivery with device-side failures", () => {
  it("a fused block does not taint an output that is not computed from a device-side failure", async () => {
    const { device, runtime } = createTestDevice("elementwise");
    const m = fromValues(device, [1, 2]);
    const x = fromValues(device, [3, 4]);
    // `m`'s bytes are claimed by a failure the backend tracks device-side (a launch that failed
    // after the engine registered the handle): the engine's container has no error for it.
    runtime.taintDeviceSide(handleOf(device, m), new InjectedFaultError("the launch that wrote m"));
    const y = unary(device, "neg", m); // computed from the failure
    const z = scalar(device, "mul", x, 2); // independent, but in the same elementwise segment
    await expect(y.read(), "the read of a tensor computed from the failure rejects with the root cause").rejects.toMatchObject({
      name: "TensorComputationError",
      root: expect.any(InjectedFaultError),
    });
    expect(Array.from(await z.read()), "a tensor of the same segment not computed from the failure reads its values").toEqual([6, 8]);
    expect(
      device.inspector.composition().some((c) => c.startsWith("fused")),
      "a block reading a tainted handle runs op by op, so one skipped launch cannot take the others with it",
    ).toBe(false);
    for (const t of [m, x, y, z]) t.dispose();
    await device.syncAll();
    expect(device.memory().liveHandles, "the tainted handles are freed with their tensors").toBe(0);
  });

  it("the same segment without a failure is fused (the case above really exercises a fused block)", async () => {
    const { device, runtime } = createTestDevice("elementwise");
    const m = fromValues(device, [1, 2]);
    const x = fromValues(device, [3, 4]);
    const y = unary(device, "neg", m);
    const z = scalar(device, "mul", x, 2);
    expect(Array.from(await y.read())).toEqual([-1, -2]);
    expect(Array.from(await z.read())).toEqual([6, 8]);
    expect(device.inspector.composition().some((c) => c.startsWith("fused elementwise")), "neg and mul fuse into one block").toBe(true);
    expect(runtime.handleErrorCalls, "no device-side claim is live (deviceClaims): the engine asks no handle").toBe(0);
    for (const t of [m, x, y, z]) t.dispose();
  });
});

describe("OperationQueue.drain", () => {
  const init = (id: number, shape: number[]): OperationIr => ({ kind: "init", out: { id: id as TensorId, shape, dtype: "f32", status: "NotInit" } });
  const env = { runtime: { freeHandle: () => undefined }, handles: {} } as unknown as ExecutionEnv<never>;

  it("keeps the rest of a partly executed segment in order, relativized from the new start, segment after segment", () => {
    const queue = new OperationQueue();
    let id = 1;
    for (let round = 0; round < 4; round++) {
      const ops = [init(id++, [2, 3]), init(id++, [3]), init(id++, [5, 2]), init(id++, [round + 7])];
      for (const op of ops) queue.add(op);
      const n = round % 3; // 0, 1 or 2 operations run, the rest stays
      queue.drain(n, [], env);
      const rest = ops.slice(n);
      const fresh = new OperationConverter();
      const expectedShapes: number[] = [];
      const expected = rest.map((op) => {
        const key = fresh.toRelative(op).key;
        expectedShapes.push(fresh.shapesAssigned);
        return key;
      });
      expect(queue.global, `round ${round}`).toEqual(rest);
      expect(queue.keys.map((k) => k.key), `round ${round}: as if added to an empty queue`).toEqual(expected);
      expect(rest.map((_, i) => queue.shapesAssignedAt(i)), "the shape ids assigned after each position, as if added to an empty queue").toEqual(expectedShapes);
      queue.drain(queue.length, [], env);
      expect(queue.isEmpty).toBe(true);
      expect([queue.global.length, queue.keys.length]).toEqual([0, 0]);
    }
  });
});

describe("OperationQueue.referencesTensor", () => {
  const t = (id: number): TensorIr => ({ id: id as TensorId, shape: [2], dtype: "f32", status: "ReadOnly" });
  const env = { runtime: { freeHandle: () => undefined }, handles: {} } as unknown as ExecutionEnv<never>;
  /** What a scan of the segment says: the answer the reference index must give. */
  const scanned = (queue: OperationQueue, id: number): boolean =>
    queue.global.some(
      (op) =>
        (op.kind === "binary" && (op.out.id === id || op.lhs.id === id || op.rhs.id === id)) ||
        (op.kind === "unary" && (op.out.id === id || op.input.id === id)) ||
        (op.kind === "drop" && op.tensor.id === id),
    );

  it("agrees with a scan of the segment through adds and partial drains, with ids sharing slots (id, id + 1024, …)", () => {
    const queue = new OperationQueue();
    // Seeded LCG: binary ops over a pool of ids that collide modulo 1024, drops, partial drains.
    let seed = 12345;
    const next = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const pool = [3, 1027, 2051, 7, 8, 1032, 500, 1524, 4_000_000_003];
    let fresh = 10_000;
    for (let step = 0; step < 2000; step++) {
      const r = next(10);
      if (r < 6) {
        const lhs = pool[next(pool.length)] as number;
        const rhs = pool[next(pool.length)] as number;
        const out = next(3) === 0 ? (pool[next(pool.length)] as number) : fresh++;
        queue.add({ kind: "binary", op: "add", lhs: t(lhs), rhs: t(rhs), out: { ...t(out), status: "NotInit" } });
      } else if (r < 8) queue.add({ kind: "drop", tensor: t(pool[next(pool.length)] as number) });
      else queue.drain(next(queue.length + 1), [], env);
      for (const id of [...pool, fresh - 1, fresh, 1024, 0]) expect(queue.referencesTensor(id as TensorId), `step ${step}, id ${id}`).toBe(scanned(queue, id));
    }
    queue.drain(queue.length, [], env);
    for (const id of pool) expect(queue.referencesTensor(id as TensorId)).toBe(false);
  });

  it("a drain whose free throws leaves the segment and the index as they were", () => {
    const queue = new OperationQueue();
    const read = (id: number): TensorIr => ({ ...t(id), status: "ReadWrite" });
    // 20 operations: past the length from which the queue keeps its index.
    for (let i = 0; i < 20; i++) queue.add({ kind: "binary", op: "add", lhs: read(1 + i), rhs: t(100), out: { ...t(2 + i), status: "NotInit" } });
    const failing = { runtime: { freeHandle: (_h: unknown, node: TensorIr) => { if (node.id === 3) throw new Error("free failed"); } }, handles: {} } as unknown as ExecutionEnv<never>;
    expect(() => queue.drain(5, [], failing)).toThrow("free failed");
    expect(queue.length, "nothing left the segment").toBe(20);
    for (const id of [1, 2, 3, 4, 5, 21, 100]) expect(queue.referencesTensor(id as TensorId), `#${id} is still referenced`).toBe(true);
  });

  it("answers alike below and above the length from which it keeps an index", () => {
    const queue = new OperationQueue();
    for (let i = 0; i < 40; i++) {
      queue.add({ kind: "unary", op: "exp", input: t(1000 + i), out: { ...t(2000 + i), status: "NotInit" } });
      for (const id of [1000, 1000 + i, 2000 + i, 2001 + i, 1024 + 1000]) expect(queue.referencesTensor(id as TensorId), `${i + 1} operations, #${id}`).toBe(scanned(queue, id));
    }
  });
});
