/**
 * `@weft/fusion`: the lazy multi-stream fusion engine, the TypeScript counterpart of burn-ir and
 * burn-fusion. This entry is what users and backend authors need: the IR and its descriptor
 * table, the strided-layout arithmetic, the `FusionRuntime`/`OperationFuser`/`Optimization`
 * contract a backend implements, `FusionDevice`/`FusionTensor`/`tidy`, and the errors. The
 * engine's internals (queues, processor, policy, explorer, plan store) are `@weft/fusion/internal`.
 *
 * @module
 */
export type { DType, TensorId, TensorStatus, TensorIr, TensorData, TypedArray, DTypeArrays } from "./ir/tensor-ir.js";
export { deviceBytesPerElement, numElements, tensorIr } from "./ir/tensor-ir.js";
export { SoftmaxPattern, retireSoftmaxBlock, softmaxEnds } from "./ir/softmax-pattern.js";
export type {
  OperationIr,
  OperationKind,
  UnaryOp,
  BinaryOp,
  ReduceOp,
  SliceRange,
  RandomDistribution,
  SortOutput,
  ScanOp,
  ScatterOp,
} from "./ir/operation-ir.js";
export {
  InitOpIr,
  FullOpIr,
  ArangeOpIr,
  RandomOpIr,
  UnaryOpIr,
  BinaryOpIr,
  ScalarOpIr,
  ClampOpIr,
  CastOpIr,
  WhereOpIr,
  ReduceOpIr,
  MatmulOpIr,
  ReshapeOpIr,
  PermuteOpIr,
  ExpandOpIr,
  SliceOpIr,
  ConcatOpIr,
  GatherOpIr,
  PadOpIr,
  SortOpIr,
  ScanOpIr,
  ScatterOpIr,
  DropOpIr,
  sliceRange,
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
export { locateTensor, locatedTensor, producerIndex, producedAt, sameKinds, type TensorLocator } from "./ir/tensor-locator.js";
export type {
  OperationOf,
  OperationFamily,
  OperationDescriptor,
  ElementwiseOperation,
  CreationOperation,
} from "./ir/operation-descriptor.js";
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
export { HandleContainer } from "./runtime/handle-container.js";
export type { ReleaseHandle } from "./runtime/handle-container.js";
export { BaseFusionRuntime } from "./runtime/fusion-runtime.js";
export { BlockFallback } from "./runtime/block-fallback.js";
export type { BlockFallbackPort } from "./runtime/block-fallback.js";
export type {
  FusionRuntime,
  Optimization,
  OperationFuser,
  FuserStatus,
  FuserProperties,
  ExecutionContext,
  OperationRan,
  RuntimeCapabilities,
  RuntimeStats,
} from "./runtime/fusion-runtime.js";
export { TensorComputationError, DisposedTensorError, DisposedDeviceError, ScopeSettledError, describeOperation } from "./errors/tensor-errors.js";
export { FusionTensor } from "./tensor/fusion-tensor.js";
export { tidy } from "./tensor/tidy.js";
export { scope, keep, dispose } from "./tensor/scope.js";
export { inheritOwner } from "./tensor/ownership.js";
export type { Scope } from "./tensor/scope.js";
export { FusionDevice } from "./device/fusion-device.js";
export type { FusionClient, FusionDeviceOptions, FusionMemory, DeviceStats, ProducingOperation } from "./device/fusion-device.js";
export { FusionInspector } from "./inspector/fusion-inspector.js";
export type { ExecutedBlock } from "./stream/queue/operation-queue.js";
