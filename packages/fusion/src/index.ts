/**
 * `@weft/fusion`: the lazy multi-stream fusion engine, the TypeScript counterpart of burn-ir and
 * burn-fusion.
 *
 * @module
 */
export type { DType, TensorId, TensorStatus, TensorIr, TensorData, TypedArray, DTypeArrays } from "./ir/tensor-ir.js";
export { deviceBytesPerElement, numElements } from "./ir/tensor-ir.js";
export type {
  OperationIr,
  OperationKind,
  UnaryOp,
  BinaryOp,
  ReduceOp,
  SliceRange,
  RandomDistribution,
} from "./ir/operation-ir.js";
export {
  OPERATIONS,
  descriptorOf,
  operationInputs,
  operationOutputs,
  operationNodes,
  operationReferences,
  forEachInput,
  forEachTensor,
  pushValues,
  tensorAt,
  mapOperation,
  isElementwise,
  isCreation,
  readsIndex,
} from "./ir/operation-descriptor.js";
export type {
  OperationOf,
  OperationFamily,
  OperationDescriptor,
  ElementwiseOperation,
  CreationOperation,
} from "./ir/operation-descriptor.js";
export { OperationConverter } from "./ir/relative.js";
export type { Layout } from "./layout/layout.js";
export {
  elementCount,
  contiguousStrides,
  isContiguous,
  broadcastShapes,
  broadcastsInto,
  sameShape,
  broadcastStrides,
  permuteLayout,
  expandLayout,
  sliceLayout,
  denseLayout,
  forEachPosition,
} from "./layout/layout.js";
export type { RelativeOperation } from "./ir/relative.js";
export { HandleContainer } from "./runtime/handle-container.js";
export type { ReleaseHandle } from "./runtime/handle-container.js";
export { BaseFusionRuntime } from "./runtime/fusion-runtime.js";
export type {
  FusionRuntime,
  Optimization,
  OperationFuser,
  FuserStatus,
  FuserProperties,
  ExecutionContext,
  OperationRan,
  RuntimeStats,
} from "./runtime/fusion-runtime.js";
export { TensorComputationError, DisposedTensorError, DisposedDeviceError, ScopeSettledError, describeOperation } from "./errors/tensor-errors.js";
export { FusionTensor, FUSION_TENSOR } from "./tensor/fusion-tensor.js";
export type { SharedRef } from "./tensor/fusion-tensor.js";
export { tidy } from "./tensor/tidy.js";
export { scope, keep, dispose } from "./tensor/scope.js";
export { inheritOwner } from "./tensor/ownership.js";
export type { Scope } from "./tensor/scope.js";
export { FusionDevice } from "./device/fusion-device.js";
export type { FusionDeviceOptions, FusionMemory, DeviceStats } from "./device/fusion-device.js";
export { FusionInspector } from "./inspector/fusion-inspector.js";
export { MultiStream } from "./stream/multi-stream.js";
export type { ReadPlan, MultiStreamOptions } from "./stream/multi-stream.js";
export { OperationQueue, setOutputErrors } from "./stream/queue/operation-queue.js";
export type { ExecutedBlock, ExecutionEnv } from "./stream/queue/operation-queue.js";
export { Processor } from "./stream/execution/processor.js";
export { Policy } from "./stream/execution/policy.js";
export type { Action, ExecutionMode } from "./stream/execution/policy.js";
export { Explorer, ExplorationBudget } from "./stream/execution/explorer.js";
export type { Exploration } from "./stream/execution/explorer.js";
export { OperationsValidator } from "./stream/execution/validator.js";
export type { ValidatorState } from "./stream/execution/validator.js";
export { ExecutionPlanStore, DEFAULT_MAX_PLANS } from "./stream/store/execution-plan-store.js";
export type {
  ExecutionPlan,
  ExecutionPlanId,
  ExecutionTrigger,
  ExecutionStep,
  ExecutionStrategy,
  PlanImport,
} from "./stream/store/execution-plan-store.js";
export { PlanCache, PLAN_CACHE_FORMAT, defaultPlanStore, planCacheKey } from "./stream/store/plan-cache.js";
export type { PlanCacheOptions, PlanCacheState } from "./stream/store/plan-cache.js";
export { planFromState, planToState } from "./stream/store/plan-state.js";
export type { ExecutionPlanState, ExecutionStepState, RelativeOperationState, RestoredPlan } from "./stream/store/plan-state.js";
