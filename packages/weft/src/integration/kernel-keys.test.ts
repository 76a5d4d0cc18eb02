/**
 * Kernels are keyed on structure only (issue 3, first bullet): scalars, fill values, clamp bounds,
 * arange start/step and random seeds are uniforms, so a loop that changes them every step compiles
 * nothing after its first step — on CPU and on WebGPU (Dawn). Counts, never timings.
 *
 * @remarks
 * **What is counted.** WebGPU: pipelines the server created (`WebGpuServer.stats().pipelines`)
 * and kernels the runtime generated (`counters.kernelsGenerated`). CPU: kernels the host server
 * compiled (`HostComputeServer.stats().compiled`). Each scenario runs one warm-up step, records
 * the counts, runs the rest with a new value every step, and requires the counts unchanged.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CpuRuntime } from "@weft/backend-cpu";
import type { WebGpuRuntime } from "@weft/backend-webgpu";
import * as weft from "@weft/tensor";
import { BACKENDS, engineOf } from "./harness.js";

/** What a backend has compiled so far (pipelines or host kernels, and generated kernels). */
function compiled(device: weft.Device): { pipelines: number; generated: number } {
  const runtime = engineOf(device).runtime as unknown;
  if (device.backend === "cpu") {
    const compiledKeys = (runtime as CpuRuntime).server.stats().compiled;
    return { pipelines: compiledKeys, generated: compiledKeys };
  }
  const gpu = runtime as WebGpuRuntime;
  const server = gpu.server as unknown as { stats(): { pipelines: number } };
  return { pipelines: server.stats().pipelines, generated: gpu.counters.kernelsGenerated };
}

for (const backend of BACKENDS) {
  describe(`kernel keys hold structure only (${backend.name})`, () => {
    let device: weft.Device;
    beforeAll(async () => {
      device = await backend.create();
    });
    afterAll(async () => {
      await device.syncAll();
    });

    /** 600 steps `w ← clamp(w - lr·g, lo, 10)` with a new `lr` and `lo` every step; reads every `readEvery` steps. */
    const sgd = async (readEvery: number): Promise<{ counts: { pipelines: number; generated: number }[]; got: ArrayLike<number> }> => {
      const w0 = weft.tensor([0.5, -1, 2, 3, -0.25, 1.5, 7], { device });
      const g = weft.tensor([0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7], { device });
      let w = w0.clone();
      const counts: { pipelines: number; generated: number }[] = [];
      for (let i = 0; i < 600; i++) {
        const lr = 0.1 * 0.99 ** i;
        const next = weft.tidy(() => w.sub(g.mul(lr)).clamp(-10 + i / 1000, 10));
        w.dispose();
        w = next;
        if ((i + 1) % readEvery === 0) await w.data();
        counts.push(compiled(device));
      }
      const got = await w.data();
      w.dispose();
      w0.dispose();
      g.dispose();
      return { counts, got };
    };

    it("600 SGD steps with a decaying learning rate (a read per step) compile nothing after the first steps", async () => {
      const { counts, got } = await sgd(1);
      // Step 1 writes a fresh output (w is a clone of w0, so not writable in place); from step 2
      // on the dying w is overwritten in place: one more kernel, by structure. Then nothing.
      const [first, second, last] = [counts[0], counts[1], counts[counts.length - 1]];
      expect(second?.pipelines, "the in-place variant of the step is the only other kernel").toBeLessThanOrEqual((first?.pipelines ?? 0) + 1);
      expect(last?.pipelines, `pipelines after step 2: ${second?.pipelines}, after 600 steps: ${last?.pipelines}`).toBe(second?.pipelines);
      expect(last?.generated, "no kernel is generated for a new scalar").toBe(second?.generated);
      // The values are the ones each step's scalar asked for (checked on the host).
      const want = [0.5, -1, 2, 3, -0.25, 1.5, 7];
      const grad = [0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7];
      for (let i = 0; i < 600; i++) {
        const lr = Math.fround(0.1 * 0.99 ** i);
        for (let k = 0; k < want.length; k++) want[k] = Math.min(Math.max(Math.fround((want[k] ?? 0) - Math.fround((grad[k] ?? 0) * lr)), Math.fround(-10 + i / 1000)), 10);
      }
      for (let k = 0; k < want.length; k++) expect(Math.abs((got[k] ?? NaN) - (want[k] ?? 0)), `w[${k}]`).toBeLessThan(1e-4);
    });

    it("600 steps read every 50: fused blocks of several steps differ in structure, never in values", async () => {
      const { counts } = await sgd(50);
      const [mid, last] = [counts[99], counts[counts.length - 1]];
      // The blocks between two reads are longer chains (structure); after the first 100 steps every
      // chain length has been seen, and 500 more steps with new scalars compile nothing.
      expect(last?.pipelines, `pipelines after 100 steps: ${mid?.pipelines}, after 600: ${last?.pipelines}`).toBe(mid?.pipelines);
      expect(last?.generated).toBe(mid?.generated);
    });

    it("rand/randn with a new seed, full with a new value and arange with a new start compile nothing after the first call", async () => {
      const run = async (i: number): Promise<void> => {
        const outs = weft.tidy(() => [
          weft.rand([33], { device, seed: 1000 + i }).add(weft.randn([33], { device })),
          weft.full([5], i * 0.25, { device }).exp(),
          // 12 elements every time (a new length would be a new shape: structure).
          weft.arange(i, i + 12 * (1 + (i % 7) / 8), 1 + (i % 7) / 8, { device }),
        ]);
        for (const o of outs) await o.data();
        for (const o of outs) o.dispose();
      };
      await run(0);
      const before = compiled(device);
      for (let i = 1; i < 100; i++) await run(i);
      const after = compiled(device);
      expect(after.pipelines, "100 seeds, fill values and starts share the first call's kernels").toBe(before.pipelines);
      expect(after.generated).toBe(before.generated);
    });
  });
}
