/**
 * `@weft/tensor/testing`: the conformance kit ({@link describeBackend}) every backend runs against
 * the unfused CPU oracle, and the pieces it is built from (case catalogue, tolerances, host data).
 * Runs under vitest.
 *
 * @module
 */
export { describeBackend } from "./describe-backend.js";
export type { DescribeBackendOptions } from "./describe-backend.js";
export { conformanceCases, reductionTolerance, ELEMENTWISE, TRANSCENDENTAL, TRIG, APPROX } from "./cases.js";
export type { ConformanceCase } from "./cases.js";
export { EXACT, compareArrays, generate, prng, hashName } from "./host-data.js";
export type { InputSpec, InputKind, Tolerance } from "./host-data.js";
