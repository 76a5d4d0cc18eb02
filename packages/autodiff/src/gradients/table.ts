/**
 * The gradient table: one entry per op the user API records ({@link GradientKey}), saying how a
 * cotangent flows back through it — or, documented, why none does. Adding an op to the IR is a
 * compile error here until its entry exists (the table is a mapped type over every key), and
 * `table.test.ts` fails until the API method that records it has a finite-difference case
 * (`src/testing/cases.ts`) or is listed as not differentiable.
 *
 * @remarks
 * **Non-differentiable points** follow JAX (NumPy has no derivatives), so a model trains the same:
 * - `relu` at 0 → 0 (JAX's `relu` jvp: `select(x > 0, g, 0)`);
 * - `abs` at 0 → +1 (JAX: `select(x >= 0, g, -g)`);
 * - `maximum`/`minimum` at a tie → each side gets half (JAX's `_balanced_eq`); `clamp` at a bound
 *   the same, as `maximum(minimum(x, hi), lo)` would (JAX's `jnp.clip`);
 * - `max`/`min` reductions with ties → the cotangent is split evenly among the tied elements
 *   (JAX's reduce-chooser rule);
 * - `floor`, `ceil`, `round`, `sign`, `floorDiv` → 0 everywhere (JAX: zero derivative);
 * - `pow(x, y)`: ∂/∂x is 0 where `y == 0` (also at `x == 0`); ∂/∂y uses `log(x)` with `x == 0`
 *   replaced by 1, so it is 0 there (JAX's `_pow_jvp_lhs/rhs`); `x < 0` gives NaN for ∂/∂y;
 * - `sqrt`, `rsqrt`, `log`, `reciprocal` at 0 → ±Inf as the formula gives (JAX does the same);
 * - `prod` with zeros: the exact product of the other elements (one zero: non-zero only at the
 *   zero; two or more: 0), never `out / x`;
 * - `mod(x, y)` (floored): ∂/∂x = 1, ∂/∂y = −floor(x / y) (the jumps are ignored, as in JAX);
 * - compares, logical ops, `argmax`/`argmin`, `any`/`all`, casts to integers and bool: no
 *   cotangent (their outputs are constants to the tape).
 *
 * @module
 */
import { type Tensor, arange, argsort, div, full, gather, scatter, scatterAdd, zeros } from "@weft/tensor";
import type { GradientEntry, GradientKey, OperationOfKey } from "./rule.js";
import { sumTo, ungather, unreduce, unslice } from "./shapes.js";

/** The table's type: an entry for every key, each typed by its op. */
type GradientTable = { readonly [K in GradientKey]: GradientEntry<OperationOfKey<K>> };

/** The rules below read their saved values through these; the tape guarantees what `saves` names. */
function need(t: Tensor | undefined): Tensor {
  if (t === undefined) throw new Error("internal: a gradient rule read a value it did not save");
  return t;
}

const isFloatType = (dtype: string): boolean => dtype === "f32" || dtype === "f16";

const COMPARE = "a comparison: its bool output does not vary smoothly with its inputs";
const LOGICAL = "a logical op on bool tensors";
const CREATION = "creates a value from no tensor input";
const ZERO = "piecewise constant: derivative 0 wherever it exists (JAX)";

const INPUT: { readonly inputs: readonly number[] } = { inputs: [0] };
const OUTPUT: { readonly output: true } = { output: true };
const BOTH_INPUTS: { readonly inputs: readonly number[] } = { inputs: [0, 1] };

/** `g · mask` for a bool `mask`: `g` where true, 0 elsewhere (no NaN from `g · 0` when `g` is ±Inf). */
function masked(mask: Tensor, g: Tensor): Tensor {
  return mask.where(g, 0);
}

/** `1` where `x > c`, `0.5` where `x == c`, `0` elsewhere: one side of a balanced tie (JAX). */
function above(x: Tensor, c: number | Tensor): Tensor {
  return x.gt(c).where(1, x.eq(c).where(0.5, 0));
}

/** `1` where `x < c`, `0.5` where `x == c`, `0` elsewhere. */
function below(x: Tensor, c: number | Tensor): Tensor {
  return x.lt(c).where(1, x.eq(c).where(0.5, 0));
}

/** The balanced-tie share of `a` in `max(a, b) = y` (JAX `_balanced_eq`): 1, 1/2 at a tie, else 0. */
function balancedShare(a: Tensor, y: Tensor, b: Tensor): Tensor {
  return a.eq(y).where(b.eq(y).where(0.5, 1), 0);
}

/** Every op's gradient; see the module doc. */
export const GRADIENTS: GradientTable = {
  // ── unary ────────────────────────────────────────────────────────────────────────────────────
  "unary:neg": { backward: ({ g }) => [g.neg()] },
  "unary:abs": { saves: INPUT, backward: ({ g, inputs }) => [need(inputs[0]).ge(0).where(g, g.neg())] },
  "unary:exp": { saves: OUTPUT, backward: ({ g, output }) => [g.mul(need(output))] },
  "unary:log": { saves: INPUT, backward: ({ g, inputs }) => [g.div(need(inputs[0]))] },
  "unary:log2": { saves: INPUT, backward: ({ g, inputs }) => [g.div(need(inputs[0]).mul(Math.LN2))] },
  "unary:log1p": { saves: INPUT, backward: ({ g, inputs }) => [g.div(need(inputs[0]).add(1))] },
  "unary:expm1": { saves: OUTPUT, backward: ({ g, output }) => [g.mul(need(output).add(1))] },
  "unary:sqrt": { saves: OUTPUT, backward: ({ g, output }) => [g.mul(0.5).div(need(output))] },
  "unary:rsqrt": {
    // d/dx x^(-1/2) = -1/2 · x^(-3/2) = -1/2 · y³
    saves: OUTPUT,
    backward: ({ g, output }) => {
      const y = need(output);
      return [g.mul(y.square().mul(y)).mul(-0.5)];
    },
  },
  "unary:sin": { saves: INPUT, backward: ({ g, inputs }) => [g.mul(need(inputs[0]).cos())] },
  "unary:cos": { saves: INPUT, backward: ({ g, inputs }) => [g.mul(need(inputs[0]).sin()).neg()] },
  "unary:tan": { saves: OUTPUT, backward: ({ g, output }) => [g.mul(need(output).square().add(1))] },
  "unary:tanh": {
    // (1 - y²) written as (1 + y)(1 - y), as JAX does: accurate where y is close to ±1.
    saves: OUTPUT,
    backward: ({ g, output }) => {
      const y = need(output);
      return [g.mul(y.add(1)).mul(y.neg().add(1))];
    },
  },
  "unary:sigmoid": {
    saves: OUTPUT,
    backward: ({ g, output }) => {
      const y = need(output);
      return [g.mul(y).mul(y.neg().add(1))];
    },
  },
  "unary:relu": {
    // The output is saved (it is the next layer's input anyway): y > 0 ⇔ x > 0, NaN included.
    saves: OUTPUT,
    backward: ({ g, output }) => [masked(need(output).gt(0), g)],
  },
  "unary:gelu": {
    // The exact GELU x·Φ(x) (the backends' definition): Φ(x) + x·φ(x).
    saves: INPUT,
    backward: ({ g, inputs }) => {
      const x = need(inputs[0]);
      const cdf = x.mul(Math.SQRT1_2).erf().add(1).mul(0.5);
      const pdf = x.square().mul(-0.5).exp().mul(1 / Math.sqrt(2 * Math.PI));
      return [g.mul(cdf.add(x.mul(pdf)))];
    },
  },
  "unary:silu": {
    // d/dx x·σ(x) = σ(x)·(1 + x·(1 - σ(x)))
    saves: INPUT,
    backward: ({ g, inputs }) => {
      const x = need(inputs[0]);
      const s = x.sigmoid();
      return [g.mul(s.mul(x.mul(s.neg().add(1)).add(1)))];
    },
  },
  "unary:erf": {
    saves: INPUT,
    backward: ({ g, inputs }) => [g.mul(need(inputs[0]).square().neg().exp().mul(2 / Math.sqrt(Math.PI)))],
  },
  "unary:floor": { zero: ZERO },
  "unary:ceil": { zero: ZERO },
  "unary:round": { zero: ZERO },
  "unary:sign": { zero: ZERO },
  "unary:reciprocal": { saves: OUTPUT, backward: ({ g, output }) => [g.mul(need(output).square()).neg()] },
  "unary:square": { saves: INPUT, backward: ({ g, inputs }) => [g.mul(need(inputs[0]).mul(2))] },
  "unary:not": { nonDifferentiable: LOGICAL },

  // ── binary (broadcast: each cotangent is summed back to its input's shape) ──────────────────
  "binary:add": { backward: ({ g, op, needs }) => [needs[0] ? sumTo(g, op.lhs.shape) : undefined, needs[1] ? sumTo(g, op.rhs.shape) : undefined] },
  "binary:sub": {
    backward: ({ g, op, needs }) => [needs[0] ? sumTo(g, op.lhs.shape) : undefined, needs[1] ? sumTo(g.neg(), op.rhs.shape) : undefined],
  },
  "binary:mul": {
    saves: (_op, tracked) => ({ inputs: [...(tracked[1] === true ? [0] : []), ...(tracked[0] === true ? [1] : [])] }),
    backward: ({ g, op, inputs, needs }) => [
      needs[0] ? sumTo(g.mul(need(inputs[1])), op.lhs.shape) : undefined,
      needs[1] ? sumTo(g.mul(need(inputs[0])), op.rhs.shape) : undefined,
    ],
  },
  "binary:div": {
    // ∂/∂l = g / r; ∂/∂r = -g·l/r² = -(g / r)·y (no r², which overflows first)
    saves: (_op, tracked) => ({ inputs: [1], output: tracked[1] === true }),
    backward: ({ g, op, inputs, output, needs }) => {
      const gr = g.div(need(inputs[1]));
      return [needs[0] ? sumTo(gr, op.lhs.shape) : undefined, needs[1] ? sumTo(gr.mul(need(output)).neg(), op.rhs.shape) : undefined];
    },
  },
  "binary:pow": {
    saves: { inputs: [0, 1], output: true },
    backward: ({ g, op, inputs, output, needs }) => {
      const x = need(inputs[0]);
      const p = need(inputs[1]);
      const dx = needs[0] ? p.eq(0).where(0, p.mul(x.pow(p.sub(1)))) : undefined;
      const dp = needs[1] ? need(output).mul(x.eq(0).where(1, x).log()) : undefined;
      return [dx && sumTo(g.mul(dx), op.lhs.shape), dp && sumTo(g.mul(dp), op.rhs.shape)];
    },
  },
  "binary:maximum": {
    saves: { inputs: [0, 1], output: true },
    backward: ({ g, op, inputs, output, needs }) => {
      const [l, r, y] = [need(inputs[0]), need(inputs[1]), need(output)];
      return [
        needs[0] ? sumTo(g.mul(balancedShare(l, y, r)), op.lhs.shape) : undefined,
        needs[1] ? sumTo(g.mul(balancedShare(r, y, l)), op.rhs.shape) : undefined,
      ];
    },
  },
  "binary:minimum": {
    saves: { inputs: [0, 1], output: true },
    backward: ({ g, op, inputs, output, needs }) => {
      const [l, r, y] = [need(inputs[0]), need(inputs[1]), need(output)];
      return [
        needs[0] ? sumTo(g.mul(balancedShare(l, y, r)), op.lhs.shape) : undefined,
        needs[1] ? sumTo(g.mul(balancedShare(r, y, l)), op.rhs.shape) : undefined,
      ];
    },
  },
  "binary:mod": {
    // floored: x - floor(x / y)·y
    saves: (_op, tracked) => (tracked[1] === true ? BOTH_INPUTS : {}),
    backward: ({ g, op, inputs, needs }) => [
      needs[0] ? sumTo(g, op.lhs.shape) : undefined,
      needs[1] ? sumTo(g.mul(need(inputs[0]).div(need(inputs[1])).floor()).neg(), op.rhs.shape) : undefined,
    ],
  },
  "binary:floorDiv": { zero: ZERO },
  "binary:atan2": {
    // atan2(a, b): ∂/∂a = b / (a² + b²), ∂/∂b = -a / (a² + b²)
    saves: BOTH_INPUTS,
    backward: ({ g, op, inputs, needs }) => {
      const [a, b] = [need(inputs[0]), need(inputs[1])];
      const gd = g.div(a.square().add(b.square()));
      return [needs[0] ? sumTo(gd.mul(b), op.lhs.shape) : undefined, needs[1] ? sumTo(gd.mul(a).neg(), op.rhs.shape) : undefined];
    },
  },
  "binary:eq": { nonDifferentiable: COMPARE },
  "binary:ne": { nonDifferentiable: COMPARE },
  "binary:lt": { nonDifferentiable: COMPARE },
  "binary:le": { nonDifferentiable: COMPARE },
  "binary:gt": { nonDifferentiable: COMPARE },
  "binary:ge": { nonDifferentiable: COMPARE },
  "binary:and": { nonDifferentiable: LOGICAL },
  "binary:or": { nonDifferentiable: LOGICAL },
  "binary:xor": { nonDifferentiable: LOGICAL },

  // ── binary with a scalar (`x op c`, or `c op x` when `scalarFirst`) ─────────────────────────
  "binary-scalar:add": { backward: ({ g }) => [g.clone()] },
  "binary-scalar:sub": { backward: ({ g, op }) => [op.scalarFirst ? g.neg() : g.clone()] },
  "binary-scalar:mul": { backward: ({ g, op }) => [g.mul(op.scalar)] },
  "binary-scalar:div": {
    // x / c → g / c;  c / x → -g·c/x² = -(g / x)·y
    saves: (op) => (op.scalarFirst ? { inputs: [0], output: true } : {}),
    backward: ({ g, op, inputs, output }) => [op.scalarFirst ? g.div(need(inputs[0])).mul(need(output)).neg() : g.div(op.scalar)],
  },
  "binary-scalar:pow": {
    // x^c → c·x^(c-1) (0 when c == 0);  c^x → y·log(c) (0 when c == 0: log of 1, as JAX)
    saves: (op) => (op.scalarFirst ? OUTPUT : op.scalar === 0 || op.scalar === 1 ? {} : INPUT),
    backward: ({ g, op, inputs, output }) => {
      const c = op.scalar;
      if (op.scalarFirst) return c === 0 ? [undefined] : [g.mul(need(output)).mul(Math.log(c))];
      if (c === 0) return [undefined];
      if (c === 1) return [g.clone()];
      const x = need(inputs[0]);
      return [g.mul(c === 2 ? x.mul(2) : x.pow(c - 1).mul(c))];
    },
  },
  "binary-scalar:maximum": { saves: INPUT, backward: ({ g, op, inputs }) => [g.mul(above(need(inputs[0]), op.scalar))] },
  "binary-scalar:minimum": { saves: INPUT, backward: ({ g, op, inputs }) => [g.mul(below(need(inputs[0]), op.scalar))] },
  "binary-scalar:mod": {
    // x mod c → g;  c mod x → -g·floor(c / x)
    saves: (op) => (op.scalarFirst ? INPUT : {}),
    backward: ({ g, op, inputs }) => [op.scalarFirst ? g.mul(div(op.scalar, need(inputs[0])).floor()).neg() : g.clone()],
  },
  "binary-scalar:floorDiv": { zero: ZERO },
  "binary-scalar:atan2": {
    // atan2(x, c) → g·c/(x² + c²);  atan2(c, x) → -g·c/(c² + x²)
    saves: INPUT,
    backward: ({ g, op, inputs }) => {
      const r = g.mul(op.scalar).div(need(inputs[0]).square().add(op.scalar * op.scalar));
      return [op.scalarFirst ? r.neg() : r];
    },
  },
  "binary-scalar:eq": { nonDifferentiable: COMPARE },
  "binary-scalar:ne": { nonDifferentiable: COMPARE },
  "binary-scalar:lt": { nonDifferentiable: COMPARE },
  "binary-scalar:le": { nonDifferentiable: COMPARE },
  "binary-scalar:gt": { nonDifferentiable: COMPARE },
  "binary-scalar:ge": { nonDifferentiable: COMPARE },
  "binary-scalar:and": { nonDifferentiable: LOGICAL },
  "binary-scalar:or": { nonDifferentiable: LOGICAL },
  "binary-scalar:xor": { nonDifferentiable: LOGICAL },

  // ── the rest of the elementwise family ──────────────────────────────────────────────────────
  clamp: {
    // as maximum(minimum(x, hi), lo): 1 strictly inside, 1/2 on a bound, 0 outside (1/4 when lo == hi == x)
    saves: INPUT,
    backward: ({ g, op, inputs }) => {
      const x = need(inputs[0]);
      return [g.mul(above(x, op.min)).mul(below(x, op.max))];
    },
  },
  cast: {
    differentiable: (op) => isFloatType(op.input.dtype) && isFloatType(op.out.dtype),
    backward: ({ g, op }) => [g.cast(op.input.dtype)],
  },
  where: {
    saves: INPUT,
    backward: ({ g, op, inputs, needs }) => {
      const c = need(inputs[0]);
      return [
        undefined,
        needs[1] ? sumTo(c.where(g, 0), op.lhs.shape) : undefined,
        needs[2] ? sumTo(c.where(0, g), op.rhs.shape) : undefined,
      ];
    },
  },

  // ── reductions ──────────────────────────────────────────────────────────────────────────────
  "reduce:sum": { backward: ({ g, op }) => [unreduce(g, op.input.shape, op.axes).expand(op.input.shape)] },
  "reduce:mean": {
    backward: ({ g, op }) => {
      const count = op.axes.reduce((n, a) => n * (op.input.shape[a] ?? 1), 1);
      return [unreduce(g, op.input.shape, op.axes).div(count).expand(op.input.shape)];
    },
  },
  "reduce:max": { saves: { inputs: [0], output: true }, backward: chooser },
  "reduce:min": { saves: { inputs: [0], output: true }, backward: chooser },
  "reduce:prod": {
    // The product of the other elements of each slice, exact with zeros (see the module doc).
    saves: INPUT,
    backward: ({ g, op, inputs }) => {
      const x = need(inputs[0]);
      const zero = x.eq(0);
      const zeros = zero.cast(x.dtype).sum(op.axes, { keepDims: true });
      const others = zero.where(1, x).prod(op.axes, { keepDims: true });
      const atZero = zeros.eq(1).where(others, 0);
      const elsewhere = zeros.eq(0).where(others.div(x), 0);
      return [zero.where(atZero, elsewhere).mul(unreduce(g, op.input.shape, op.axes))];
    },
  },
  "reduce:argmax": { nonDifferentiable: "an index: an integer output" },
  "reduce:argmin": { nonDifferentiable: "an index: an integer output" },
  "reduce:any": { nonDifferentiable: LOGICAL },
  "reduce:all": { nonDifferentiable: LOGICAL },

  // ── matmul ──────────────────────────────────────────────────────────────────────────────────
  matmul: {
    // l [..., m, k] @ r [..., k, n]: ∂/∂l = g @ rᵀ, ∂/∂r = lᵀ @ g, summed over broadcast batch dims.
    saves: (_op, tracked) => ({ inputs: [...(tracked[1] === true ? [0] : []), ...(tracked[0] === true ? [1] : [])] }),
    backward: ({ g, op, inputs, needs }) => [
      needs[0] ? sumTo(g.matmul(need(inputs[1]).transpose()), op.lhs.shape) : undefined,
      needs[1] ? sumTo(need(inputs[0]).transpose().matmul(g), op.rhs.shape) : undefined,
    ],
  },

  // ── layout ──────────────────────────────────────────────────────────────────────────────────
  reshape: { backward: ({ g, op }) => [g.reshape(op.input.shape)] },
  permute: {
    backward: ({ g, op }) => {
      const inverse = new Array<number>(op.axes.length);
      op.axes.forEach((a, i) => {
        inverse[a] = i;
      });
      return [g.permute(inverse)];
    },
  },
  expand: { backward: ({ g, op }) => [sumTo(g, op.input.shape)] },
  slice: { backward: ({ g, op }) => [unslice(g, op.input.shape, op.ranges)] },
  concat: {
    backward: ({ g, op, needs }) => {
      const parts = g.split(
        op.inputs.map((t) => t.shape[op.axis] ?? 0),
        op.axis,
      );
      return parts.map((p, i) => (needs[i] === true ? p : undefined));
    },
  },
  gather: {
    saves: { inputs: [1] },
    backward: ({ g, op, inputs }) => [ungather(g, need(inputs[1]), op.input.shape, op.axis), undefined],
  },
  pad: {
    backward: ({ g, op }) => [g.slice(op.padding.map(([before], d) => [before, before + (op.input.shape[d] ?? 0)] as const))],
  },

  // ── dedicated kernels ───────────────────────────────────────────────────────────────────────
  sort: {
    // The values move: each input element's cotangent is the one of the place it went to (the
    // positions recomputed by a second sort). The positions themselves are integers.
    differentiable: (op) => op.output === "values",
    saves: INPUT,
    backward: ({ g, op, inputs }) => {
      const x = need(inputs[0]);
      const kept = op.out.shape[op.axis] ?? 0;
      const order = argsort(x, op.axis, { descending: op.descending });
      const taken = kept === (x.shape[op.axis] ?? 0) ? order : order.slice(x.shape.map((d, i): readonly [number, number] => (i === op.axis ? [0, kept] : [0, d])));
      return [scatterAdd(zeros(x.shape, { dtype: g.dtype, device: g.device }), taken, g, op.axis)];
    },
  },
  scan: {
    saves: (op) => (op.op === "prod" ? INPUT : {}),
    backward: ({ g, op, inputs }) => [op.op === "sum" ? g.flip(op.axis).cumsum(op.axis).flip(op.axis) : cumprodBackward(need(inputs[0]), g, op.axis)],
  },
  scatter: {
    saves: { inputs: [1] },
    backward: ({ g, op, inputs, needs }) => {
      const indices = need(inputs[1]);
      if (op.op === "add") return [needs[0] === true ? g.clone() : undefined, undefined, needs[2] === true ? gather(g, indices, op.axis) : undefined];
      // Assign: the last source per position won; the others and the overwritten input get 0.
      const m = indices.shape[op.axis] ?? 0;
      const j = arange(m, undefined, 1, { dtype: "i32", device: g.device })
        .reshape(indices.shape.map((d, i) => (i === op.axis ? d : 1)))
        .expand(indices.shape);
      const last = scatter(full(op.input.shape, -1, { dtype: "i32", device: g.device }), indices, j, op.axis);
      const dx = needs[0] === true ? last.eq(-1).where(g, 0) : undefined;
      const dsrc = needs[2] === true ? gather(last, indices, op.axis).eq(j).where(gather(g, indices, op.axis), 0) : undefined;
      return [dx, undefined, dsrc];
    },
  },

  // ── creation: no tensor input ───────────────────────────────────────────────────────────────
  init: { nonDifferentiable: CREATION },
  full: { nonDifferentiable: CREATION },
  arange: { nonDifferentiable: CREATION },
  random: { nonDifferentiable: CREATION },
};

/**
 * The cotangent of `cumprod(x)` along `axis`, exact with zeros (never `out / x`): the vector–Jacobian
 * product of the Hillis–Steele formulation `y₀ = x`, `y_{r+1} = y_r · shift_s(y_r)` (`s = 2^r`,
 * the shift pads with 1), pulled back round by round: `O(n log n)` elementwise work.
 */
function cumprodBackward(x: Tensor, g: Tensor, axis: number): Tensor {
  const n = x.shape[axis] ?? 0;
  const range = (a: number, b: number) => x.shape.map((d, i): readonly [number, number] => (i === axis ? [a, b] : [0, d]));
  const padding = (before: number, after: number) => x.shape.map((_, i): readonly [number, number] => (i === axis ? [before, after] : [0, 0]));
  const shift = (t: Tensor, s: number): Tensor => t.slice(range(0, n - s)).pad(padding(s, 0), 1);
  const unshift = (t: Tensor, s: number): Tensor => t.slice(range(s, n)).pad(padding(0, s), 0);
  const ys: Tensor[] = [x];
  const steps: number[] = [];
  for (let s = 1; s < n; s *= 2) {
    const y = ys[ys.length - 1] as Tensor;
    ys.push(y.mul(shift(y, s)));
    steps.push(s);
  }
  let gy = g;
  for (let r = steps.length - 1; r >= 0; r--) {
    const y = ys[r] as Tensor;
    const s = steps[r] as number;
    gy = gy.mul(shift(y, s)).add(unshift(gy.mul(y), s));
  }
  return gy;
}

/**
 * `max`/`min` over axes: the cotangent goes to the elements equal to the result, split evenly
 * among ties (JAX's reduce-chooser rule). NaN inputs compare unequal to everything: no cotangent.
 */
function chooser({ g, op, inputs, output }: { g: Tensor; op: OperationOfKey<"reduce:max">; inputs: readonly (Tensor | undefined)[]; output: Tensor | undefined }): (Tensor | undefined)[] {
  const x = need(inputs[0]);
  const y = unreduce(need(output), op.input.shape, op.axes);
  const hit = x.eq(y);
  const count = hit.cast(x.dtype).sum(op.axes, { keepDims: true });
  return [hit.where(unreduce(g, op.input.shape, op.axes).div(count), 0)];
}
