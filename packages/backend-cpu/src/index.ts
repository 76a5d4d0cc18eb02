/**
 * `@weft/backend-cpu`: the CPU backend — a plain TypeScript `FusionRuntime` over a host compute
 * server, with the elementwise fuser. The oracle every conformance test compares against, and the
 * embedded default when no WebGPU adapter exists.
 *
 * @module
 */
export { CpuRuntime, createCpuRuntime } from "./runtime/cpu-runtime.js";
export type { CpuRuntimeOptions } from "./runtime/cpu-runtime.js";
export { CpuFusionStats } from "./runtime/cpu-stats.js";
export type { CpuHandle } from "./handle/cpu-handle.js";
export { hostBytesPerElement } from "./handle/cpu-handle.js";
export type { CpuKernel } from "./kernels/cpu-kernel.js";
export type { KernelPath, KernelPathChoice } from "./kernels/kernel-path.js";
export { codeGeneration } from "./kernels/kernel-path.js";
export { ElementwiseCache, ELEMENTWISE_CACHE_CAPACITY } from "./kernels/elementwise-codegen.js";
export { cpuKernelReport, describeCpuKernels } from "./runtime/kernel-report.js";
export type { CpuKernelReport } from "./runtime/kernel-report.js";
export { wasmSupport, WASM_GEMM_MAX_BYTES } from "./kernels/matmul-wasm.js";
export type { WasmSupport } from "./kernels/wasm-module.js";
export { wasmReduceSupport, WASM_REDUCE_MIN, SUM_BLOCK } from "./kernels/reduce-wasm.js";
export { configureCpuThreads, cpuThreads, MAX_CPU_THREADS, THREADED_MATMUL_MIN_WORK } from "./kernels/matmul-threads.js";
export { THREADED_ELEMENTWISE_MIN_WORK, threadedElementwiseLaunches } from "./kernels/elementwise-threads.js";
export { ElementwiseFuser, MAX_FUSED_OPERATIONS } from "./fusion/elementwise-fuser.js";
export { ElementwiseOptimization } from "./fusion/elementwise-optimization.js";
export { MatmulFuser } from "./fusion/matmul-fuser.js";
export { MatmulEpilogueOptimization } from "./fusion/matmul-optimization.js";
export { IndexOutOfRangeError, InvalidOperationError } from "./errors/cpu-errors.js";
export { pcg, randomValue } from "./numerics/random.js";
export { erf, gelu, roundHalfEven } from "./numerics/special.js";
