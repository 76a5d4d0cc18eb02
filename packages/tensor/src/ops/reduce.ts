/**
 * Reductions over one or more axes (negative axes allowed, `keepDims`), and the composites built
 * from them: `variance`, `std`, `logSumExp`, `softmax`, `logSoftmax`.
 *
 * @remarks
 * **Why composites.** `softmax` and friends are recorded as primitive reduce + elementwise ops, so
 * the backend's fusers see `reduce(max) → sub → exp → reduce(sum) → div` and can fuse the
 * elementwise prologues and epilogues of each reduction instead of needing one kernel per name.
 * **Numerical stability.** `softmax`, `logSoftmax` and `logSumExp` subtract the maximum before
 * `exp`. A slice whose maximum is `-Infinity` (all `-Infinity`) gives NaN, as in NumPy.
 * **Dtypes.** `sum`/`prod` of `bool` count in `i32`; `mean`, `variance`, `std`, `logSumExp` and
 * the softmaxes compute in `f32` for integers; `argmax`/`argmin` produce `i32`; `any`/`all`
 * produce `bool` (non-bool inputs are compared with 0 first).
 *
 * @module
 */
import { ValueError, checkBoolean, checkNumber, checkOptions, describeValue } from "@weft/environment";
import { ReduceOpIr, type ReduceOp } from "@weft/fusion";
import { floatTypeFor } from "../dtype/dtype.js";
import { DTypeError, ShapeError, formatShape } from "../errors/tensor-errors.js";
import { normalizeAxes, normalizeAxis, reducedShape, sizeOf } from "../shape/shape.js";
import { checkAxesArg, checkAxisArg, checkTensor } from "../tensor/arguments.js";
import { castUnchecked, checkOperands, output, register, release, use, withDType } from "../tensor/record.js";
import type { Tensor } from "../tensor/tensor.js";
import { binary, unary } from "./elementwise.js";
import { reshapeUnchecked } from "./layout.js";

/** Which axes to reduce: one axis, a list, or `undefined` for all of them. */
export type Axes = number | readonly number[] | undefined;

/** Options of the reductions. */
export interface ReduceOptions {
  /** Keep reduced axes as size 1 (default `false`). */
  readonly keepDims?: boolean;
}

/** The reductions {@link reduce} computes, by name (what `reduce(op, …)` validates against). */
const REDUCTIONS = ["sum", "prod", "max", "min", "mean", "any", "all"] as const;

/** `options.keepDims` checked (a boolean or absent), refusing unknown option names. */
function keepDimsOf(op: string, options: unknown, extra: readonly string[] = []): { keepDims: boolean; options: Record<string, unknown> } {
  const opts = checkOptions(op, options, ["keepDims", ...extra]);
  return { keepDims: checkBoolean(op, "keepDims", opts.keepDims) ?? false, options: opts };
}

/**
 * The checks every reduction starts with, in order: `x` is a live Tensor, `axes` has the right
 * type and names each axis of `x` once, the options are known. Pure.
 */
function checkReduction(op: string, x: unknown, axesArg: unknown, options: unknown, extra: readonly string[] = []): { x: Tensor; axes: number[]; keepDims: boolean; options: Record<string, unknown> } {
  const t = checkTensor(op, "the input", x);
  checkOperands(op, [t]);
  const axes = normalizeAxes(op, checkAxesArg(op, axesArg), t.shape);
  return { x: t, axes, ...keepDimsOf(op, options, extra) };
}

function checkNonEmpty(op: string, x: Tensor, axes: readonly number[]): void {
  for (const a of axes) {
    if (x.shape[a] === 0) {
      throw new ShapeError(op, [x.shape], `cannot reduce over axis ${a} of size 0 in shape ${formatShape(x.shape)} (the result has no identity); slice or pad it to a non-empty size`);
    }
  }
}

/** Records one `reduce` of `x` (already of the right dtype) over normalised `axes`. */
function emitReduce(op: ReduceOp, x: Tensor, axes: readonly number[], keepDims: boolean, outType = x.dtype): Tensor {
  const input = use(op, x);
  return register(x.device, new ReduceOpIr(op, input, [...axes], keepDims, output(x.device, reducedShape(x.shape, axes, keepDims), outType)));
}

/** No axes to reduce: the value itself (as `dtype`), with `keepDims` irrelevant. */
function identity(x: Tensor, dtype = x.dtype): Tensor {
  return x.dtype === dtype ? x.clone() : castUnchecked(x, dtype);
}

/** `sum`, `prod`, `max`, `min`, `mean`, `any`, `all` over `axes`. */
export function reduce(op: "sum" | "prod" | "max" | "min" | "mean" | "any" | "all", x: Tensor, axesArg: Axes, options: ReduceOptions = {}): Tensor {
  if (!(REDUCTIONS as readonly unknown[]).includes(op)) {
    throw new ValueError("reduce", `unknown reduction ${describeValue(op)}; use one of ${REDUCTIONS.join(", ")}`);
  }
  const { axes, keepDims } = checkReduction(op, x, axesArg, options);
  if ((op === "max" || op === "min") && x.dtype === "bool") {
    throw new DTypeError(op, `dtype bool is not ordered; use ${op === "max" ? "any()" : "all()"} or cast("i32") first`);
  }
  if (op === "max" || op === "min") checkNonEmpty(op, x, axes);
  if (op === "any" || op === "all") {
    if (x.dtype !== "bool") {
      const b = binary("ne", x, 0);
      try {
        return axes.length === 0 ? b.clone() : emitReduce(op, b, axes, keepDims);
      } finally {
        release(b);
      }
    }
    return axes.length === 0 ? x.clone() : emitReduce(op, x, axes, keepDims);
  }
  const dtype = op === "mean" ? floatTypeFor(x.dtype) : x.dtype === "bool" ? "i32" : x.dtype;
  if (axes.length === 0) return identity(x, dtype);
  if (op === "mean" && axes.some((a) => x.shape[a] === 0)) {
    // 0/0: NumPy gives NaN. Record it as sum / 0 so the value flows through the device like any other.
    return withDType(x, dtype, (xf) => {
      const s = emitReduce("sum", xf, axes, keepDims);
      try {
        return binary("div", s, 0);
      } finally {
        release(s);
      }
    });
  }
  return withDType(x, dtype, (xc) => emitReduce(op, xc, axes, keepDims));
}

/** Index (`i32`) of the largest/smallest value along `axis` (first one on ties); all axes flattened when omitted. */
export function argReduce(op: "argmax" | "argmin", x: Tensor, axisArg: number | undefined, options: ReduceOptions = {}): Tensor {
  if (op !== "argmax" && op !== "argmin") {
    throw new ValueError("argReduce", `unknown reduction ${describeValue(op)}; use "argmax" or "argmin"`);
  }
  checkTensor(op, "the input", x);
  checkOperands(op, [x]);
  checkAxisArg(op, "axis", axisArg);
  const { keepDims } = keepDimsOf(op, options);
  if (axisArg === undefined) {
    if (sizeOf(x.shape) === 0) checkNonEmpty(op, x, x.shape.map((_, i) => i));
    const flat = reshapeUnchecked(x, [sizeOf(x.shape)]);
    try {
      const r = argReduce(op, flat, 0, { keepDims: false });
      if (!keepDims) return r;
      try {
        return reshapeUnchecked(r, x.shape.map(() => 1));
      } finally {
        release(r);
      }
    } finally {
      release(flat);
    }
  }
  const axis = normalizeAxis(op, axisArg, x.shape);
  checkNonEmpty(op, x, [axis]);
  const dtype = x.dtype === "bool" ? "i32" : x.dtype;
  return withDType(x, dtype, (xc) => emitReduce(op, xc, [axis], keepDims, "i32"));
}

/** Options of `variance` and `std`. */
export interface VarianceOptions extends ReduceOptions {
  /** Subtracted from the count in the divisor: 0 (default) is the population variance, 1 Bessel's. */
  readonly correction?: number;
}

/**
 * `Σ (x - mean(x))²` over `axes`, divided by `max(n - correction, 0)` (NumPy's `ddof` rule,
 * `docs/semantics.md`): a divisor of 0 gives NaN for 0/0 and Inf otherwise.
 */
export function variance(x: Tensor, axesArg?: Axes, options: VarianceOptions = {}): Tensor {
  return varianceOf("variance", x, axesArg, options);
}

function varianceOf(op: string, x: Tensor, axesArg: Axes | undefined, options: VarianceOptions): Tensor {
  const checked = checkReduction(op, x, axesArg, options, ["correction"]);
  const { axes, keepDims } = checked;
  const correction = checked.options.correction === undefined ? 0 : checkNumber(op, "correction", checked.options.correction, true);
  const count = axes.reduce((n, a) => n * (x.shape[a] ?? 1), 1);
  const divisor = Math.max(0, count - correction);
  return withDType(x, floatTypeFor(x.dtype), (xf) => {
    const m = reduce("mean", xf, axes, { keepDims: true });
    const d = binary("sub", xf, m);
    const sq = unary("square", d);
    const s = reduce("sum", sq, axes, { keepDims });
    const out = binary("div", s, divisor);
    release(m, d, sq, s);
    return out;
  });
}

/** `sqrt(variance(x))`. */
export function std(x: Tensor, axes?: Axes, options: VarianceOptions = {}): Tensor {
  const v = varianceOf("std", x, axes, options);
  const out = unary("sqrt", v);
  release(v);
  return out;
}

/**
 * The max-shifted exponentials every stable composite starts from, over `axes` with reduced axes
 * kept: `m = max(x)`, `d = x - m`, `e = exp(d)`, `s = sum(e)`. Written once so `logSumExp`,
 * `softmax` and `logSoftmax` record the same op sequence the fusers recognise; the caller owns
 * (and releases) all four.
 */
function shiftedExpSum(xf: Tensor, axes: Axes): { m: Tensor; d: Tensor; e: Tensor; s: Tensor } {
  const m = reduce("max", xf, axes, { keepDims: true });
  const d = binary("sub", xf, m);
  const e = unary("exp", d);
  const s = reduce("sum", e, axes, { keepDims: true });
  return { m, d, e, s };
}

/**
 * The shared frame of the softmaxes: checks `x`, normalises `axisArg` (naming `op` in errors),
 * returns a float copy when that axis is empty, else runs `body` on the float view of `x`.
 */
function alongAxis(op: string, x: Tensor, axisArg: number, body: (xf: Tensor, axis: number) => Tensor): Tensor {
  checkTensor(op, "the input", x);
  checkOperands(op, [x]);
  const axis = normalizeAxis(op, checkAxisArg(op, "axis", axisArg) ?? -1, x.shape);
  if (x.shape[axis] === 0) return withDType(x, floatTypeFor(x.dtype), (xf) => xf.clone());
  return withDType(x, floatTypeFor(x.dtype), (xf) => body(xf, axis));
}

/** `log(sum(exp(x)))` over `axes`, computed as `m + log(sum(exp(x - m)))` with `m = max(x)`. */
export function logSumExp(x: Tensor, axesArg?: Axes, options: ReduceOptions = {}): Tensor {
  const { axes, keepDims } = checkReduction("logSumExp", x, axesArg, options);
  checkNonEmpty("logSumExp", x, axes);
  return withDType(x, floatTypeFor(x.dtype), (xf) => {
    if (axes.length === 0) return xf.clone();
    const { m, d, e, s } = shiftedExpSum(xf, axes);
    const l = unary("log", s);
    const kept = binary("add", l, m);
    release(m, d, e, s, l);
    if (keepDims) return kept;
    const out = reshapeUnchecked(kept, reducedShape(x.shape, axes, false));
    release(kept);
    return out;
  });
}

/** `exp(x - max) / sum(exp(x - max))` along `axis` (default the last). */
export function softmax(x: Tensor, axisArg = -1): Tensor {
  return alongAxis("softmax", x, axisArg, (xf, axis) => {
    const { m, d, e, s } = shiftedExpSum(xf, axis);
    const out = binary("div", e, s);
    release(m, d, e, s);
    return out;
  });
}

/** `x - max - log(sum(exp(x - max)))` along `axis` (default the last). */
export function logSoftmax(x: Tensor, axisArg = -1): Tensor {
  return alongAxis("logSoftmax", x, axisArg, (xf, axis) => {
    const { m, d, e, s } = shiftedExpSum(xf, axis);
    const l = unary("log", s);
    const out = binary("sub", d, l);
    release(m, d, e, s, l);
    return out;
  });
}
