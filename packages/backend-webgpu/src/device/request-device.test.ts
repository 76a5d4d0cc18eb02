import { describe, expect, it } from "vitest";
import { probeWebGpu, requestWebGpuDevice } from "./request-device.js";

describe("requestWebGpuDevice", () => {
  it("probing reports an adapter without throwing or consuming it", async () => {
    const probe = await probeWebGpu();
    expect(probe.available, `this machine has Dawn on GLES (or Vulkan): ${probe.reason}`).toBe(true);
    const device = await requestWebGpuDevice();
    expect(device.info.description, "the device comes from the probed kind of adapter").toBe(probe.info?.description);
    device.device.destroy();
  });

  it("the device is granted the adapter's limits, not the defaults", async () => {
    const gpu = await requestWebGpuDevice();
    for (const name of ["maxStorageBufferBindingSize", "maxComputeWorkgroupSizeX", "maxComputeInvocationsPerWorkgroup"] as const) {
      expect(gpu.limits[name], `${name} is requested at the adapter's maximum`).toBe(gpu.adapter.limits[name]);
    }
    gpu.device.destroy();
  });

  it("a named backend that has no adapter reports why instead of throwing", async () => {
    const probe = await probeWebGpu({ backend: "vulkan" });
    if (probe.available) expect(probe.info?.backend, "an adapter found on Vulkan says so").toBe("vulkan");
    else expect(probe.reason, "the reason names the backend tried").toMatch(/vulkan/);
  });
});
