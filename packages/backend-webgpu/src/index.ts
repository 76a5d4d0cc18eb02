/// <reference types="@webgpu/types" preserve="true" />
/**
 * `@weft/backend-webgpu`: Weft's WebGPU backend, for users and backend authors — device discovery,
 * the `WebGpuServer` (a `ComputeServer`), the `WebGpuRuntime` that a `FusionDevice` drives, and
 * the `WgslKernel` a launch carries. Code generation, kernels, fusers and autotune sets are
 * `@weft/backend-webgpu/internal`.
 *
 * The reference above stays in the emitted `index.d.ts` (`preserve`), so a consumer's compiler
 * loads `@webgpu/types` with this package and GPU types are never silently `any`.
 *
 * @module
 */
export { requestWebGpuDevice, probeWebGpu, describeAdapter, REQUESTED_LIMITS, OPTIONAL_FEATURES, BufferUsage, MapMode } from "./device/index.js";
export type { WebGpuBackendChoice, WebGpuDeviceOptions, WebGpuAdapterDescription, WebGpuDevice, WebGpuProbe, WebGpuBackend } from "./device/index.js";
export { WebGpuServer } from "./server/index.js";
export type { ReadSubmit, WebGpuServerOptions, WebGpuServerStats } from "./server/index.js";
export type { WgslKernel } from "./kernel.js";
export { DEFAULT_ENTRY_POINT } from "./kernel.js";
export type { WebGpuHandle } from "./handle/index.js";
export { WebGpuRuntime, createWebGpuRuntime, adapterName } from "./fusion/index.js";
export type { WebGpuRuntimeOptions, WebGpuAutotuneOptions, CreateWebGpuRuntimeOptions, RuntimeCounters, MatmulChooser } from "./fusion/index.js";
