/**
 * `@weft/tensor`: Weft's user API — `Tensor` with shapes, dtypes, broadcasting, creation ops,
 * elementwise/compare/logical ops, reductions, matmul, layout ops, reads, `tidy`, `dispose`/`using`,
 * and device selection. Records `OperationIr` on a `FusionDevice`; imports no backend.
 *
 * This is a barrel: code inside the package imports concrete files, never this one.
 *
 * @module
 */
export { Tensor } from "./tensor/tensor.js";
export type { DataArray, DataOptions } from "./tensor/tensor.js";
export { Device, device, setDevice, tryDevice } from "./device/device.js";
export type { DeviceOptions } from "./device/device.js";
export type { FusionMemory as MemoryReport, DeviceStats as StatsReport } from "@weft/fusion";
export type { DType } from "./dtype/dtype.js";
export { DTYPES, promoteTypes, promoteWithScalar, isFloat, isInteger } from "./dtype/dtype.js";
export {
  ShapeError,
  AxisError,
  DTypeError,
  ValueError,
  DeviceMismatchError,
  NoDeviceError,
  SyncReadError,
} from "./errors/tensor-errors.js";
export { broadcastShapes } from "./shape/shape.js";
export type { Shape, NestedArray } from "./shape/shape.js";
export {
  tensor,
  zeros,
  ones,
  full,
  scalar,
  zerosLike,
  onesLike,
  fullLike,
  arange,
  linspace,
  eye,
  rand,
  randn,
  randLike,
  randnLike,
  seed,
} from "./ops/creation.js";
export type { CreationOptions, TensorOptions, TensorLike, RandomOptions } from "./ops/creation.js";
export { unary, binary, cast, clamp } from "./ops/elementwise.js";
export type { Operand } from "./ops/elementwise.js";
export {
  add, sub, mul, div, pow, maximum, minimum, mod, atan2,
  eq, ne, lt, le, gt, ge, logicalAnd, logicalOr, logicalXor, logicalNot, where,
} from "./ops/functions.js";
export { reduce, argReduce, variance, std, logSumExp, softmax, logSoftmax } from "./ops/reduce.js";
export type { Axes, ReduceOptions, VarianceOptions } from "./ops/reduce.js";
export { matmul } from "./ops/matmul.js";
export { isNaN, isInf, isFinite, floorDiv, leakyRelu, elu, selu, softplus, log2 } from "./ops/math.js";
export { tril, triu, tile, repeat, oneHot } from "./ops/structure.js";
export type { OneHotOptions } from "./ops/structure.js";
export { layerNorm } from "./ops/normalization.js";
export type { LayerNormOptions } from "./ops/normalization.js";
export { einsum } from "./ops/einsum.js";
export { cumsum, cumprod } from "./ops/scan.js";
export { sort, argsort, topk } from "./ops/sort.js";
export type { SortOptions, SortResult, TopKOptions } from "./ops/sort.js";
export { scatter, scatterAdd } from "./ops/scatter.js";
export { conv1d, conv2d, maxPool2d, avgPool2d } from "./ops/convolution.js";
export type { Conv1dOptions, Conv2dOptions, MaxPool2dOptions, AvgPool2dOptions, Size2 } from "./ops/convolution.js";
export {
  reshape, flatten, permute, transpose, expand, squeeze, unsqueeze, slice, concat, stack, split, gather, pad, flip,
} from "./ops/layout.js";
export type { SliceSpec } from "./ops/layout.js";
export { tidy, scope, keep, dispose, memory, stats, releaseUnused, sync, syncAll } from "./lifetime/lifetime.js";
// The functional form of every tensor-returning method (`weft.exp(x)`): one list, in that file.
export * from "./functional/functional.js";
export { formatValues } from "./format/format.js";
export type { FormatOptions, PrintOptions } from "./format/format.js";
export type { Scope } from "@weft/fusion";
