/// <reference types="@webgpu/types" preserve="true" />
/**
 * `@weft/backend-webgpu`: Weft's WebGPU backend — device discovery, the `WebGpuServer`, WGSL code
 * generation, a kernel for every operation, the fusers and the `WebGpuRuntime`.
 *
 * The reference above stays in the emitted `index.d.ts` (`preserve`), so a consumer's compiler
 * loads `@webgpu/types` with this package and GPU types are never silently `any`.
 *
 * @module
 */
export { requestWebGpuDevice, probeWebGpu, describeAdapter, REQUESTED_LIMITS, OPTIONAL_FEATURES, BufferUsage, MapMode } from "./device/index.js";
export type { WebGpuBackendChoice, WebGpuDeviceOptions, WebGpuAdapterDescription, WebGpuDevice, WebGpuProbe, WebGpuBackend } from "./device/index.js";
export { WebGpuServer } from "./server/index.js";
export type { WebGpuServerOptions, WebGpuServerStats } from "./server/index.js";
export type { WgslKernel } from "./kernel.js";
export { DEFAULT_ENTRY_POINT } from "./kernel.js";

export type { WebGpuHandle } from "./handle/index.js";
export { reshapeView, permuteView, expandView, sliceView } from "./handle/index.js";

export { WgslBuilder, ExprGraph, emitExpressions, Preamble, helperName, UNARY, BINARY, deviceProfile, literal, wgslType, pcg } from "./codegen/index.js";
export type { DeviceProfile, ValueType, ExprNode, NodeId, StridedLayout, HelperName } from "./codegen/index.js";

export { elementwiseKernel, reducePassKernel, matmulKernel, gatherKernel, MATMUL_CONFIGS, REDUCE_ITERATIONS } from "./kernels/index.js";
export type { ElementwiseSpec, ReducePassSpec, MatmulSpec, MatmulConfig, GatherSpec, KernelLaunchPlan } from "./kernels/index.js";

export { WebGpuRuntime, createWebGpuRuntime, adapterName, chooseMatmulConfig, DirectGpuServer, ElementwiseFuser, ReduceFuser, MatmulFuser, WebGpuOptimization } from "./fusion/index.js";
export type { WebGpuRuntimeOptions, WebGpuAutotuneOptions, CreateWebGpuRuntimeOptions, RuntimeCounters, MatmulChooser } from "./fusion/index.js";
export { MATMUL_TUNABLE, matmulTunableSet, matmulCandidate, matmulTuneKey, prepareMatmulInputs, readMatmulOutput } from "./autotune/index.js";
export type { MatmulTuneInputs, MatmulTuneOutput, MatmulTunable, MatmulCandidate, MatmulTunableSetOptions, PlanSource } from "./autotune/index.js";
