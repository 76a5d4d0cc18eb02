/**
 * Bounded resources on a real device (issue "bounded resources in the serving pattern"), as counts
 * and states, never timings: pipelines held stay at the cache's capacity however many distinct
 * kernels run (an evicted pipeline still serves a launch that was waiting for it), pages are sized
 * to the work and given back, a `memoryLimit` turns exhaustion into a typed, transient
 * `OutOfMemoryError` that freeing recovers from, and a destroyed server refuses every call.
 */
import { StreamId } from "@weft/environment";
import { DeviceLostError, OutOfMemoryError } from "@weft/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WebGpuDevice } from "../device/request-device.js";
import type { WgslKernel } from "../kernel.js";
import { WebGpuServer } from "../server/webgpu-server.js";
import { asU32, requestTestDevice, u32Bytes } from "../testing/gpu-test-support.js";

const MiB = 1024 * 1024;
const S0 = StreamId.of(0);

/** `out[i] = a[i] + k`, a distinct kernel (and pipeline) per `k`. */
const addConstant = (k: number): WgslKernel => ({
  key: `test/add-constant-${k}`,
  source: `
@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < arrayLength(&out)) { out[g.x] = a[g.x] + ${k}u; }
}`,
});

let gpu: WebGpuDevice;

beforeAll(async () => {
  gpu = await requestTestDevice();
});

afterAll(() => gpu?.device.destroy());

describe("WebGPU resource bounds", () => {
  it("pipelines held stay at maxPipelines over 40 distinct kernels; evictions are counted and every result is right", async () => {
    const server = new WebGpuServer(gpu.device, { maxPipelines: 4 });
    const a = server.create(u32Bytes([1, 2, 3]), S0);
    for (let k = 0; k < 40; k++) {
      const out = server.empty(12, S0);
      // Launched while its pipeline's validation is pending: it waits holding its entry, and the
      // following launches evict that entry from the cache before it runs.
      server.launch(addConstant(k), [1, 1, 1], [{ binding: a.binding(), access: "read" }, { binding: out.binding(), access: "write" }], S0, "execute");
      const [bytes] = await server.read([out.binding()], S0);
      expect(asU32(bytes), `kernel ${k}`).toEqual([1 + k, 2 + k, 3 + k]);
      out.release();
    }
    const stats = server.stats();
    expect(stats.pipelinesHeld, "never more than the capacity").toBe(4);
    expect(stats.pipelineEvictions).toBe(36);
    expect(server.pipelineStats()).toMatchObject({ size: 4, capacity: 4, evictions: 36 });
    expect(stats.bindGroupsHeld, "bind groups of evicted pipelines went with them").toBeLessThanOrEqual(4);
    a.release();
    server.destroy();
  });

  it("a launch queued behind a pending pipeline runs even when its pipeline is evicted before it does", async () => {
    const server = new WebGpuServer(gpu.device, { maxPipelines: 1 });
    const a = server.create(u32Bytes([10]), S0);
    const outs = [0, 1, 2, 3].map(() => server.empty(4, S0));
    outs.forEach((out, k) =>
      server.launch(addConstant(100 + k), [1, 1, 1], [{ binding: a.binding(), access: "read" }, { binding: out.binding(), access: "write" }], S0, "execute"),
    );
    expect(server.stats().pipelineEvictions, "three of the four were evicted while waiting").toBe(3);
    const results = await server.read(outs.map((o) => o.binding()), S0);
    expect(results.map((b) => asU32(b)[0])).toEqual([110, 111, 112, 113]);
    for (const o of [a, ...outs]) o.release();
    server.destroy();
  });

  it("32 finished tasks: pages were sized to their work, and releaseUnused gives everything back", async () => {
    const server = new WebGpuServer(gpu.device);
    for (let t = 0; t < 32; t++) {
      const stream = StreamId.of(1000 + t);
      const h = server.create(u32Bytes([t, t + 1, t + 2]), stream);
      const [bytes] = await server.read([h.binding()], stream);
      expect(asU32(bytes)).toEqual([t, t + 1, t + 2]);
      h.release();
    }
    const usage = server.memoryUsage();
    expect(usage.bytesInUse).toBe(0);
    expect(usage.bytesReserved, "12 bytes per task reserve small pages, far under 256 MiB").toBeLessThan(256 * MiB);
    expect(usage.bytesReserved, "at most one minimum page per slot, plus retention").toBeLessThanOrEqual(32 * 256 * 1024);
    expect(usage.streams, "the 32 task streams share the server's slots").toBeLessThanOrEqual(32);
    server.releaseUnused();
    expect(server.memoryUsage()).toMatchObject({ bytesReserved: 0, pages: 0, streams: 0 });
    server.destroy();
  });

  it("a 64 MiB memoryLimit: the allocation past it is a typed, transient OutOfMemoryError; freeing recovers", async () => {
    const server = new WebGpuServer(gpu.device, { memoryLimit: 64 * MiB });
    const a = server.empty(40 * MiB, S0);
    let error: unknown;
    try {
      server.empty(40 * MiB, S0);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OutOfMemoryError);
    expect((error as OutOfMemoryError).transient).toBe(true);
    expect((error as Error).message).toMatch(/memoryLimit 64 MiB/);
    expect(server.memory.stats().reclaims, "every free page was reclaimed before refusing").toBeGreaterThanOrEqual(1);
    a.release();
    const b = server.create(new Uint8Array(40 * MiB).fill(7), S0);
    const [bytes] = await server.read([b.binding(0, 8)], S0);
    expect(Array.from(bytes ?? [])).toEqual([7, 7, 7, 7, 7, 7, 7, 7]);
    expect(server.memoryUsage().bytesReserved).toBeLessThanOrEqual(64 * MiB);
    b.release();
    server.destroy();
  });

  it("a destroyed server gives its memory back and every later call throws DeviceLostError", async () => {
    const server = new WebGpuServer(gpu.device);
    const h = server.create(u32Bytes([1, 2]), S0);
    const pending = server.read([h.binding()], S0);
    server.destroy();
    await expect(pending, "a read still pending rejects, typed").rejects.toThrow(DeviceLostError);
    expect(() => server.empty(4, S0)).toThrow(DeviceLostError);
    expect(() => server.empty(4, S0)).toThrow(/destroyed/);
    h.release();
    expect(server.memoryUsage()).toMatchObject({ bytesReserved: 0, liveAllocations: 0 });
  });
});
