/**
 * `@weft/fusion/testing`: the engine's test kit — a host `TestRuntime` with explicit handle
 * reference counts and fault injection, the `ElementwiseFuser` and `NeverReadyFuser` mocks, and
 * small op helpers over a `FusionDevice`.
 *
 * @module
 */
export { TestRuntime, TestMemory } from "./test-runtime.js";
export type { TestHandle, TestRuntimeOptions } from "./test-runtime.js";
export { ElementwiseFuser, ElementwiseOptimization, NeverReadyFuser, TappedFuser } from "./fusers.js";
export type { FuserTaps } from "./fusers.js";
export { evaluate, coerce, toTyped } from "./host-math.js";
export { unary, binary, scalar, reduce, full, fromValues } from "./ops.js";
export { createTestDevice } from "./test-device.js";
export type { TestFusers } from "./test-device.js";
