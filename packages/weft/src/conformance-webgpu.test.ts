/**
 * The conformance kit on the WebGPU backend in Node (Dawn: Vulkan on a GPU machine, Mesa's
 * software OpenGL ES elsewhere — docs/design.md#where-webgpu-runs), against the CPU backend run unfused.
 *
 * @remarks
 * Skipped, with the reason printed, only when no WebGPU adapter exists here (the probe says why).
 * No case is skipped or loosened: a failing case is a bug in the backend or the oracle, reported
 * by the case's own message (every failing output, worst element, got vs oracle, tolerance).
 * Teardown drains both devices, so no submitted work outlives the suite; neither `WebGpuRuntime`
 * nor `WebGpuServer` exposes a way to destroy the `GPUDevice`, which the worker's exit releases.
 */
import { it } from "vitest";
import { describeBackend, thresholdCases } from "@weft/tensor/testing";
import { createWebGpuRuntime } from "@weft/backend-webgpu";
import { FusionDevice } from "@weft/fusion";
import { Device } from "@weft/tensor";
import { createCpuDevice, createWebGpuDevice, probeAdapter } from "./device/backends.js";

const probe = await probeAdapter();

if (probe.available) {
  describeBackend("webgpu", () => createWebGpuDevice(), {
    oracle: () => createCpuDevice({ fusion: false }),
    teardown: async (device, oracle) => {
      await device.syncAll();
      await oracle.syncAll();
    },
  });
  // The threshold cases again on 4-invocation workgroups: a second reduction pass from 257
  // elements, a third from 65,537, and more than 65,535 workgroups (a 2-D dispatch) from 262,141.
  describeBackend("webgpu (workgroups of 4)", () => createSmallWorkgroupDevice(), {
    oracle: () => createCpuDevice({ fusion: false }),
    cases: () => thresholdCases(),
    teardown: async (device, oracle) => {
      await device.syncAll();
      await oracle.syncAll();
    },
  });
} else if (process.env["CI"] === "true") {
  // CI must run the WebGPU suite: software WebGPU (Mesa GLES) is installed by scripts/setup-system.sh.
  it("conformance: webgpu has an adapter in CI", () => {
    throw new Error(`CI must run the WebGPU conformance suite, but no WebGPU adapter was found: ${probe.reason}`);
  });
} else {
  console.warn(`conformance: webgpu skipped — no WebGPU adapter here: ${probe.reason}`);
  it.skip(`conformance: webgpu (no WebGPU adapter here: ${probe.reason})`, () => {});
}

/** A WebGPU device whose kernels use 4-invocation workgroups (see `WebGpuRuntimeOptions.workgroupSize`). */
async function createSmallWorkgroupDevice(): Promise<Device> {
  const runtime = await createWebGpuRuntime({ workgroupSize: 4, autotune: false });
  return new Device(new FusionDevice(runtime), { label: "webgpu (workgroups of 4)" });
}
