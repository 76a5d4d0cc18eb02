/// <reference types="@webgpu/types" />
import { requestWebGpuDevice } from "../device/request-device.js";
import type { ComputeServer } from "@weft/server";
import type { WgslKernel } from "../kernel.js";
import { WebGpuServer } from "../server/webgpu-server.js";
import { DirectGpuServer } from "./direct-gpu-server.js";
import { WebGpuRuntime } from "./web-gpu-runtime.js";

/** Options of {@link createWebGpuRuntime}. */
export interface CreateWebGpuRuntimeOptions {
  /** The device to run on; default: `requestWebGpuDevice()` (Vulkan, else software GLES). */
  readonly device?: GPUDevice;
  /**
   * The server that launches kernels: default `"webgpu"` (the full {@link WebGpuServer}: streams,
   * pools, taint); `"direct"` is the minimal {@link DirectGpuServer}; or any server instance.
   */
  readonly server?: ComputeServer<WgslKernel> | "webgpu" | "direct";
  /** Whether to fuse (default true). */
  readonly fusion?: boolean;
}

/**
 * Creates a {@link WebGpuRuntime} ready for a `FusionDevice` (and the conformance kit):
 * `await createWebGpuRuntime()` on whatever adapter exists.
 * @throws UnsupportedError when no WebGPU adapter exists.
 */
export async function createWebGpuRuntime(options: CreateWebGpuRuntimeOptions = {}): Promise<WebGpuRuntime> {
  const device = options.device ?? (await requestWebGpuDevice()).device;
  const choice = options.server ?? "webgpu";
  const server = choice === "webgpu" ? new WebGpuServer(device) : choice === "direct" ? new DirectGpuServer(device) : choice;
  return new WebGpuRuntime({
    server,
    limits: device.limits,
    features: device.features,
    ...(options.fusion === undefined ? {} : { fusion: options.fusion }),
  });
}
