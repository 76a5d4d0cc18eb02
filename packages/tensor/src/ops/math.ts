/**
 * Elementwise functions composed of the fusable elementwise ops: `isNaN`, `isFinite`, `isInf`,
 * `floorDiv`, `leakyRelu`, `elu`, `selu`, `softplus`, `log2`. Each records only elementwise ops
 * (unary, binary, binary-scalar, where, cast), so a chain of them fuses into one kernel on every
 * backend that fuses elementwise work; no new kernel is needed and every backend computes them the
 * same way.
 *
 * @remarks
 * **Numerics** (`docs/semantics.md`, "Composed elementwise ops"):
 * - `softplus(x) = max(x, 0) + log1p(exp(-|x|))`: no overflow for large `x` (it is `x` there), no
 *   cancellation for very negative `x` (it is `exp(x)` there); with `beta` it is
 *   `softplus(beta·x) / beta`, and `x` itself where `beta·x > threshold` (PyTorch);
 * - `elu`/`selu` take `expm1` of `min(x, 0)`, so the branch not taken never overflows (its
 *   gradient stays finite);
 * - `floorDiv` on floats is the `q` with `fl(q·b) ≤ a < fl((q + 1)·b)` (reversed for `b < 0`),
 *   `fl` the f32 product: `floor(a / b)` corrected by one where the division rounded across an
 *   integer (WGSL's division is only within 2.5 ULP, f32 products are correctly rounded on every
 *   backend, so every backend gets the same answer). It is NumPy's answer except where `a` lies
 *   within rounding of a multiple of `b`: `1 // 0.1` is `10` here (`10 · 0.1f` rounds to `1`),
 *   `9` in NumPy (which uses the exact `fmod`). A zero divisor gives `a / b` (±Inf, NaN for
 *   `0 // 0`); NaN gives NaN; `±Inf // finite` is ±Inf (PyTorch's answer; NumPy's is NaN).
 *   On integers it is exact: the truncating integer division corrected by one where the
 *   remainder is non-zero and the signs differ; `x // 0` is `0` (NumPy's answer) and
 *   `MIN // -1` wraps to `MIN`;
 * - `log2(x) = log(x) · log2(e)`: within the `log` tolerance of the exact value (powers of two are
 *   not guaranteed exact on WebGPU);
 * - `isNaN`/`isInf`/`isFinite` decide on the value (the backends' comparisons test NaN on the
 *   bits); integer and bool tensors are never NaN or infinite.
 *
 * @module
 */
import { checkNumber } from "@weft/environment";
import type { DType } from "@weft/fusion";
import { fitsDType, floatTypeFor, isFloat, promoteTypes, promoteWithScalar } from "../dtype/dtype.js";
import { DTypeError, ValueError } from "../errors/tensor-errors.js";
import { broadcastShapes } from "../shape/shape.js";
import { checkOperandValue, checkTensor } from "../tensor/arguments.js";
import { castUnchecked, checkOperands, output, register, use } from "../tensor/record.js";
import { Tensor } from "../tensor/tensor.js";
import { tidy } from "../lifetime/lifetime.js";
import { type Operand, binary, unary, where } from "./elementwise.js";
import { full } from "./creation.js";

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
 * may be a scalar. Integers stay integers (exact); floats follow Python (module doc).
 * @throws DTypeError for bool operands; ShapeError when the shapes do not broadcast.
 */
export function floorDiv(a: Operand, b: Operand): Tensor {
  checkOperandValue("floorDiv", "the left operand", a);
  checkOperandValue("floorDiv", "the right operand", b);
  const tensors = [a, b].filter((v): v is Tensor => v instanceof Tensor);
  if (tensors.length === 0) throw new ValueError("floorDiv", "needs at least one tensor operand; wrap a scalar with weft.tensor(x)");
  const device = checkOperands("floorDiv", tensors);
  let dtype: DType;
  if (a instanceof Tensor && b instanceof Tensor) {
    broadcastShapes("floorDiv", a.shape, b.shape);
    dtype = promoteTypes(a.dtype, b.dtype);
  } else {
    const t = (a instanceof Tensor ? a : b) as Tensor;
    const s = (a instanceof Tensor ? b : a) as number | boolean;
    const value = typeof s === "boolean" ? Number(s) : s;
    dtype = promoteWithScalar(t.dtype, value, true);
    if (!fitsDType(value, dtype)) {
      throw new DTypeError("floorDiv", `the scalar ${value} is not a value of ${dtype}; cast the tensor to "f32" first, or pass an in-range scalar`);
    }
  }
  if (dtype === "bool") throw new DTypeError("floorDiv", `bool operands have no division; cast first, e.g. \`x.cast("i32")\``);
  return tidy(() => {
    const lift = (v: Operand): Tensor => {
      if (v instanceof Tensor) return v.dtype === dtype ? v : castUnchecked(v, dtype);
      return full([], typeof v === "boolean" ? Number(v) : v, { dtype, device });
    };
    const x = lift(a);
    const y = lift(b);
    if (isFloat(dtype)) {
      // q0 = floor(a / b) is within one of the answer (WGSL's division is only ≤ 2.5 ULP); the
      // f32 products decide it: the q with fl(q·b) ≤ a < fl((q + 1)·b) (reversed for b < 0).
      const q0 = unary("floor", binary("div", x, y));
      const p0 = binary("mul", q0, y);
      const p1 = binary("mul", binary("add", q0, 1), y);
      const positive = binary("gt", y, 0);
      const over = where(positive, binary("gt", p0, x), binary("lt", p0, x));
      const under = where(positive, binary("le", p1, x), binary("ge", p1, x));
      return binary("add", binary("sub", q0, castUnchecked(over, dtype)), castUnchecked(under, dtype));
    }
    // Integers: the IR's integer `div` truncates toward zero (0 for a zero divisor, MIN / -1 wraps).
    const shape = broadcastShapes("floorDiv", x.shape, y.shape);
    const truncated = register(device, { kind: "binary", op: "div", lhs: use("floorDiv", x), rhs: use("floorDiv", y), out: output(device, shape, dtype) });
    if (dtype === "u32") return truncated;
    const inexact = binary("ne", binary("mod", x, y), 0);
    const signsDiffer = binary("xor", binary("lt", x, 0), binary("lt", y, 0));
    return binary("sub", truncated, castUnchecked(binary("and", inexact, signsDiffer), dtype));
  });
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

/** The base-2 logarithm. */
export function log2(x: Tensor): Tensor {
  const t = checked("log2", x);
  return floatBody(t, (xf) => binary("mul", unary("log", xf), Math.LOG2E));
}
