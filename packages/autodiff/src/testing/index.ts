/**
 * `@weft/autodiff/testing`: the gradient kit every backend runs ({@link describeGradients}): the
 * gradient of every differentiable op of the user API against central finite differences on the
 * CPU oracle. Everything but `describeGradients` is also exported, without vitest, from
 * `@weft/autodiff/testing/core`.
 *
 * @module
 */
export { describeGradients } from "./describe-gradients.js";
export type { DescribeGradientsOptions } from "./describe-gradients.js";
export { gradientCases, SMOOTH, TRIG, APPROX, reduction } from "./cases.js";
export type { GradientCase, GradientInput, GradientInputKind, GradientTolerance } from "./cases.js";
export { runGradientCase, generateInput, isDifferentiated } from "./run-gradient-case.js";
export type { GradientResult } from "./run-gradient-case.js";
