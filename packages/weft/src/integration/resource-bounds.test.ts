/**
 * Bounded resources in the serving pattern, through the public `weft` API, as counts and states
 * (never timings): short tasks on their own streams borrowing long-lived weights leave no handle
 * behind, new shapes and scalars keep every cache within its capacity, finished tasks give their
 * memory back, a `memoryLimit` makes exhaustion a typed, transient `OutOfMemoryError` that
 * freeing recovers from, and `init` releases the device it replaces.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Stream, type StreamPolicy, getStreamPolicy, setStreamPolicy } from "@weft/environment";
import { DisposedDeviceError, TensorComputationError } from "@weft/fusion";
import { OutOfMemoryError } from "@weft/server";
import { type Device, type Tensor, ones, randn, setDevice, tensor, tidy } from "@weft/tensor";
import { init } from "../device/init.js";
import { createCpuDevice } from "../device/backends.js";
import { BACKENDS, quiescentDevice, settle, snapshot } from "./harness.js";

const MiB = 1024 * 1024;

describe.each(BACKENDS)("resource bounds on $name", (backend) => {
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

  it("short tasks borrowing the weights leave live handles flat; each task's view is freed by the task", async () => {
    const w = tidy(() => randn([8, 8], { seed: 1 }).mul(0.1));
    const b = tensor([1, 2, 3, 4, 5, 6, 7, 8]);
    await device.syncAll();
    const handles = device.memory().liveHandles;
    const tasks = backend.name === "cpu" ? 1000 : 100;
    const released = device.stats().viewsReleased;
    for (let i = 0; i < tasks; i++) {
      await Stream.spawn(async () => {
        const y = tidy(() => ones([2, 8]).mul(i).matmul(w).add(b).relu());
        await y.data();
        y.dispose();
      });
    }
    expect(device.memory().liveHandles, "nothing piles up per task").toBe(handles);
    expect(device.stats().borrowedViews, "no view outlives its task").toBe(0);
    // `b` is borrowed by the add and `w` by the matmul (a 2-D product borrows its operands as
    // they are): two views per task, each freed by the task.
    expect(device.stats().viewsReleased - released, "each task's two views freed by the task").toBe(2 * tasks);
    w.dispose();
    b.dispose();
    expect(await settle(device, baseline)).toEqual([]);
  });

  it("new shapes and new scalars keep every cache within its capacity, with plans and pipelines bounded", async () => {
    const plansBefore = device.stats().plans;
    for (let n = 1; n <= 60; n++) {
      const y = tidy(() => ones([n, 3]).mul(n * 0.5).add(1 / n).exp());
      await y.data();
      y.dispose();
    }
    const stats = device.stats();
    for (const [name, cache] of Object.entries(stats.caches)) {
      expect(cache.size, `${name} within its capacity`).toBeLessThanOrEqual(cache.capacity);
    }
    expect(stats.pipelines, "pipelines held are bounded by the pipeline cache").toBeLessThanOrEqual(
      stats.caches["pipelines"]?.capacity ?? stats.caches["compiledKernels"]?.capacity ?? 0,
    );
    // Relative shapes: 60 shapes are a handful of structures (a dim of 1, [3, 3] repeating a dim, the rest).
    expect(stats.plans - plansBefore, "plans per graph structure, not per shape or scalar").toBeLessThanOrEqual(6);
    expect(stats.launches).toBeGreaterThan(0);
    expect(await settle(device, baseline)).toEqual([]);
  });

  it("32 finished tasks hold far less than 256 MiB, and releaseUnused gives every free page back", async () => {
    await Promise.all(
      Array.from({ length: 32 }, (_, i) =>
        Stream.spawn(async () => {
          const y = tidy(() => tensor([i, i + 1, i + 2]).mul(2));
          expect(Array.from(await y.data())).toEqual([2 * i, 2 * i + 2, 2 * i + 4]);
          y.dispose();
        }),
      ),
    );
    expect(device.memory().bytesReserved).toBeLessThan(256 * MiB);
    expect(device.memory().streams, "bounded by the server's slots").toBeLessThanOrEqual(32);
    device.releaseUnused();
    expect(device.memory()).toMatchObject({ bytesInUse: baseline, bytesReserved: 0, streams: 0 });
    expect(await settle(device, baseline)).toEqual([]);
  });
});

describe("memoryLimit and device release (CPU)", () => {
  it("a 16 MiB cap: the tensor past it carries a typed, transient OutOfMemoryError; freeing recovers", async () => {
    const device = createCpuDevice({ memoryLimit: 16 * MiB });
    setDevice(device);
    const n = (10 * MiB) / 4;
    const a = ones([n]);
    expect((await a.data()).length).toBe(n);
    const b = ones([n]);
    const error = await b.data().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error, "the read of the tensor that did not fit rejects").toBeInstanceOf(TensorComputationError);
    const root = (error as TensorComputationError).root;
    expect(root, "root cause typed").toBeInstanceOf(OutOfMemoryError);
    expect((root as OutOfMemoryError).transient).toBe(true);
    expect(root.message).toMatch(/memoryLimit 16 MiB/);
    b.dispose();
    a.dispose();
    const c = tidy(() => ones([n]).mul(2));
    expect((await c.data())[n - 1], "after freeing, the same allocation succeeds").toBe(2);
    c.dispose();
    expect(device.memory().bytesReserved).toBeLessThanOrEqual(16 * MiB);
    device.dispose();
  });

  it("init replaces the current device and releases the old one: its tensors then throw DisposedDeviceError", async () => {
    const first = await init({ backend: "cpu", log: null });
    const x = tensor([1, 2, 3]);
    const second = await init({ backend: "cpu", log: null });
    expect(second).not.toBe(first);
    expect(() => x.add(1), "a tensor of the released device").toThrow(DisposedDeviceError);
    await expect(x.data()).rejects.toThrow(/was disposed/);
    x.dispose();
    const kept = await init({ backend: "cpu", log: null, previous: "keep" });
    const y = tensor([4], { device: second });
    expect(Array.from(await y.data()), "previous: keep leaves it usable").toEqual([4]);
    y.dispose();
    second.dispose();
    kept.dispose();
  });

  it("init refuses a memoryLimit that is not a positive integer, naming the fix", async () => {
    await expect(init({ backend: "cpu", log: null, memoryLimit: -1 })).rejects.toThrow(/memoryLimit.*a positive integer/);
    await expect(init({ backend: "cpu", log: null, memoryLimit: 1.5 })).rejects.toThrow(/memoryLimit/);
  });
});

/** Keeps `Tensor` imported for the type of tidy's results in older TypeScript. */
export type { Tensor };
