/**
 * `SharedEncoder` on its own: what it holds between two submits, what `finish` hands over, and
 * that its uniform arenas go back whether or not finishing succeeds.
 */
import type { AllocationId } from "@weft/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WebGpuDevice } from "../device/request-device.js";
import { requestTestDevice } from "../testing/gpu-test-support.js";
import { UniformArenas, type UniformArena } from "./uniform-arenas.js";
import { SharedEncoder } from "./webgpu-stream.js";

let gpu: WebGpuDevice;

beforeAll(async () => {
  gpu = await requestTestDevice();
});

afterAll(() => {
  gpu.device.destroy();
});

/** Arenas that count what is acquired and what comes back. */
class CountingArenas extends UniformArenas {
  acquired = 0;
  recycled = 0;
  override acquire(): UniformArena {
    this.acquired++;
    return super.acquire();
  }
  override recycle(arena: UniformArena, lost: boolean): void {
    this.recycled++;
    super.recycle(arena, lost);
  }
}

/** A distinct compute pipeline (`k` changes its code). */
function testPipeline(k: number): GPUComputePipeline {
  const code = `@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@compute @workgroup_size(1) fn main() { a[0] = a[0] + ${k}.0; }`;
  return gpu.device.createComputePipeline({ layout: "auto", compute: { module: gpu.device.createShaderModule({ code }), entryPoint: "main" } });
}

describe("SharedEncoder", () => {
  it("holds one encoder, one pass and the uniform regions of every launch until finish; finish resets it and release gives the arenas back", () => {
    const arenas = new CountingArenas(gpu.device, () => undefined);
    const shared = new SharedEncoder(gpu.device, arenas);
    expect(shared.open, "nothing encoded yet").toBe(false);
    expect(shared.finish(), "nothing to finish").toBeUndefined();
    const pipeline = testPipeline(1);
    const pass = shared.passWith(pipeline);
    expect(shared.passWith(pipeline), "one pass until finish").toBe(pass);
    const a = shared.uniformRegion(new Uint8Array([1, 2, 3]));
    const b = shared.uniformRegion(new Uint8Array(20));
    expect([a.size, b.size], "regions are padded to 16 bytes").toEqual([16, 32]);
    expect(b.buffer, "small regions share one arena").toBe(a.buffer);
    expect(b.offset % gpu.device.limits.minUniformBufferOffsetAlignment, "at the device's offset alignment").toBe(0);
    expect(b.offset).toBeGreaterThan(a.offset);
    shared.dispatches = 3;
    shared.refer(7 as AllocationId);
    const done = shared.finish();
    expect(done, "an open encoder finishes into commands").toBeDefined();
    expect([shared.open, shared.dispatches, shared.referCount, shared.refers(7 as AllocationId)], "finish resets everything").toEqual([false, 0, 0, false]);
    gpu.device.queue.submit([done!.commands]);
    expect(arenas.recycled, "arenas stay out until the caller's submit").toBe(0);
    done!.release(false);
    expect([arenas.acquired, arenas.recycled], "one arena taken, one given back").toEqual([1, 1]);
  });

  it("gives its arenas back when finishing fails, and opens a fresh encoder after", () => {
    const arenas = new CountingArenas(gpu.device, () => undefined);
    const shared = new SharedEncoder(gpu.device, arenas);
    const pipeline = testPipeline(1);
    const pass = shared.passWith(pipeline);
    shared.uniformRegion(new Uint8Array(16));
    pass.end = () => {
      throw new Error("injected: end failed");
    };
    expect(() => shared.finish(), "the failure reaches the caller").toThrow(/injected/);
    expect(arenas.recycled, "the arena went back, not lost").toBe(1);
    expect(shared.open, "nothing is held after the failure").toBe(false);
    expect(shared.passWith(pipeline), "the next launch gets a new pass").not.toBe(pass);
    shared.finish()?.release(false);
  });

  it("sets a pipeline on its pass only when it changes, and again on every new pass", () => {
    const shared = new SharedEncoder(gpu.device, new UniformArenas(gpu.device, () => undefined));
    const [p1, p2] = [testPipeline(1), testPipeline(2)];
    const first = shared.passWith(p1);
    const proto = Object.getPrototypeOf(first) as { setPipeline: (p: GPUComputePipeline) => void };
    const setPipeline = proto.setPipeline;
    const set: GPUComputePipeline[] = [];
    proto.setPipeline = function (this: GPUComputePassEncoder, p: GPUComputePipeline): void {
      set.push(p);
      setPipeline.call(this, p);
    };
    try {
      shared.passWith(p1);
      expect(set, "the pass still has p1: no call").toEqual([]);
      shared.passWith(p2);
      shared.passWith(p2);
      shared.passWith(p1);
      expect(set, "one call per change").toEqual([p2, p1]);
      const done = shared.finish();
      gpu.device.queue.submit([done!.commands]);
      done!.release(false);
      const second = shared.passWith(p1);
      expect(second, "a new pass after finish").not.toBe(first);
      expect(set, "a new pass has no pipeline: p1 is set again").toEqual([p2, p1, p1]);
      shared.finish()?.release(false);
    } finally {
      proto.setPipeline = setPipeline;
    }
  });
});
