/**
 * The allocation path in a steady state: a loop that allocates an output, runs a kernel and frees
 * it creates no GPU buffer after warm-up (pages and retained buffers are reused), repeated launches
 * reuse their bind groups, and retained buffers are destroyed only at explicit cleanup or beyond
 * the retention budget.
 */
/// <reference types="@webgpu/types" preserve="true" />
import { StreamId } from "@weft/environment";
import { type OperationIr, type TensorId, type TensorIr, type TensorStatus } from "@weft/fusion";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requestWebGpuDevice } from "../device/request-device.js";
import { createWebGpuRuntime } from "../fusion/create-runtime.js";
import { WebGpuServer } from "../server/webgpu-server.js";
import { doubleKernel, fusionContext, runFused } from "../testing/gpu-test-support.js";
import { bufferSizeClass, GpuBufferStorage } from "./gpu-buffer-storage.js";

process.env["EGL_PLATFORM"] ??= "surfaceless";

const stream = StreamId.DEFAULT;
let device: GPUDevice;
/** `createBuffer` calls on `device` since the start (every kind of buffer). */
let createdBuffers = 0;
/** `createBindGroup` calls on `device` since the start. */
let createdBindGroups = 0;

beforeAll(async () => {
  device = (await requestWebGpuDevice()).device;
  const createBuffer = device.createBuffer.bind(device);
  const createBindGroup = device.createBindGroup.bind(device);
  device.createBuffer = (d: GPUBufferDescriptor) => {
    createdBuffers++;
    return createBuffer(d);
  };
  device.createBindGroup = (d: GPUBindGroupDescriptor) => {
    createdBindGroups++;
    return createBindGroup(d);
  };
});

afterAll(() => device?.destroy());

let nextId = 1;
const t = (shape: number[], status: TensorStatus = "ReadOnly"): TensorIr => ({ id: nextId++ as TensorId, shape, dtype: "f32", status });
const rw = (x: TensorIr): TensorIr => ({ ...x, status: "ReadWrite" });

/** The benchmark's chain `relu(exp(-(sin(x*0.5+1))^2) + x)`: 8 ops, one output. */
function chain(x: TensorIr, n: number): { ops: OperationIr[]; out: TensorIr } {
  const c = Array.from({ length: 8 }, () => t([n]));
  const [c1, c2, c3, c4, c5, c6, c7, c8] = c as [TensorIr, TensorIr, TensorIr, TensorIr, TensorIr, TensorIr, TensorIr, TensorIr];
  const ops: OperationIr[] = [
    { kind: "binary-scalar", op: "mul", lhs: x, scalar: 0.5, scalarFirst: false, out: c1 },
    { kind: "binary-scalar", op: "add", lhs: rw(c1), scalar: 1, scalarFirst: false, out: c2 },
    { kind: "unary", op: "sin", input: rw(c2), out: c3 },
    { kind: "binary", op: "mul", lhs: c3, rhs: rw(c3), out: c4 },
    { kind: "unary", op: "neg", input: rw(c4), out: c5 },
    { kind: "unary", op: "exp", input: rw(c5), out: c6 },
    { kind: "binary", op: "add", lhs: rw(c6), rhs: x, out: c7 },
    { kind: "unary", op: "relu", input: rw(c7), out: c8 },
  ];
  return { ops, out: c8 };
}


const double = doubleKernel("test/double");

describe("steady-state allocation", () => {
  it("a loop over a 2^20-element fused chain creates no buffer after warm-up and reuses pages", async () => {
    const server = new WebGpuServer(device, { pageSize: 1 << 20 });
    const runtime = await createWebGpuRuntime({ device, server, autotune: false });
    const ctx = fusionContext(runtime, stream);
    const n = 1 << 20;
    const x = t([n]);
    ctx.handles.registerHandle(x.id, runtime.upload({ data: Float32Array.from({ length: n }, (_, i) => (i % 17) - 8), shape: [n], dtype: "f32" } as never, stream));
    const perIteration: number[] = [];
    for (let i = 0; i < 25; i++) {
      const before = createdBuffers;
      // Two outputs alive at once (a throughput loop keeps several), then both freed.
      const a = chain(x, n);
      runFused(runtime, ctx, a.ops);
      const b = chain(x, n);
      runFused(runtime, ctx, b.ops);
      await runtime.client.sync();
      ctx.handles.removeHandle(a.out.id);
      ctx.handles.removeHandle(b.out.id);
      perIteration.push(createdBuffers - before);
    }
    const afterWarmup = perIteration.slice(5);
    expect(afterWarmup.reduce((s, c) => s + c, 0), `createBuffer calls per iteration: ${perIteration.join(",")}; 4 MiB outputs must reuse freed pages`).toBe(0);
    const stats = server.stats();
    expect(stats.buffersCreated, `page buffers created: ${stats.buffersCreated}; 50 outputs of 4 MiB (dedicated pages) must share a handful`).toBeLessThanOrEqual(6);
    expect(stats.buffersDestroyed, "nothing is destroyed without pressure or cleanup").toBe(0);
    expect(stats.bindGroupHits, "the same pages and slices come back, so do their bind groups").toBeGreaterThan(0);
    // The values are still right after all that reuse.
    const y = chain(x, n);
    runFused(runtime, ctx, y.ops);
    const got = await runtime.read(ctx.handles.getHandle(y.out), y.out, stream);
    for (const i of [0, 1, 5, 16, n - 1]) {
      const v = (i % 17) - 8;
      const want = Math.max(0, Math.exp(-(Math.sin(v * 0.5 + 1) ** 2)) + v);
      expect(Math.abs((got[i] ?? NaN) - want), `element ${i}`).toBeLessThan(1e-5);
    }
    server.cleanup();
    expect(server.stats().buffersDestroyed, "cleanup destroys the retained pages").toBeGreaterThan(0);
  });

  it("a repeated launch on the same slices reuses its bind group; a destroyed page invalidates it", async () => {
    const server = new WebGpuServer(device);
    const a = server.create(new Uint8Array(new Uint32Array([1, 2, 3, 4]).buffer), stream);
    const out = server.empty(16, stream);
    const groupsBefore = createdBindGroups;
    for (let i = 0; i < 10; i++) server.launch(double, [1, 1, 1], [{ binding: a.binding(), access: "read" }, { binding: out.binding(), access: "write" }], stream, "execute");
    await server.sync(stream);
    expect(createdBindGroups - groupsBefore, "ten launches over the same ranges create one bind group").toBe(1);
    const [bytes] = await server.read([out.binding()], stream);
    expect([...new Uint32Array(bytes?.slice().buffer ?? new ArrayBuffer(0))]).toEqual([2, 4, 6, 8]);
    a.release();
    out.release();
    await server.sync(stream);
    server.cleanup();
    // New pages (possibly at the same offsets): the old group must not be served.
    const a2 = server.create(new Uint8Array(new Uint32Array([5, 6, 7, 8]).buffer), stream);
    const out2 = server.empty(16, stream);
    const before = createdBindGroups;
    server.launch(double, [1, 1, 1], [{ binding: a2.binding(), access: "read" }, { binding: out2.binding(), access: "write" }], stream, "execute");
    await server.sync(stream);
    expect(createdBindGroups - before, "a destroyed page's groups are forgotten").toBe(1);
    const [bytes2] = await server.read([out2.binding()], stream);
    expect([...new Uint32Array(bytes2?.slice().buffer ?? new ArrayBuffer(0))], "the new group binds the new pages").toEqual([10, 12, 14, 16]);
  });

  it("retained buffers stay within the budget, oldest destroyed first, and all go at purge", () => {
    let destroyedBefore = 0;
    const storage = new GpuBufferStorage(
      device,
      { beforeDestroy: () => destroyedBefore++, track: () => undefined, takeInjectedFailure: () => false },
      "test storage",
      { retainedBytes: 3 << 20 },
    );
    const sizes = [1 << 20, (1 << 20) + (1 << 19), 1 << 21, (1 << 21) + (1 << 19)];
    const buffers = sizes.map((s) => storage.alloc(s));
    for (const b of buffers) storage.dealloc(b);
    const st = storage.stats();
    expect(st.retainedBytes, "at most 3 MiB of freed buffers are retained").toBeLessThanOrEqual(3 << 20);
    expect(st.destroyed, "the oldest buffers went over the budget").toBe(3);
    expect(destroyedBefore, "the owner may submit its encoder before any destroy").toBeGreaterThan(0);
    const again = storage.alloc(sizes[3] ?? 0);
    expect(again, "the newest retained buffer serves its size class again").toBe(buffers[3]);
    expect(storage.stats().created, "no new buffer for it").toBe(4);
    storage.dealloc(again);
    storage.purge();
    expect(storage.stats(), "purge destroys every retained buffer").toMatchObject({ retainedBytes: 0, liveBuffers: 0, destroyed: 4 });
  });
});

describe("bufferSizeClass", () => {
  it("never shrinks, wastes at most 12.5% above 256 bytes, and stays within the maximum", () => {
    for (const bytes of [1, 31, 33, 255, 257, 1000, 4096, 5000, (1 << 26) + 1, 3 << 28, 1 << 30]) {
      const c = bufferSizeClass(bytes, 1 << 30);
      expect(c, `class of ${bytes}`).toBeGreaterThanOrEqual(bytes);
      expect(c % 4, "a multiple of 4").toBe(0);
      if (bytes > 256) expect(c / bytes, `waste for ${bytes}`).toBeLessThanOrEqual(1.125);
      expect(c, "within the device maximum").toBeLessThanOrEqual(Math.max(1 << 30, bytes));
    }
    expect(bufferSizeClass((1 << 26) + 4, 1 << 26 + 1), "nearby sizes share a class").toBe(bufferSizeClass((1 << 26) + 1000, 1 << 26 + 1));
  });
});
