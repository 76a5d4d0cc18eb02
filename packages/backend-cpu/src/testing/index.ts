/**
 * `@weft/backend-cpu/testing`: drive the CPU runtime without a fusion device (numerics checks,
 * fuser checks).
 *
 * @module
 */
export { CpuTestHarness } from "./cpu-test-harness.js";
