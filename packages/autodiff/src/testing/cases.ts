/**
 * The gradient catalogue: every differentiable op of the user API, as a function of one or more
 * inputs, with inputs drawn where the op is smooth (so central differences are meaningful) and a
 * tolerance with its reason.
 *
 * @remarks
 * **What is compared.** Each case's output `y` is contracted with fixed random weights `w` into
 * the scalar `L = Σ w·y`; the device's `grad(L)` (the op's vector–Jacobian product with `w`) is
 * compared element by element with central differences `(L(x + h·eᵢ) − L(x − h·eᵢ)) / 2h`
 * computed on the oracle, the differences `y(x + h·eᵢ) − y(x − h·eᵢ)` and the sum taken on the
 * host in float64, so only the f32 rounding of the two outputs enters.
 * **Tolerances** (`|analytic − fd| ≤ atol + rtol·|fd|`, gradients are O(1): inputs and weights
 * are O(1)):
 * - `SMOOTH` (rtol 2e-3, atol 2e-3): the central difference's error is its truncation
 *   `h²/6·|f'''|·Σ|w|` (≈ 2e-5 for `h = 1e-2`) plus the f32 rounding of the two outputs divided by
 *   `2h` (≈ `k·6e-8·|y|·Σ|w| / 0.02` ≈ 1e-5 for a few chained ops); a wrong rule is off by O(1).
 * - `TRIG` (atol 5e-3): WGSL bounds `sin`/`cos` only to an absolute 2^-11 ≈ 5e-4 on `[-π, π]`,
 *   which the device's analytic gradient inherits (its `cos`/`sin`), times `|w|` up to ≈ 3.
 * - `APPROX` (atol 5e-3): `erf` (and `gelu`'s `erf`) are approximations differing by up to 1e-3
 *   between backends; the gradient inherits it times `|w|`.
 * - reductions and matmul: `SMOOTH` plus `k·1e-5` for a reduced length `k` (summation order).
 * **Domains** keep every input at least `2h` from the op's kinks and poles (`relu`/`abs` at 0,
 * ties of `maximum`/`max`, `floor`'s jumps, `mod`'s jumps, `tan`'s poles), where the finite
 * difference would measure the jump instead of the derivative; the behaviour *at* those points is
 * fixed by the documented rules and tested by exact cases in `table.test.ts`.
 *
 * @module
 */
import { type DType, type Tensor, add, atan2, avgPool2d, concat, conv2d, cumprod, cumsum, div, einsum, maxPool2d, scatterAdd, sort, topk, elu, flip, layerNorm, leakyRelu, log2, maximum, minimum, mod, mul, pow, reduce, repeat, selu, softplus, stack, sub, tile, tril, triu, where } from "@weft/tensor";

/** How an input's values are drawn (see the module doc's domains). */
export type GradientInputKind =
  /** Normal, standard deviation 1. */
  | "normal"
  /** Uniform on `[0.5, 2)`: log, sqrt, divisors, pow bases. */
  | "positive"
  /** Magnitude uniform on `[0.3, 1.5)`, random sign: away from 0 (relu, abs, sign, reciprocal). */
  | "away"
  /** Uniform on `[-0.9, 0.9)`. */
  | "unit"
  /**
   * Shuffled points of a lattice of spacing 0.2 (`0.11 + 0.2·k`, or `0.01 + 0.2·k` for the second
   * input of a case): no ties within an input, at least 0.1 between two inputs, and at least 0.04
   * from the scalars the cases compare with (±0.05, 0.15, −0.25, 0.35).
   */
  | "distinct"
  /** `k + u`, `u` uniform on `[0.2, 0.3)`, `k` an integer in `[-3, 3]`: away from floor/round/ceil jumps. */
  | "offgrid"
  /** Booleans (a `where` condition); never differentiated. */
  | "bool"
  /** Integer indices in `[0, max)` (gather); never differentiated. */
  | "index";

/** One input of a gradient case. */
export interface GradientInput {
  readonly shape: readonly number[];
  readonly kind?: GradientInputKind;
  /** Upper bound (exclusive) of `index` inputs. */
  readonly max?: number;
  /** The element type (default f32; i32 for `index`, bool for `bool`). */
  readonly dtype?: DType;
}

/** How close the analytic gradient must be to the central difference: `|a − fd| ≤ atol + rtol·|fd|`. */
export interface GradientTolerance {
  readonly rtol: number;
  readonly atol: number;
}

/** Smooth elementwise ops (see the module doc). */
export const SMOOTH: GradientTolerance = { rtol: 2e-3, atol: 2e-3 };
/** sin, cos, tan, atan2: WGSL's absolute 2^-11 on the device's `sin`/`cos`. */
export const TRIG: GradientTolerance = { rtol: 2e-3, atol: 5e-3 };
/** erf, gelu: the backends' `erf` approximations differ by up to 1e-3. */
export const APPROX: GradientTolerance = { rtol: 2e-3, atol: 5e-3 };
/** A reduction or product over `k` elements: SMOOTH plus the summation order's rounding. */
export function reduction(k: number): GradientTolerance {
  return { rtol: 2e-3, atol: 2e-3 + 1e-5 * k };
}

/** One gradient case. */
export interface GradientCase {
  /** What the case checks (the test name). */
  readonly name: string;
  /** The API names (Tensor methods and free functions) whose gradient the case exercises. */
  readonly covers: readonly string[];
  readonly inputs: readonly GradientInput[];
  /** The function of the inputs whose gradient is checked (any output shape). */
  readonly run: (inputs: readonly Tensor[]) => Tensor;
  /** Tolerance (default {@link SMOOTH}). */
  readonly tolerance?: GradientTolerance;
  /** The finite-difference step (default 1e-2). */
  readonly step?: number;
  /** A dtype the device must store for the case to run (skipped otherwise, with the reason). */
  readonly requires?: DType;
}

const at = (xs: readonly Tensor[], i: number): Tensor => {
  const t = xs[i];
  if (t === undefined) throw new Error(`gradient case: input ${i} is missing`);
  return t;
};

/** A unary method case on a `[2, 3]` input drawn from `kind`. */
function unaryCase(method: string, kind: GradientInputKind, tolerance: GradientTolerance = SMOOTH, step?: number): GradientCase {
  return {
    name: `${method} (${kind})`,
    covers: [method],
    inputs: [{ shape: [2, 3], kind }],
    run: (xs) => (at(xs, 0) as unknown as Record<string, () => Tensor>)[method]?.call(at(xs, 0)) as Tensor,
    tolerance,
    ...(step === undefined ? {} : { step }),
  };
}

/** Functions with large third derivatives (`1/x` near |x| = 0.3: 6/x⁴ ≈ 740) take a smaller step: truncation ∝ h². */
const STEEP = 3e-3;

/** A binary case over broadcast shapes `[2, 3]` and `[3]` (and `[2, 1]`), method and free function. */
function binaryCases(method: "add" | "sub" | "mul" | "div" | "pow" | "maximum" | "minimum" | "mod" | "atan2", kinds: readonly [GradientInputKind, GradientInputKind], tolerance: GradientTolerance = SMOOTH, step?: number): GradientCase[] {
  const h = step === undefined ? {} : { step };
  const free = { add, sub, mul, div, pow, maximum, minimum, mod, atan2 }[method];
  return [
    {
      name: `${method} [2,3] with [3] (broadcast)`,
      covers: [method],
      inputs: [{ shape: [2, 3], kind: kinds[0] }, { shape: [3], kind: kinds[1] }],
      run: (xs) => (at(xs, 0) as unknown as Record<string, (o: Tensor) => Tensor>)[method]?.call(at(xs, 0), at(xs, 1)) as Tensor,
      tolerance,
      ...h,
    },
    {
      name: `${method} [2,1] with [2,3] (free function, broadcast on the left)`,
      covers: [method],
      inputs: [{ shape: [2, 1], kind: kinds[0] }, { shape: [2, 3], kind: kinds[1] }],
      run: (xs) => free(at(xs, 0), at(xs, 1)),
      tolerance,
      ...h,
    },
  ];
}

/** The catalogue (see the module doc). */
export function gradientCases(): GradientCase[] {
  return [
    // ── unary ──
    unaryCase("neg", "normal"),
    unaryCase("abs", "away"),
    unaryCase("exp", "unit"),
    unaryCase("log", "positive"),
    unaryCase("log1p", "positive"),
    unaryCase("expm1", "unit"),
    unaryCase("sqrt", "positive"),
    unaryCase("rsqrt", "positive"),
    unaryCase("sin", "normal", TRIG),
    unaryCase("cos", "normal", TRIG),
    unaryCase("tan", "unit", TRIG),
    unaryCase("tanh", "normal"),
    unaryCase("sigmoid", "normal"),
    unaryCase("relu", "away"),
    unaryCase("gelu", "normal", APPROX),
    unaryCase("silu", "normal"),
    unaryCase("erf", "normal", APPROX),
    unaryCase("floor", "offgrid"),
    unaryCase("ceil", "offgrid"),
    unaryCase("round", "offgrid"),
    unaryCase("sign", "away"),
    unaryCase("reciprocal", "away", SMOOTH, STEEP),
    unaryCase("square", "normal"),
    { name: "unary('tanh') by name", covers: ["unary"], inputs: [{ shape: [4], kind: "normal" }], run: (xs) => at(xs, 0).unary("tanh") },
    { name: "a chain that fuses: exp(x)·sin(x) + x²", covers: ["exp", "sin", "mul", "add", "square"], inputs: [{ shape: [3, 4], kind: "unit" }], run: (xs) => at(xs, 0).exp().mul(at(xs, 0).sin()).add(at(xs, 0).square()), tolerance: TRIG },

    // ── binary, broadcast ──
    ...binaryCases("add", ["normal", "normal"]),
    ...binaryCases("sub", ["normal", "normal"]),
    ...binaryCases("mul", ["normal", "normal"]),
    ...binaryCases("div", ["normal", "away"], SMOOTH, STEEP),
    ...binaryCases("pow", ["positive", "unit"]),
    ...binaryCases("maximum", ["distinct", "distinct"]),
    ...binaryCases("minimum", ["distinct", "distinct"]),
    ...binaryCases("atan2", ["away", "away"], TRIG),
    {
      name: "mod (floored) away from its jumps",
      covers: ["mod"],
      // x = q·y + r with r in [0.3, 0.7)·y: frac(x / y) stays away from 0 and 1 under ±h.
      inputs: [{ shape: [2, 3], kind: "offgrid" }, { shape: [3], kind: "positive" }],
      run: (xs) => at(xs, 0).mul(at(xs, 1)).mod(at(xs, 1)).add(at(xs, 0).mul(at(xs, 1))),
    },
    { name: "binary('mul') by name", covers: ["binary"], inputs: [{ shape: [3], kind: "normal" }, { shape: [3], kind: "normal" }], run: (xs) => at(xs, 0).binary("mul", at(xs, 1)) },
    { name: "the same tensor on both sides: x·x + x/x", covers: ["mul", "div"], inputs: [{ shape: [5], kind: "away" }], run: (xs) => at(xs, 0).mul(at(xs, 0)).add(at(xs, 0).div(at(xs, 0))) },

    // ── scalar forms ──
    { name: "x + c, c - x, x - c", covers: ["add", "sub"], inputs: [{ shape: [2, 3], kind: "normal" }], run: (xs) => at(xs, 0).add(2).mul(sub(1.5, at(xs, 0))).add(at(xs, 0).sub(0.5)) },
    { name: "x·c, x/c, c/x", covers: ["mul", "div"], inputs: [{ shape: [2, 3], kind: "away" }], run: (xs) => at(xs, 0).mul(3).add(at(xs, 0).div(4)).add(div(2, at(xs, 0))), step: STEEP },
    { name: "x^3, x^0.5, x^1, x^0, 2^x", covers: ["pow"], inputs: [{ shape: [2, 3], kind: "positive" }], run: (xs) => at(xs, 0).pow(3).add(at(xs, 0).pow(0.5)).add(at(xs, 0).pow(1)).add(at(xs, 0).pow(0)).add(pow(2, at(xs, 0))) },
    { name: "maximum/minimum with a scalar", covers: ["maximum", "minimum"], inputs: [{ shape: [8], kind: "distinct" }], run: (xs) => at(xs, 0).maximum(0.05).add(at(xs, 0).minimum(-0.05).mul(2)) },
    { name: "x mod c, c mod x (away from jumps)", covers: ["mod"], inputs: [{ shape: [6], kind: "offgrid" }], run: (xs) => at(xs, 0).mod(1).add(mod(7.5, at(xs, 0).abs().add(4.1))) },
    { name: "atan2 with a scalar on either side", covers: ["atan2"], inputs: [{ shape: [6], kind: "away" }], run: (xs) => at(xs, 0).atan2(0.7).add(atan2(-0.4, at(xs, 0))), tolerance: TRIG },
    { name: "clamp with both bounds (values off the bounds)", covers: ["clamp"], inputs: [{ shape: [8], kind: "distinct" }], run: (xs) => at(xs, 0).clamp(-0.25, 0.35) },
    { name: "clamp with one bound", covers: ["clamp"], inputs: [{ shape: [8], kind: "distinct" }], run: (xs) => at(xs, 0).clamp(-0.25).add(at(xs, 0).clamp(undefined, 0.15)) },

    // ── where, cast ──
    { name: "where (broadcast branches)", covers: ["where"], inputs: [{ shape: [2, 3], kind: "bool" }, { shape: [2, 3], kind: "normal" }, { shape: [3], kind: "normal" }], run: (xs) => at(xs, 0).where(at(xs, 1), at(xs, 2)) },
    { name: "where (free function, scalar branch)", covers: ["where"], inputs: [{ shape: [4], kind: "away" }], run: (xs) => where(at(xs, 0).gt(0), at(xs, 0).square(), 1) },
    { name: "cast f32 → f16 → f32", covers: ["cast"], inputs: [{ shape: [4], kind: "unit" }], run: (xs) => at(xs, 0).cast("f16").mul(2).cast("f32"), requires: "f16", tolerance: { rtol: 2e-2, atol: 2e-2 } },
    { name: "cast to f32 (identity) and through a bool mask", covers: ["cast"], inputs: [{ shape: [6], kind: "away" }], run: (xs) => at(xs, 0).cast("f32").mul(at(xs, 0).gt(0).cast("f32")) },

    // ── reductions ──
    { name: "sum over all and over an axis (keepDims)", covers: ["sum"], inputs: [{ shape: [3, 4], kind: "normal" }], run: (xs) => at(xs, 0).sum(1, { keepDims: true }).add(at(xs, 0).sum()), tolerance: reduction(12) },
    { name: "mean over two axes", covers: ["mean"], inputs: [{ shape: [2, 3, 4], kind: "normal" }], run: (xs) => at(xs, 0).mean([0, 2]), tolerance: reduction(8) },
    { name: "max over an axis (no ties)", covers: ["max"], inputs: [{ shape: [3, 4], kind: "distinct" }], run: (xs) => at(xs, 0).max(1) },
    { name: "min over all (no ties)", covers: ["min"], inputs: [{ shape: [3, 4], kind: "distinct" }], run: (xs) => at(xs, 0).min() },
    { name: "prod over an axis", covers: ["prod"], inputs: [{ shape: [3, 4], kind: "positive" }], run: (xs) => at(xs, 0).prod(1), tolerance: reduction(4) },
    { name: "prod with zeros in a slice", covers: ["prod"], inputs: [{ shape: [4, 3], kind: "normal" }, { shape: [4, 3], kind: "bool" }], run: (xs) => at(xs, 0).mul(at(xs, 1).cast("f32")).prod(1), tolerance: reduction(3) },
    { name: "reduce('sum') by name", covers: ["reduce"], inputs: [{ shape: [3, 4], kind: "normal" }], run: (xs) => reduce("sum", at(xs, 0), 0), tolerance: reduction(3) },
    { name: "variance and std (Bessel)", covers: ["variance", "std"], inputs: [{ shape: [3, 5], kind: "normal" }], run: (xs) => at(xs, 0).variance(1).add(at(xs, 0).std(1, { correction: 1 })), tolerance: reduction(5) },
    { name: "logSumExp over an axis", covers: ["logSumExp"], inputs: [{ shape: [3, 5], kind: "normal" }], run: (xs) => at(xs, 0).logSumExp(1), tolerance: reduction(5) },
    { name: "softmax over the last axis", covers: ["softmax"], inputs: [{ shape: [3, 5], kind: "normal" }], run: (xs) => at(xs, 0).softmax(), tolerance: reduction(5) },
    { name: "logSoftmax over the first axis", covers: ["logSoftmax"], inputs: [{ shape: [4, 3], kind: "normal" }], run: (xs) => at(xs, 0).logSoftmax(0), tolerance: reduction(4) },

    // ── matmul ──
    { name: "matmul 2-D", covers: ["matmul"], inputs: [{ shape: [3, 4], kind: "normal" }, { shape: [4, 5], kind: "normal" }], run: (xs) => at(xs, 0).matmul(at(xs, 1)), tolerance: reduction(4) },
    { name: "matmul batched with broadcast batch dims", covers: ["matmul"], inputs: [{ shape: [2, 1, 3, 4], kind: "normal" }, { shape: [3, 4, 2], kind: "normal" }], run: (xs) => at(xs, 0).matmul(at(xs, 1)), tolerance: reduction(12) },
    { name: "matmul vector · matrix, matrix · vector, dot", covers: ["matmul"], inputs: [{ shape: [4], kind: "normal" }, { shape: [4, 3], kind: "normal" }, { shape: [3], kind: "normal" }], run: (xs) => at(xs, 0).matmul(at(xs, 1)).matmul(at(xs, 2)).add(at(xs, 1).matmul(at(xs, 2)).matmul(at(xs, 0))), tolerance: reduction(12) },

    // ── layout ──
    { name: "reshape and flatten", covers: ["reshape", "flatten"], inputs: [{ shape: [2, 3, 2], kind: "normal" }], run: (xs) => at(xs, 0).reshape([3, -1]).mul(at(xs, 0).flatten(1).reshape([3, 4])) },
    { name: "permute and transpose", covers: ["permute", "transpose"], inputs: [{ shape: [2, 3, 4], kind: "normal" }], run: (xs) => at(xs, 0).permute([2, 0, 1]).add(at(xs, 0).transpose(0, 2).transpose(1, 2)) },
    { name: "expand (new leading dims, grown size-1 dims)", covers: ["expand"], inputs: [{ shape: [3, 1], kind: "normal" }], run: (xs) => at(xs, 0).expand([2, 3, 4]) },
    { name: "squeeze and unsqueeze", covers: ["squeeze", "unsqueeze"], inputs: [{ shape: [3, 1, 2], kind: "normal" }], run: (xs) => at(xs, 0).squeeze(1).unsqueeze(0).mul(at(xs, 0).squeeze()) },
    { name: "slice with steps, negative indices and picks", covers: ["slice"], inputs: [{ shape: [5, 7], kind: "normal" }], run: (xs) => at(xs, 0).slice([[1, null, 2], [-6, -1, 3]]).sum(0).add(at(xs, 0).slice([2, [0, 7, 3]]).sum()) },
    { name: "concat (method and free function) and stack", covers: ["concat", "stack"], inputs: [{ shape: [2, 3], kind: "normal" }, { shape: [1, 3], kind: "normal" }], run: (xs) => at(xs, 0).concat([at(xs, 1)], 0).mul(concat([at(xs, 1), at(xs, 0)], 0)).sum(1).add(stack([at(xs, 0), at(xs, 0).square()], 1).sum([1, 2]).sum()) },
    { name: "split into unequal parts", covers: ["split"], inputs: [{ shape: [2, 6], kind: "normal" }], run: (xs) => { const [a, b, c] = at(xs, 0).split([1, 3, 2], 1) as [Tensor, Tensor, Tensor]; return a.sum(1).add(b.square().sum(1)).add(c.exp().sum(1)); } },
    { name: "gather (torch.gather, repeated indices)", covers: ["gather"], inputs: [{ shape: [3, 4], kind: "normal" }, { shape: [3, 5], kind: "index", max: 4 }], run: (xs) => at(xs, 0).gather(at(xs, 1), 1) },
    { name: "gather (index_select along axis 0, repeated rows)", covers: ["gather"], inputs: [{ shape: [4, 3], kind: "normal" }, { shape: [6], kind: "index", max: 4 }], run: (xs) => at(xs, 0).gather(at(xs, 1), 0) },
    { name: "pad", covers: ["pad"], inputs: [{ shape: [2, 3], kind: "normal" }], run: (xs) => at(xs, 0).pad([[1, 0], [2, 1]], 0.5).square() },

    // ── issue 7's composed ops (their gradients flow through the ops they record) ──
    unaryCase("leakyRelu", "away"),
    unaryCase("elu", "away"),
    unaryCase("selu", "away"),
    unaryCase("softplus", "normal"),
    unaryCase("log2", "positive"),
    { name: "leakyRelu/elu with alpha (free functions)", covers: ["leakyRelu", "elu"], inputs: [{ shape: [6], kind: "away" }], run: (xs) => leakyRelu(at(xs, 0), 0.3).add(elu(at(xs, 0), 0.7)) },
    { name: "selu, softplus, log2 (free functions)", covers: ["selu", "softplus", "log2"], inputs: [{ shape: [6], kind: "positive" }], run: (xs) => selu(at(xs, 0)).add(softplus(at(xs, 0).neg())).add(log2(at(xs, 0))) },
    { name: "tril and triu with offsets", covers: ["tril", "triu"], inputs: [{ shape: [2, 3, 4], kind: "normal" }], run: (xs) => at(xs, 0).tril(1).mul(at(xs, 0)).add(triu(at(xs, 0), -1)).add(tril(at(xs, 0))) },
    { name: "flip and a negative-step slice", covers: ["flip", "slice"], inputs: [{ shape: [3, 5], kind: "normal" }], run: (xs) => at(xs, 0).flip().mul(flip(at(xs, 0), 1)).add(at(xs, 0).slice([[null, null, -1], [4, 0, -2]]).sum()) },
    { name: "tile and repeat (counts and per-element counts)", covers: ["tile", "repeat"], inputs: [{ shape: [2, 3], kind: "normal" }], run: (xs) => at(xs, 0).tile([2, 1]).square().sum(0).add(tile(at(xs, 0), 2).sum(0).slice([[0, 3]])).add(at(xs, 0).repeat(2, 0).sum(0)).add(repeat(at(xs, 0), [2, 0, 1], 1).sum(1).sum()) },
    { name: "layerNorm with weight and bias", covers: ["layerNorm"], inputs: [{ shape: [3, 5], kind: "normal" }, { shape: [5], kind: "normal" }, { shape: [5], kind: "normal" }], run: (xs) => at(xs, 0).layerNorm(-1, { weight: at(xs, 1), bias: at(xs, 2) }).mul(layerNorm(at(xs, 0), [0, 1])), tolerance: reduction(15) },
    { name: "einsum: batched contraction and a chain", covers: ["einsum"], inputs: [{ shape: [2, 3, 4], kind: "normal" }, { shape: [2, 4, 3], kind: "normal" }, { shape: [3], kind: "normal" }], run: (xs) => einsum("bij,bjk,k->bi", at(xs, 0), at(xs, 1), at(xs, 2)).add(einsum("bij->j", at(xs, 0)).sum()), tolerance: reduction(12) },
    { name: "einsum: a diagonal, a trace, a broadcast ellipsis and a size-1 letter", covers: ["einsum"], inputs: [{ shape: [2, 3, 3], kind: "normal" }, { shape: [3, 2], kind: "normal" }, { shape: [1, 2], kind: "normal" }], run: (xs) => einsum("...ii->...i", at(xs, 0)).sum().add(einsum("bii", at(xs, 0)).mul(einsum("...ij,...jk->...ik", at(xs, 0), at(xs, 1)).sum([1, 2]))).sum().add(einsum("ij,jk->ik", at(xs, 1), at(xs, 2)).square().sum()) },

    { name: "cumsum along an axis and flattened", covers: ["cumsum"], inputs: [{ shape: [3, 5], kind: "normal" }], run: (xs) => at(xs, 0).cumsum(1).add(cumsum(at(xs, 0)).reshape([3, 5])), tolerance: reduction(15) },
    { name: "cumprod of positive values", covers: ["cumprod"], inputs: [{ shape: [2, 5], kind: "positive" }], run: (xs) => at(xs, 0).cumprod(1).add(cumprod(at(xs, 0), 0)), tolerance: reduction(10) },
    { name: "sort (both directions) and topk of distinct values", covers: ["sort", "topk"], inputs: [{ shape: [3, 6], kind: "distinct" }], run: (xs) => at(xs, 0).sort().mul(sort(at(xs, 0), 0, { descending: true })).add(at(xs, 0).topk(6).values).add(topk(at(xs, 0), 6, { largest: false }).values.square()) },
    { name: "scatter and scatterAdd (repeated indices)", covers: ["scatter", "scatterAdd"], inputs: [{ shape: [3, 4], kind: "normal" }, { shape: [3, 5], kind: "index", max: 4 }, { shape: [3, 5], kind: "normal" }], run: (xs) => at(xs, 0).scatter(at(xs, 1), at(xs, 2), 1).add(scatterAdd(at(xs, 0), at(xs, 1), at(xs, 2).square(), 1)) },
    { name: "conv2d with groups, stride, padding and bias", covers: ["conv2d"], inputs: [{ shape: [2, 4, 5, 6], kind: "normal" }, { shape: [4, 2, 3, 3], kind: "normal" }, { shape: [4], kind: "normal" }], run: (xs) => conv2d(at(xs, 0), at(xs, 1), { groups: 2, stride: [2, 1], padding: 1, bias: at(xs, 2) }), tolerance: reduction(18) },
    { name: "conv1d with dilation", covers: ["conv1d"], inputs: [{ shape: [2, 3, 9], kind: "normal" }, { shape: [2, 3, 3], kind: "normal" }], run: (xs) => at(xs, 0).conv1d(at(xs, 1), { dilation: 2, padding: "same" }), tolerance: reduction(9) },
    { name: "maxPool2d (distinct values) and avgPool2d with padding", covers: ["maxPool2d", "avgPool2d"], inputs: [{ shape: [1, 2, 4, 5], kind: "distinct" }], run: (xs) => maxPool2d(at(xs, 0), 2, { stride: 1 }).sum().add(at(xs, 0).avgPool2d(3, { stride: 2, padding: 1 }).sum()).add(at(xs, 0).maxPool2d([2, 3]).sum()), tolerance: reduction(20) },

    // ── a model ──
    {
      name: "a 2-layer MLP with softmax cross-entropy",
      covers: ["matmul", "add", "tanh", "logSoftmax", "mean", "mul", "sum", "neg"],
      inputs: [{ shape: [4, 3], kind: "normal" }, { shape: [3, 5], kind: "normal" }, { shape: [5], kind: "normal" }, { shape: [5, 2], kind: "normal" }, { shape: [4, 2], kind: "bool" }],
      run: (xs) => {
        // tanh, not relu: random pre-activations may sit within h of relu's kink
        const h = at(xs, 0).matmul(at(xs, 1)).add(at(xs, 2)).tanh();
        const logits = h.matmul(at(xs, 3));
        return logits.logSoftmax(-1).mul(at(xs, 4).cast("f32")).sum(1).neg().mean();
      },
      tolerance: reduction(15),
    },
  ];
}

/**
 * The API names (Tensor methods and `@weft/tensor` functions) no gradient flows through, and why.
 * Together with the cases' `covers`, this must account for every op of the API:
 * `gradients/table.test.ts` fails on a new op that is in neither.
 */
export const NOT_DIFFERENTIABLE: Readonly<Record<string, string>> = {
  ...Object.fromEntries(["eq", "ne", "lt", "le", "gt", "ge"].map((n) => [n, "a comparison: bool output"])),
  ...Object.fromEntries(["and", "or", "xor", "not", "logicalAnd", "logicalOr", "logicalXor", "logicalNot", "any", "all"].map((n) => [n, "logical: bool in, bool out"])),
  ...Object.fromEntries(["argmax", "argmin", "argReduce"].map((n) => [n, "an index: integer output"])),
  ...Object.fromEntries(["isNaN", "isInf", "isFinite"].map((n) => [n, "a predicate: bool output"])),
  oneHot: "integer indices in, constant 0/1 out",
  argsort: "an index: integer output",
  floorDiv: "piecewise constant: derivative 0 wherever it exists (JAX's floor_divide)",
  ...Object.fromEntries(
    ["tensor", "scalar", "zeros", "ones", "full", "zerosLike", "onesLike", "fullLike", "arange", "linspace", "eye", "rand", "randn", "randLike", "randnLike"].map((n) => [n, "creates a value from no tensor input"]),
  ),
};

/** The API names that are not operations on tensor values (lifetimes, reads, devices, metadata). */
export const NOT_AN_OP: Readonly<Record<string, string>> = {
  ...Object.fromEntries(["constructor", "shape", "dtype", "rank", "size", "disposed", "device", "fusionTensor", "toString"].map((n) => [n, "metadata"])),
  ...Object.fromEntries(["data", "array", "dataSync", "arraySync", "item"].map((n) => [n, "a read"])),
  ...Object.fromEntries(["dispose", "tidy", "scope", "keep", "memory", "stats", "releaseUnused", "sync", "syncAll"].map((n) => [n, "lifetime, report or wait"])),
  ...Object.fromEntries(["print", "formatValues"].map((n) => [n, "formats values for reading"])),
  functional: "builds the functional form of a method; the method's own entry covers its gradient",
  clone: "a new reference to the same value: the same value to a tape",
  assign: "rebinds a tensor to another value; the tape follows the value",
  ...Object.fromEntries(["Tensor", "Device", "device", "setDevice", "tryDevice", "seed"].map((n) => [n, "device and generator state"])),
  ...Object.fromEntries(["DTYPES", "promoteTypes", "promoteWithScalar", "isFloat", "isInteger", "broadcastShapes"].map((n) => [n, "dtype and shape rules"])),
  ...Object.fromEntries(["AxisError", "DTypeError", "DeviceMismatchError", "NoDeviceError", "ShapeError", "SyncReadError", "ValueError"].map((n) => [n, "an error class"])),
};
