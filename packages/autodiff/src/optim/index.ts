/**
 * `weft.optim`: the optimizers, as one namespace object (`optim.sgd`, `optim.adam`, `optim.adamw`).
 *
 * @module
 */
import { adam, adamw } from "./adam.js";
import { sgd } from "./sgd.js";

/** The optimizers: `optim.sgd({ lr, … })`, `optim.adam({ lr, … })`, `optim.adamw({ lr, … })`. */
export const optim = { sgd, adam, adamw } as const;
