export { elementwiseKernel, elementwiseKey, vectorizable } from "./elementwise.js";
export type { ElementwiseSpec, ElementwiseInput, ElementwiseOutput, KernelLaunchPlan } from "./elementwise.js";
export { reducePassKernel, reducePassKey, REDUCE_ITERATIONS } from "./reduce.js";
export type { ReducePassSpec } from "./reduce.js";
export { matmulKernel, matmulKey, matmulCombineKernel, launchMatmul, configName, splitOf, splitApplies, MATMUL_CONFIGS } from "./matmul.js";
export type { MatmulSpec, MatmulConfig, MatmulRunner } from "./matmul.js";
export { gatherKernel, gatherKey } from "./gather.js";
export type { GatherSpec } from "./gather.js";
