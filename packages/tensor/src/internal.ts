/**
 * `@weft/tensor/internal`: what sibling `@weft/*` packages need from the user API that users do
 * not — the fusion tensor behind a `Tensor`, and the op observer `@weft/autodiff` records its tapes
 * through. Not a stable API.
 *
 * @module
 */
export { fusionTensorOf } from "./tensor/tensor.js";
export { setOpObserver, unobserved, valueId } from "./tensor/observer.js";
export type { OpObserver } from "./tensor/observer.js";
