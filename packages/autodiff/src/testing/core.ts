/**
 * `@weft/autodiff/testing/core`: the gradient kit without vitest — the case catalogue, its
 * tolerances, and {@link runGradientCase}. What a browser page or another runner imports;
 * `@weft/autodiff/testing` adds the vitest wrapper `describeGradients`.
 *
 * @module
 */
export { gradientCases, SMOOTH, TRIG, APPROX, reduction } from "./cases.js";
export type { GradientCase, GradientInput, GradientInputKind, GradientTolerance } from "./cases.js";
export { runGradientCase, generateInput, isDifferentiated } from "./run-gradient-case.js";
export type { GradientResult } from "./run-gradient-case.js";
