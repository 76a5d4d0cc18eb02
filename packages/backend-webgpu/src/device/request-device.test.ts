import { describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { missingGlesPackages, vulkanLoaderPresent } from "./gpu-provider.js";
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

  it("auto asks for Vulkan only where a Vulkan loader can be found", async () => {
    const loader =
      Boolean(process.env["VK_DRIVER_FILES"] || process.env["VK_ICD_FILENAMES"]) ||
      ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib", ...(process.env["LD_LIBRARY_PATH"] ?? "").split(":").filter(Boolean)].some((d) =>
        existsSync(`${d}/libvulkan.so.1`),
      );
    expect(vulkanLoaderPresent(), "the detection agrees with the files and variables it documents").toBe(loader || process.platform !== "linux");
    if (!vulkanLoaderPresent()) {
      const probe = await probeWebGpu();
      expect(probe.info?.backend, "without a loader auto goes straight to OpenGL ES").toBe("opengles");
    }
  });

  it("advises installing only the OpenGL ES packages whose library is missing", () => {
    const dirs = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib", ...(process.env["LD_LIBRARY_PATH"] ?? "").split(":").filter(Boolean)];
    const present = (file: string) => dirs.some((d) => existsSync(`${d}/${file}`));
    const expected = [
      ["libegl1", "libEGL.so.1"],
      ["libegl-mesa0", "libEGL_mesa.so.0"],
      ["libgles2", "libGLESv2.so.2"],
    ]
      .filter(([, file]) => !present(file ?? ""))
      .map(([name]) => name);
    expect(missingGlesPackages(), "exactly the packages whose library is absent").toEqual(process.platform === "linux" ? expected : undefined);
  });
});
