/// <reference types="@webgpu/types" preserve="true" />
import { describeAdapter, requestWebGpuDevice, type WebGpuAdapterDescription } from "../device/request-device.js";
import { checkInteger } from "@weft/environment";
import type { ComputeServer } from "@weft/server";
import type { WgslKernel } from "../kernel.js";
import { WebGpuServer, type WebGpuServerOptions } from "../server/webgpu-server.js";
import { WebGpuRuntime, type WebGpuAutotuneOptions } from "./webgpu-runtime.js";

/** Options of {@link createWebGpuRuntime}. */
export interface CreateWebGpuRuntimeOptions {
  /** The device to run on; default: `requestWebGpuDevice()` (Vulkan, else software GLES). */
  readonly device?: GPUDevice;
  /**
   * The server that launches kernels: default a new {@link WebGpuServer} on `device` (streams,
   * pools, taint), or any server instance (a wrapper that measures it, a test double).
   */
  readonly server?: ComputeServer<WgslKernel>;
  /** Whether to fuse (default true). */
  readonly fusion?: boolean;
  /**
   * The adapter `device` came from (what autotune results are recorded for). Default: the one
   * `requestWebGpuDevice()` found, else `device.adapterInfo` when the device is given.
   */
  readonly adapter?: WebGpuAdapterDescription | GPUAdapter;
  /** Autotune options, or `false` for the heuristic matmul configuration only (default: on). */
  readonly autotune?: false | WebGpuAutotuneOptions;
  /** The 1-D workgroup size (see `WebGpuRuntimeOptions.workgroupSize`); default the preferred one. */
  readonly workgroupSize?: number;
  /**
   * Caps the storage buffers one kernel binds below the device's `maxStorageBuffersPerShaderStage`
   * (an integer ≥ 8: WebGPU's default limit, which every kernel fits). Fused blocks are then cut
   * as on a device with that limit — what many browsers' adapters give — so a program can be
   * checked here as it will run there (the random programs do, with 8). Default: the device's.
   */
  readonly maxStorageBuffers?: number;
  /**
   * The device's memory cap for the default server (`weft.init({ memoryLimit })`): beyond it an
   * allocation fails with a typed, transient `OutOfMemoryError` after every free page was
   * reclaimed, before the native allocator is asked. Default: none.
   */
  readonly memoryLimit?: number;
  /** Server tuning for the default server (`maxPipelines`, page sizes, dealloc policy…). */
  readonly serverOptions?: WebGpuServerOptions;
  /**
   * Whether `runtime.dispose()` destroys the `GPUDevice`. Default: true when this function
   * requested the device, false for a given one (its creator owns it).
   */
  readonly ownsDevice?: boolean;
}

/** The autotune adapter name: description and backend (`"NVIDIA H200 (vulkan)"`). */
export function adapterName(adapter: Pick<WebGpuAdapterDescription, "description" | "backend">): string {
  return `${adapter.description} (${adapter.backend})`;
}

/** A description of a given device's adapter, from `device.adapterInfo` where the platform has it. */
function deviceAdapter(device: GPUDevice): string {
  const info = (device as Partial<Pick<GPUDevice, "adapterInfo">>).adapterInfo;
  if (info === undefined) return "unknown adapter (given device)";
  const description = info.description || info.device || info.architecture || "unknown adapter";
  return `${description}${info.vendor ? ` [${info.vendor}]` : ""} (given device)`;
}

/**
 * Creates a {@link WebGpuRuntime} ready for a `FusionDevice` (and the conformance kit):
 * `await createWebGpuRuntime()` on whatever adapter exists.
 * @throws UnsupportedError when no WebGPU adapter exists.
 */
export async function createWebGpuRuntime(options: CreateWebGpuRuntimeOptions = {}): Promise<WebGpuRuntime> {
  let device = options.device;
  const owns = options.ownsDevice ?? device === undefined;
  const given = options.adapter;
  let adapter =
    given === undefined ? undefined : "requestDevice" in given ? `${describeAdapter(given, "browser").description} (given adapter)` : adapterName(given);
  if (device === undefined) {
    const found = await requestWebGpuDevice();
    device = found.device;
    adapter ??= adapterName(found.info);
  }
  adapter ??= deviceAdapter(device);
  const serverOptions: WebGpuServerOptions = {
    ...options.serverOptions,
    ...(options.memoryLimit === undefined ? {} : { memoryLimit: options.memoryLimit }),
  };
  const server = options.server ?? new WebGpuServer(device, serverOptions);
  const gpu = device;
  const limits = device.limits;
  const maxStorageBuffers =
    options.maxStorageBuffers === undefined ? undefined : checkInteger("createWebGpuRuntime", "options.maxStorageBuffers", options.maxStorageBuffers, 8);
  return new WebGpuRuntime({
    server,
    limits:
      maxStorageBuffers === undefined
        ? limits
        : {
            maxComputeInvocationsPerWorkgroup: limits.maxComputeInvocationsPerWorkgroup,
            maxComputeWorkgroupSizeX: limits.maxComputeWorkgroupSizeX,
            maxComputeWorkgroupsPerDimension: limits.maxComputeWorkgroupsPerDimension,
            maxStorageBuffersPerShaderStage: Math.min(maxStorageBuffers, limits.maxStorageBuffersPerShaderStage),
            maxComputeWorkgroupStorageSize: limits.maxComputeWorkgroupStorageSize,
          },
    features: device.features,
    adapter,
    ...(options.fusion === undefined ? {} : { fusion: options.fusion }),
    ...(options.autotune === undefined ? {} : { autotune: options.autotune }),
    ...(options.workgroupSize === undefined ? {} : { workgroupSize: options.workgroupSize }),
    ...(owns ? { onDispose: () => gpu.destroy() } : {}),
  });
}
