export { WebGpuRuntime } from "./web-gpu-runtime.js";
export type { WebGpuRuntimeOptions } from "./web-gpu-runtime.js";
export { createWebGpuRuntime } from "./create-runtime.js";
export type { CreateWebGpuRuntimeOptions } from "./create-runtime.js";
export { DirectGpuServer } from "./direct-gpu-server.js";
export { ElementwiseFuser, ReduceFuser, MatmulFuser } from "./fusers.js";
export { WebGpuOptimization } from "./optimization.js";
export type { RuntimeCounters } from "./counters.js";
