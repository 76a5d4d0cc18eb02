/**
 * `layerNorm`: `(x − mean) / √(var + eps) · weight + bias` over `axes`, composed of two `mean`
 * reductions and elementwise ops (the reductions are reduce blocks; the normalisation and the
 * affine part fuse onto them where the fusers allow).
 *
 * @remarks
 * **Rules** (PyTorch `layer_norm`): the variance is the population variance (divisor `n`); `eps`
 * defaults to `1e-5`; `weight` and `bias` (optional) have the shape of the normalised dims, in
 * order (`x.shape` at the sorted `axes`), and are broadcast over the others. Integer inputs
 * compute in `f32`. An empty normalised extent gives NaN (the mean of nothing), as PyTorch.
 *
 * @module
 */
import { checkNumber, checkOptions } from "@weft/environment";
import { floatTypeFor } from "../dtype/dtype.js";
import { DTypeError, ShapeError, ValueError, formatShape } from "../errors/tensor-errors.js";
import { normalizeAxes } from "../shape/shape.js";
import { checkAxesArg, checkTensor } from "../tensor/arguments.js";
import { castUnchecked, checkOperands } from "../tensor/record.js";
import type { Tensor } from "../tensor/tensor.js";
import { tidy } from "../lifetime/lifetime.js";
import { binary, unary } from "./elementwise.js";
import { reshapeUnchecked } from "./layout.js";
import { reduce } from "./reduce.js";

/** Options of {@link layerNorm}. */
export interface LayerNormOptions {
  /** Added to the variance before the square root (default `1e-5`). */
  readonly eps?: number;
  /** Multiplies the normalised value; shape `x.shape` at the normalised axes. */
  readonly weight?: Tensor;
  /** Added last; shape `x.shape` at the normalised axes. */
  readonly bias?: Tensor;
}

/**
 * Layer normalisation over `axes` (default the last), with optional `weight` and `bias`
 * (module doc).
 * @throws AxisError for a bad axis; ShapeError when `weight`/`bias` do not have the normalised
 *   shape; DTypeError for bool input; ValueError for a negative or non-finite `eps`.
 */
export function layerNorm(x: Tensor, axesArg: number | readonly number[] = -1, options: LayerNormOptions = {}): Tensor {
  checkTensor("layerNorm", "the input", x);
  checkAxesArg("layerNorm", axesArg);
  const opts = checkOptions("layerNorm", options, ["eps", "weight", "bias"]);
  const eps = opts.eps === undefined ? 1e-5 : checkNumber("layerNorm", "eps", opts.eps, true);
  if (eps < 0) throw new ValueError("layerNorm", `eps ${eps} is negative; pass eps ≥ 0 (default 1e-5)`);
  const weight = opts.weight === undefined ? undefined : checkTensor("layerNorm", "options.weight", opts.weight);
  const bias = opts.bias === undefined ? undefined : checkTensor("layerNorm", "options.bias", opts.bias);
  const affine = [weight, bias].filter((t): t is Tensor => t !== undefined);
  checkOperands("layerNorm", [x, ...affine]);
  if (x.dtype === "bool") throw new DTypeError("layerNorm", `dtype bool is not allowed; cast first, e.g. \`x.cast("f32")\``);
  const axes = normalizeAxes("layerNorm", axesArg, x.shape);
  const normalized = axes.map((a) => x.shape[a] ?? 0);
  for (const [name, t] of [["weight", weight], ["bias", bias]] as const) {
    if (t !== undefined && (t.rank !== normalized.length || t.shape.some((d, i) => d !== normalized[i]))) {
      throw new ShapeError("layerNorm", [x.shape, t.shape], `${name} ${formatShape(t.shape)} must have the normalised shape ${formatShape(normalized)} (x ${formatShape(x.shape)} at axes [${axes.join(",")}]); reshape it or pick the axes it matches`);
    }
    if (t !== undefined && t.dtype === "bool") throw new DTypeError("layerNorm", `${name} is bool; pass a float tensor`);
  }
  const view = x.shape.map((d, i) => (axes.includes(i) ? d : 1));
  const dtype = floatTypeFor(x.dtype);
  return tidy(() => {
    const xf = x.dtype === dtype ? x : castUnchecked(x, dtype);
    const mean = reduce("mean", xf, axes, { keepDims: true });
    const centered = binary("sub", xf, mean);
    const variance = reduce("mean", unary("square", centered), axes, { keepDims: true });
    let out = binary("mul", centered, unary("rsqrt", binary("add", variance, eps)));
    if (weight !== undefined) out = binary("mul", out, reshapeUnchecked(weight, view));
    if (bias !== undefined) out = binary("add", out, reshapeUnchecked(bias, view));
    return out;
  });
}
