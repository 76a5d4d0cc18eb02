/**
 * Fused elementwise blocks on a device with WebGPU's default limit of 8 storage buffers per stage
 * (what many browsers' adapters give), through the public API: `createWebGpuRuntime({
 * maxStorageBuffers: 8 })` cuts blocks as such a device would.
 *
 * @remarks
 * The elementwise fuser goes on past the binding limit (the results alive now may die in the
 * block) and offers its clean prefix or its longest fitting prefix
 * (backend-webgpu/src/fusion/fusers.ts, `ElementwiseFuser`; its unit tests pin the cut). Here:
 * the values, no leak, and the kernels each program may take. Skipped only where no WebGPU
 * adapter exists (never under CI).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWebGpuRuntime, type WebGpuRuntime } from "@weft/backend-webgpu";
import { FusionDevice } from "@weft/fusion";
import { Device, type Tensor, tensor, tidy } from "@weft/tensor";
import { probeAdapter } from "../device/backends.js";
import { leaks, snapshot } from "./harness.js";

const probe = await probeAdapter();
const required = process.env["CI"] === "true";

describe.skipIf(!probe.available && !required)("fused blocks on a device with 8 storage buffers per stage", () => {
  let runtime: WebGpuRuntime;
  let device: Device;
  let baseline = 0;
  const x0 = Float32Array.from({ length: 16 }, (_, i) => i / 4 - 2);

  beforeAll(async () => {
    if (!probe.available) throw new Error(`CI must run the WebGPU suites, but no adapter was found: ${probe.reason}`);
    runtime = await createWebGpuRuntime({ maxStorageBuffers: 8, autotune: false });
    device = new Device(new FusionDevice(runtime), { label: "webgpu (8 storage buffers)" });
    await device.syncAll();
    baseline = snapshot(device).bytesInUse;
  });

  afterAll(async () => {
    await device?.syncAll();
    device?.dispose();
  });

  /** Kernel launches `body` makes, counted once every stream drained. */
  async function launches(body: () => Promise<void>): Promise<number> {
    await device.syncAll();
    const before = runtime.counters.launches;
    await body();
    await device.syncAll();
    return runtime.counters.launches - before;
  }

  /** `adds` dependent `+ 1` on `x`, every result alive until the step's `tidy` ends. */
  const chain = (x: Tensor, adds: number): Tensor[] => {
    const ys: Tensor[] = [];
    let y = x;
    for (let k = 0; k < adds; k++) ys.push((y = y.add(1)));
    return ys;
  };

  it("the runtime binds at most 8 storage buffers per kernel", () => {
    expect(runtime.profile.maxStorageBuffers).toBe(8);
  });

  it("a tidy loop whose steps hold ten live results and return nothing launches no kernel", async () => {
    const x = tensor(x0, { device, shape: [16] });
    const n = await launches(async () => {
      for (let s = 0; s < 300; s++) {
        tidy(() => {
          chain(x, 10);
          return undefined;
        });
      }
    });
    x.dispose();
    expect(n, "every step is dead code (each passes the limit: 1 input + 10 results > 8)").toBe(0);
    expect(leaks(device, baseline)).toEqual([]);
  });

  it("steps of twelve live results keeping only their last: no kernel writes a dropped result", async () => {
    const x = tensor(x0, { device, shape: [16] });
    const kept: Tensor[] = [];
    const n = await launches(async () => {
      for (let s = 0; s < 5; s++) kept.push(tidy(() => chain(x, 12)[11] as Tensor));
      const values = await Promise.all(kept.map((k) => k.data()));
      for (const v of values) expect([...v]).toEqual([...x0].map((e) => e + 12));
    });
    expect(n, "at most one kernel per step (steps may share one): the eleven dropped results of each are never written").toBeLessThanOrEqual(5);
    for (const k of kept) k.dispose();
    x.dispose();
    expect(leaks(device, baseline)).toEqual([]);
  });

  it("a step keeping all twelve results: blocks cut at the limit, every value right", async () => {
    const x = tensor(x0, { device, shape: [16] });
    let ys: Tensor[] = [];
    const n = await launches(async () => {
      ys = tidy(() => chain(x, 12));
      const values = await Promise.all(ys.map((y) => y.data()));
      values.forEach((v, k) => expect([...v], `result ${k + 1}`).toEqual([...x0].map((e) => e + k + 1)));
    });
    expect(n, "1 input + 12 written results cannot be one kernel").toBeGreaterThan(1);
    expect(n, "but the chain stays fused into a few kernels").toBeLessThanOrEqual(3);
    for (const y of ys) y.dispose();
    x.dispose();
    expect(leaks(device, baseline)).toEqual([]);
  });
});
