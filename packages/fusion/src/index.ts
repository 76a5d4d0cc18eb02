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
export { operationInputs, operationOutputs, operationNodes } from "./ir/operation-ir.js";
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
} from "./runtime/fusion-runtime.js";
