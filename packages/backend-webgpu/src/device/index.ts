/**
 * Finding a WebGPU adapter and requesting a device with its limits, in Node (Dawn through the
 * `webgpu` package, loaded lazily) and in browsers (`navigator.gpu`).
 *
 * @module
 */
export { requestWebGpuDevice, probeWebGpu, describeAdapter, REQUESTED_LIMITS, OPTIONAL_FEATURES } from "./request-device.js";
export type {
  WebGpuBackendChoice,
  WebGpuDeviceOptions,
  WebGpuAdapterDescription,
  WebGpuDevice,
  WebGpuProbe,
} from "./request-device.js";
export type { WebGpuBackend } from "./gpu-provider.js";
export { vulkanLoaderPresent } from "./gpu-provider.js";
export { BufferUsage, MapMode } from "./gpu-constants.js";
