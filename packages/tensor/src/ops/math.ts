/**
 * Elementwise functions of issue 7: `isNaN`, `isFinite`, `isInf`, `floorDiv`, `leakyRelu`, `elu`,
 * `selu`, `softplus`, `log2`. Each records only elementwise ops (unary, binary, binary-scalar,
 * where, cast), so a chain of them fuses into one kernel on every backend that fuses elementwise
 * work; all but `floorDiv` and `log2` (IR ops of their own, below) are compositions, computed the
 * same way by every backend.
 *
 * @remarks
 * **Numerics** (`docs/semantics.md`, "Composed elementwise ops"):
 * - `softplus(x) = max(x, 0) + log1p(exp(-|x|))`: no overflow for large `x` (it is `x` there), no
 *   cancellation for very negative `x` (it is `exp(x)` there); with `beta` it is
 *   `softplus(beta·x) / beta`, and `x` itself where `beta·x > threshold` (PyTorch);
 * - `elu`/`selu` take `expm1` of `min(x, 0)`, so the branch not taken never overflows (its
 *   gradient stays finite);
 * - `floorDiv` is not composed: it records the IR's `floorDiv` op (one fusable elementwise op),
 *   because NumPy's float answer is built on the exact remainder `fmod(a, b)`, which a composition
 *   of rounded ops cannot give (`a - b·floor(a/b)` made `1 // 0.1` 10; NumPy says 9). Each backend
 *   computes NumPy's `npy_floor_divide` exactly (`docs/semantics.md`, "Issue 7's ops"): `x // 0`
 *   is `x / 0` (±Inf, NaN for `0 // 0`), `±Inf // x` is NaN, `-3 // Inf` is -1. On integers it is
 *   the exact floored quotient; `x // 0` is `0` (NumPy's answer) and `MIN // -1` wraps to `MIN`;
 * - `log2` is not composed either: the IR's unary `log2`, exact on powers of two on every backend
 *   (`log(x) · log2(e)` was not: WGSL's `log` is within a few ULP, and so is the product);
 * - `isNaN`/`isInf`/`isFinite` decide on the value (the backends' comparisons test NaN on the
 *   bits); integer and bool tensors are never NaN or infinite.
 *
 * @module
 */
import { checkNumber } from "@weft/environment";
import { floatTypeFor, isFloat } from "../dtype/dtype.js";
import { ValueError } from "../errors/tensor-errors.js";
import { checkTensor } from "../tensor/arguments.js";
import { castUnchecked, checkOperands } from "../tensor/record.js";
import type { Tensor } from "../tensor/tensor.js";
import { tidy } from "../lifetime/lifetime.js";
import { type Operand, binary, unary, where } from "./elementwise.js";

/** `checkTensor` plus liveness: the common first line of every op here. */
function checked(op: string, x: unknown): Tensor {
  const t = checkTensor(op, "the input", x);
  checkOperands(op, [t]);
  return t;
}

/** Runs `body` on `x` as a float tensor (integers and bool compute in f32), disposing every temporary. */
function floatBody(x: Tensor, body: (xf: Tensor) => Tensor): Tensor {
  return tidy(() => body(x.dtype === floatTypeFor(x.dtype) ? x : castUnchecked(x, floatTypeFor(x.dtype))));
}

/** `true` where `x` is NaN (bool). Integer and bool tensors give `false` everywhere. */
export function isNaN(x: Tensor): Tensor {
  const t = checked("isNaN", x);
  return binary("ne", t, t);
}

/** `true` where `x` is `+Inf` or `-Inf` (bool). */
export function isInf(x: Tensor): Tensor {
  const t = checked("isInf", x);
  if (!isFloat(t.dtype)) return binary("ne", t, t);
  return tidy(() => binary("eq", unary("abs", t), Infinity));
}

/** `true` where `x` is neither NaN nor ±Inf (bool). */
export function isFinite(x: Tensor): Tensor {
  const t = checked("isFinite", x);
  if (!isFloat(t.dtype)) return binary("eq", t, t);
  return tidy(() => binary("lt", unary("abs", t), Infinity));
}

/**
 * Floor division `a // b` (NumPy `floor_divide`, PyTorch `floor_divide`), broadcast; either side
 * may be a scalar (weak, as for `mod`). Integers stay integers (exact); floats are NumPy's answer
 * exactly (module doc).
 * @throws DTypeError for two bool operands or an integer scalar the dtype cannot hold; ShapeError
 *   when the shapes do not broadcast; ValueError for two scalars or an operand that is not a
 *   Tensor, number or boolean.
 */
export function floorDiv(a: Operand, b: Operand): Tensor {
  return binary("floorDiv", a, b);
}

/** `x` where `x > 0`, else `alpha · x` (PyTorch's default `alpha = 0.01`). Floats; integers compute in f32. */
export function leakyRelu(x: Tensor, alpha = 0.01): Tensor {
  const t = checked("leakyRelu", x);
  checkNumber("leakyRelu", "alpha", alpha, true);
  return floatBody(t, (xf) => where(binary("gt", xf, 0), xf, binary("mul", xf, alpha)));
}

/** `x` where `x > 0`, else `alpha · (eˣ − 1)`. */
export function elu(x: Tensor, alpha = 1): Tensor {
  const t = checked("elu", x);
  checkNumber("elu", "alpha", alpha, true);
  return floatBody(t, (xf) => eluOf(xf, alpha, 1));
}

function eluOf(xf: Tensor, alpha: number, scale: number): Tensor {
  const negative = binary("mul", unary("expm1", binary("minimum", xf, 0)), alpha * scale);
  return where(binary("gt", xf, 0), scale === 1 ? xf : binary("mul", xf, scale), negative);
}

/** SELU's constants (Klambauer et al. 2017, as in PyTorch). */
const SELU_ALPHA = 1.6732632423543772;
const SELU_SCALE = 1.0507009873554805;

/** `scale · elu(x, alpha)` with SELU's fixed `alpha ≈ 1.6733` and `scale ≈ 1.0507`. */
export function selu(x: Tensor): Tensor {
  const t = checked("selu", x);
  return floatBody(t, (xf) => eluOf(xf, SELU_ALPHA, SELU_SCALE));
}

/**
 * `log(1 + e^(beta·x)) / beta`, computed stably as `(max(y, 0) + log1p(e^-|y|)) / beta` with
 * `y = beta·x`, and `x` itself where `beta·x > threshold` (PyTorch's `softplus(x, beta = 1,
 * threshold = 20)`; module doc).
 * @throws ValueError when `beta` is not a positive finite number or `threshold` is NaN or not a number.
 */
export function softplus(x: Tensor, beta = 1, threshold = 20): Tensor {
  const t = checked("softplus", x);
  checkNumber("softplus", "beta", beta, true);
  if (!(beta > 0)) throw new ValueError("softplus", `beta must be positive, got ${beta}; pass beta > 0 (PyTorch's default is 1)`);
  checkNumber("softplus", "threshold", threshold);
  if (Number.isNaN(threshold)) throw new ValueError("softplus", "threshold is NaN; pass a number (PyTorch's default is 20, Infinity never switches to x)");
  return floatBody(t, (xf) => {
    const y = beta === 1 ? xf : binary("mul", xf, beta);
    const stable = binary("add", binary("maximum", y, 0), unary("log1p", unary("exp", unary("neg", unary("abs", y)))));
    return where(binary("gt", y, threshold), xf, beta === 1 ? stable : binary("div", stable, beta));
  });
}

/** The base-2 logarithm (the IR's `log2`): exact on powers of two, `log2(0) = -Inf`, NaN below 0. */
export function log2(x: Tensor): Tensor {
  return unary("log2", checked("log2", x));
}
