/**
 * `@weft/backend-webgpu/internal`: the backend's machinery — WGSL code generation, the kernels,
 * the fusers and their optimizations, handle views, the matmul autotune set, the server's parts
 * (streams, pipeline store, readback). For sibling `@weft/*` packages, tools and tests; not a
 * stable API.
 *
 * @module
 */
export { reshapeView, permuteView, expandView, sliceView, contiguousHandle, releaseWebGpuHandle } from "./handle/index.js";
export { WgslBuilder, ExprGraph, emitExpressions, pcg, Preamble, helperName, UNARY, BINARY, convert, deviceProfile, literal, wgslType, storageElement } from "./codegen/index.js";
export type { DeviceProfile, ValueType, ProfileLimits, ExprNode, NodeId, EmitContext, StridedLayout, HelperName } from "./codegen/index.js";
export { elementwiseKernel, elementwiseKey, vectorizable, reducePassKernel, reducePassKey, REDUCE_ITERATIONS, matmulKernel, matmulKey, matmulCombineKernel, launchMatmul, configName, splitOf, splitApplies, MATMUL_CONFIGS, gatherKernel, gatherKey } from "./kernels/index.js";
export type { ElementwiseSpec, ElementwiseInput, ElementwiseOutput, KernelLaunchPlan, ReducePassSpec, MatmulSpec, MatmulConfig, MatmulRunner, GatherSpec } from "./kernels/index.js";
export {
  chooseMatmulConfig,
  ElementwiseFuser,
  ReduceFuser,
  MatmulFuser,
  WebGpuOptimization,
  ElementwiseOptimization,
  ReduceOptimization,
  MatmulOptimization,
  Launcher,
  ElementwiseLaunchCache,
  MAX_LAUNCH_ENTRIES,
} from "./fusion/index.js";
export type { FuserKit, FusedKind } from "./fusion/index.js";
export { MATMUL_TUNABLE, matmulTunableSet, matmulCandidate, matmulTuneKey, prepareMatmulInputs, readMatmulOutput, matmulValuesClose } from "./autotune/index.js";
export type { MatmulTuneInputs, MatmulTuneOutput, MatmulValues, MatmulTunable, MatmulCandidate, MatmulTunableSetOptions, PlanSource } from "./autotune/index.js";
export { WebGpuStream, FAILURE_LOG_LIMIT, ValidationGate, Readback, UniformArenas, PipelineStore, declaredBindings, ReadBatch, planReadCopies, readBytes, completeReads, GpuBufferStorage, StagingPool } from "./server/index.js";
export type { StreamContext, SubmissionCounters, Dispatch, LaunchPin, GatedTask, ReadbackHost, ReadCounters, PipelineEntry, PipelineState, PendingRead, ReadSource, ReadCopy, ReadPlacement, CopyGroup, ReadPlan, ReadCompletion, StagingPoolOptions, StagingPoolStats, GpuBufferStorageHooks } from "./server/index.js";
export { vulkanLoaderPresent } from "./device/index.js";
