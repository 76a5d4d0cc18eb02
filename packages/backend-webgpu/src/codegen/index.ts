export { WgslBuilder } from "./wgsl/builder.js";
export { ExprGraph, emitExpressions, pcg } from "./wgsl/expr.js";
export type { ExprNode, NodeId, EmitContext } from "./wgsl/expr.js";
export { Preamble, helperName } from "./wgsl/preamble.js";
export type { HelperName } from "./wgsl/preamble.js";
export { UNARY, BINARY, convert } from "./wgsl/ops.js";
export { deviceProfile, literal, wgslType, storageElement } from "./wgsl/types.js";
export type { DeviceProfile, ValueType, ProfileLimits } from "./wgsl/types.js";
export type { StridedLayout } from "./wgsl/indexing.js";
