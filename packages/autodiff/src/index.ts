/**
 * `@weft/autodiff`: reverse-mode automatic differentiation over the Tensor API (`grad`,
 * `valueAndGrad`, `stopGradient`) and the optimizers of `optim` (`sgd`, `adam`, `adamw`) —
 * recorded and fused like any other work. The entry package `@weft/weft` re-exports it as
 * `weft.grad`, `weft.valueAndGrad`, `weft.optim`.
 *
 * This is a barrel: code inside the package imports concrete files, never this one.
 *
 * @module
 */
export { grad, valueAndGrad, stopGradient } from "./transform/grad.js";
export type { Argnums, GradOptions, Grads } from "./transform/grad.js";
export type { Tree } from "./tree/tree.js";
export { optim } from "./optim/index.js";
export { Optimizer } from "./optim/optimizer.js";
export type { OptimizerKind, OptimizerState, SlotState, Update } from "./optim/optimizer.js";
export { Sgd, sgd } from "./optim/sgd.js";
export type { SgdOptions } from "./optim/sgd.js";
export { Adam, adam, adamw } from "./optim/adam.js";
export type { AdamOptions } from "./optim/adam.js";
export { GRADIENTS } from "./gradients/table.js";
export { gradientKey, isRule } from "./gradients/rule.js";
export type { GradientKey, GradientEntry, GradientRule, Backward, Saves, NoGradient, OperationOfKey } from "./gradients/rule.js";
