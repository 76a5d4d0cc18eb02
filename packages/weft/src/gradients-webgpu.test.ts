/**
 * The gradient kit of `@weft/autodiff` on the WebGPU backend in Node (Dawn: Vulkan on a GPU
 * machine, Mesa's software OpenGL ES elsewhere): every op's gradient, computed on the device by
 * the backward pass it records and fuses, against central differences on the unfused CPU oracle.
 * Skipped only when no adapter exists here, and never under CI (see `conformance-webgpu.test.ts`).
 */
import { it } from "vitest";
import { describeGradients } from "@weft/autodiff/testing";
import { createCpuDevice, createWebGpuDevice, probeAdapter } from "./device/backends.js";

const probe = await probeAdapter();

if (probe.available) {
  describeGradients("webgpu", () => createWebGpuDevice(), {
    oracle: () => createCpuDevice({ fusion: false }),
    teardown: async (device, oracle) => {
      await device.syncAll();
      await oracle.syncAll();
    },
  });
} else if (process.env["CI"] === "true") {
  it("gradients: webgpu has an adapter in CI", () => {
    throw new Error(`CI must run the WebGPU gradient suite, but no WebGPU adapter was found: ${probe.reason}`);
  });
} else {
  console.warn(`gradients: webgpu skipped — no WebGPU adapter here: ${probe.reason}`);
  it.skip(`gradients: webgpu (no WebGPU adapter here: ${probe.reason})`, () => {});
}
