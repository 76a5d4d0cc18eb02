/**
 * Cases of the user API whose answer is known exactly, checked against the answer itself rather
 * than against the oracle (issue 9): integer scalars under NEP 50 rules (`docs/semantics.md`,
 * "Integer scalars"), typed-array input (`README.md`, "Typed arrays"), and fused blocks that mix
 * empty and non-empty outputs. A backend and the oracle agreeing is not enough for these: both
 * wrapped `u32.gt(-1)` to `false` before.
 *
 * @remarks
 * **What a case checks** ({@link runExactCase}): each output's dtype and every value, exactly
 * (NaN matches NaN) or within an output's stated `tol` (`|got - want| ≤ atol + rtol·|want|`; a
 * zero still exactly, sign included);
 * the outputs are disposed afterwards, also when the check fails.
 *
 * @module
 */
import { StreamId } from "@weft/environment";
import { TensorComputationError, type DType } from "@weft/fusion";
import type { Device } from "../device/device.js";
import { full, tensor, zeros } from "../ops/creation.js";
import { clamp } from "../ops/elementwise.js";
import * as fn from "../ops/functions.js";
import { concat } from "../ops/layout.js";
import { tidy } from "../lifetime/lifetime.js";
import type { Tensor } from "../tensor/tensor.js";
import { opsExactCases } from "./cases-ops.js";
import { TRIG, type Tolerance } from "./host-data.js";

/**
 * One output's expected dtype and either its values (row-major; booleans for `bool`; within
 * `tol` when one is stated, for answers known to f64 that a GPU's f32 built-ins approximate) or
 * the `kind` of the root cause its read must reject with (a `TensorComputationError` whose `root`
 * has that kind: `docs/errors.md`, "At the read").
 */
export type ExactOutput =
  | { readonly dtype: DType; readonly values: readonly (number | boolean)[]; readonly tol?: Tolerance }
  | { readonly dtype: DType; readonly fails: string };

/** A computation on the device and its exact answer. */
export interface ExactCase {
  /** The property checked, used as the test name. */
  readonly name: string;
  /** Builds the outputs on `device` (the current device). Intermediates may be left to `tidy`. */
  readonly run: (device: Device) => readonly Tensor[];
  /** The answer, one entry per output. */
  readonly expected: readonly ExactOutput[];
}

const T = true;
const F = false;
const bools = (...v: boolean[]): ExactOutput => ({ dtype: "bool", values: v });

/** The integer-scalar cases: comparisons exact, out-of-range bounds folded, creation at the range's ends. */
export function integerScalarCases(): ExactCase[] {
  const u = (d: Device): Tensor => tensor([0, 5, 10], { dtype: "u32", device: d });
  const i = (d: Device): Tensor => tensor([-5, 0, 7], { dtype: "i32", device: d });
  const c = (name: string, run: (d: Device) => Tensor | readonly Tensor[], ...expected: ExactOutput[]): ExactCase => ({
    name,
    run: (d) => {
      const out = run(d);
      return Array.isArray(out) ? out : [out as Tensor];
    },
    expected,
  });
  return [
    c("u32 compared with -1 (below the range): every answer is exact", (d) => {
      const x = u(d);
      return [x.gt(-1), x.ge(-1), x.lt(-1), x.le(-1), x.eq(-1), x.ne(-1)];
    }, bools(T, T, T), bools(T, T, T), bools(F, F, F), bools(F, F, F), bools(F, F, F), bools(T, T, T)),
    c("i32 compared with ±3e9 (outside the range)", (d) => {
      const x = i(d);
      return [x.lt(3e9), x.gt(3e9), x.gt(-3e9), x.le(-3e9), x.eq(3e9)];
    }, bools(T, T, T), bools(F, F, F), bools(T, T, T), bools(F, F, F), bools(F, F, F)),
    c("u32 compared with 2^32 (one past the range)", (d) => {
      const x = u(d);
      return [x.lt(2 ** 32), x.ge(2 ** 32)];
    }, bools(T, T, T), bools(F, F, F)),
    c("i32 compared with 2.5: rounded to the integer with the same answer", (d) => {
      const x = tensor([1, 2, 3], { dtype: "i32", device: d });
      return [x.lt(2.5), x.le(2.5), x.gt(2.5), x.ge(2.5), x.eq(2.5), x.ne(2.5)];
    }, bools(T, T, F), bools(T, T, F), bools(F, F, T), bools(F, F, T), bools(F, F, F), bools(T, T, T)),
    c("i32 compared with a fraction beyond f32's exact integers stays exact", (d) => {
      const x = tensor([16777217, -16777217], { dtype: "i32", device: d });
      return [x.gt(16777216.5), x.lt(-16777216.5)];
    }, bools(T, F), bools(F, T)),
    c("u32 at the top of its range compared exactly", (d) => {
      const x = tensor([4294967295, 4294967294], { dtype: "u32", device: d });
      return [x.eq(4294967295), x.gt(4294967294.5)];
    }, bools(T, F), bools(T, F)),
    c("integers compared with ±Infinity and NaN", (d) => {
      const x = u(d);
      return [x.lt(Infinity), x.gt(-Infinity), x.gt(Infinity), x.lt(Number.NaN), x.eq(Number.NaN), x.ne(Number.NaN)];
    }, bools(T, T, T), bools(T, T, T), bools(F, F, F), bools(F, F, F), bools(F, F, F), bools(T, T, T)),
    c("a scalar on the left is compared the same way (-1 < u32, 3e9 > i32)", (d) => [fn.lt(-1, u(d)), fn.gt(3e9, i(d)), fn.ge(2.5, tensor([2, 3], { dtype: "i32", device: d }))],
      bools(T, T, T), bools(T, T, T), bools(T, F)),
    c("bool compared with 2 and 0.5", (d) => {
      const b = tensor([true, false], { device: d });
      return [b.eq(2), b.lt(0.5), b.ge(0.5)];
    }, bools(F, F), bools(F, T), bools(T, F)),
    c("maximum/minimum with a bound outside the dtype that cannot bind give x", (d) => [u(d).maximum(-1), u(d).minimum(2 ** 32), i(d).maximum(-3e9)],
      { dtype: "u32", values: [0, 5, 10] }, { dtype: "u32", values: [0, 5, 10] }, { dtype: "i32", values: [-5, 0, 7] }),
    c("clamp of u32 with a bound below the range drops that bound", (d) => [clamp(u(d), -2, 6), u(d).clamp(-2, 2 ** 40)],
      { dtype: "u32", values: [0, 5, 6] }, { dtype: "u32", values: [0, 5, 10] }),
    c("arithmetic with scalars at the ends of the range", (d) => [u(d).add(4294967285), i(d).sub(2147483643), u(d).mul(0)],
      { dtype: "u32", values: [4294967285, 4294967290, 4294967295] }, { dtype: "i32", values: [-2147483648, -2147483643, -2147483636] }, { dtype: "u32", values: [0, 0, 0] }),
    c("full and tensor hold the ends of each integer range alike", (d) => [
      full([2], 4294967295, { dtype: "u32", device: d }),
      tensor([4294967295, 0], { dtype: "u32", device: d }),
      full([2], -2147483648, { dtype: "i32", device: d }),
      full([1], Number.NaN, { dtype: "bool", device: d }),
      tensor([Number.NaN, 0], { dtype: "bool", device: d }),
    ], { dtype: "u32", values: [4294967295, 4294967295] }, { dtype: "u32", values: [4294967295, 0] }, { dtype: "i32", values: [-2147483648, -2147483648] }, bools(T), bools(T, F)),
    c("a comparison answered for every element keeps its input's shape", (d) => [u(d).reshape([3, 1]).gt(-1)], bools(T, T, T)),
  ];
}

/** Typed arrays keep their values; `{ dtype }` converts. */
export function typedArrayCases(): ExactCase[] {
  const one = (name: string, run: (d: Device) => Tensor, expected: ExactOutput): ExactCase => ({ name, run: (d) => [run(d)], expected: [expected] });
  return [
    one("Uint8Array (canvas pixels) keeps 0…255 as u32", (d) => tensor(new Uint8Array([0, 7, 128, 255]), { device: d }), { dtype: "u32", values: [0, 7, 128, 255] }),
    one("Uint8ClampedArray keeps its values as u32", (d) => tensor(new Uint8ClampedArray([0, 1, 254, 255]), { device: d }), { dtype: "u32", values: [0, 1, 254, 255] }),
    one("Uint16Array → u32", (d) => tensor(new Uint16Array([0, 65535]), { device: d }), { dtype: "u32", values: [0, 65535] }),
    one("Uint32Array → u32", (d) => tensor(new Uint32Array([0, 4294967295]), { device: d }), { dtype: "u32", values: [0, 4294967295] }),
    one("Int8Array → i32", (d) => tensor(new Int8Array([-128, -1, 0, 127]), { device: d }), { dtype: "i32", values: [-128, -1, 0, 127] }),
    one("Int16Array → i32", (d) => tensor(new Int16Array([-32768, 32767]), { device: d }), { dtype: "i32", values: [-32768, 32767] }),
    one("Int32Array → i32", (d) => tensor(new Int32Array([-2147483648, 2147483647]), { device: d }), { dtype: "i32", values: [-2147483648, 2147483647] }),
    one("Float64Array → f32, rounded to the nearest f32", (d) => tensor(new Float64Array([0.1, 1e40, -0]), { device: d }), { dtype: "f32", values: [Math.fround(0.1), Infinity, -0] }),
    one("Uint8Array with { dtype: 'bool' } is value != 0", (d) => tensor(new Uint8Array([0, 7, 255]), { dtype: "bool", device: d }), bools(F, T, T)),
    one("Uint8Array with { dtype: 'f32' } converts", (d) => tensor(new Uint8Array([0, 7, 255]), { dtype: "f32", device: d }), { dtype: "f32", values: [0, 7, 255] }),
    one("a tensor never aliases the caller's array: a Float32Array (and an Int32Array, and a subarray) changed after tensor() leaves the tensor as it was", (d) => {
      const f = new Float32Array([1, 2, 3, -0]);
      const i = new Int32Array([5, -6]);
      const base = new Float32Array([9, 8, 7, 6]);
      const a = tensor(f, { device: d });
      const b = tensor(i, { device: d });
      const c = tensor(base.subarray(1, 3), { device: d });
      f.fill(100);
      i.fill(100);
      base.fill(100);
      return a.add(b.cast("f32").sum()).add(c.sum().sub(15));
    }, { dtype: "f32", values: [0, 1, 2, -1] }),
    one("Uint8Array pixels with a shape, then arithmetic in f32", (d) => tensor(new Uint8ClampedArray([255, 0, 128, 64]), { shape: [2, 2], device: d }).cast("f32").div(255).mul(255), { dtype: "f32", values: [255, 0, 128, 64] }),
  ];
}

/** Fused blocks whose outputs mix empty and non-empty shapes: every output must still be computed. */
export function mixedEmptyCases(): ExactCase[] {
  const c = (name: string, run: (d: Device) => readonly Tensor[], ...expected: ExactOutput[]): ExactCase => ({ name, run, expected });
  const f32 = (...values: number[]): ExactOutput => ({ dtype: "f32", values });
  return [
    c("neg of a scalar beside neg of an empty vector (issue 9)", (d) => {
      const x = tensor(5, { device: d });
      const e = zeros([0], { device: d });
      return [x.neg(), e.neg()];
    }, f32(-5), f32()),
    c("a [1,3] chain beside an empty [0,3] chain", (d) => {
      const x = tensor([[1, 2, 3]], { device: d });
      const e = zeros([0, 3], { device: d });
      const r = x.mul(2).add(1);
      const q = e.mul(2).add(1);
      return [r, q, r.neg()];
    }, f32(3, 5, 7), f32(), f32(-3, -5, -7)),
    c("an empty output first, then a broadcast size-1 output", (d) => {
      const e = zeros([2, 0], { device: d });
      const x = tensor([[4], [9]], { device: d });
      return [e.exp(), x.sqrt(), x.add(e.sum(1, { keepDims: true }))];
    }, f32(), f32(2, 3), f32(4, 9)),
    c("a matmul over an empty inner dimension with an epilogue: zeros, then the epilogue", (d) => {
      const a = zeros([2, 0], { device: d });
      const b = zeros([0, 3], { device: d });
      return [a.matmul(b).add(1)];
    }, f32(1, 1, 1, 1, 1, 1)),
    c("an empty matmul product beside a non-empty one, each with an epilogue", (d) => {
      const e = zeros([0, 2], { device: d });
      const x = tensor([[1, 2], [3, 4]], { device: d });
      const w = tensor([[1, 0], [0, 1]], { device: d });
      return [e.matmul(w).mul(2), x.matmul(w).mul(2), e.matmul(w).sum(0)];
    }, f32(), f32(2, 4, 6, 8), f32(0, 0)),
    c("reductions of empty axes beside a reduction with elements, in one program", (d) => {
      const e = zeros([3, 0], { device: d });
      const x = tensor([[1, 2], [3, 4], [5, 6]], { device: d });
      return [e.exp().sum(1), x.mul(2).sum(1).add(1), e.prod(1)];
    }, f32(0, 0, 0), f32(7, 15, 23), f32(1, 1, 1)),
    c("an empty where beside a non-empty where", (d) => {
      const b = tensor([true, false], { device: d });
      const eb = zeros([0], { dtype: "bool", device: d });
      return [b.where(1, 2), eb.where(1, 2)];
    }, { dtype: "i32", values: [1, 2] }, { dtype: "i32", values: [] }),
  ];
}

/**
 * The snippets of issue 9's list ("Found"), each with the answer of `docs/semantics.md`: a net
 * for exactly what once came back wrong on WebGPU (multi-pass means, NaN/Inf in arithmetic,
 * division and mod by zero, constants the compiler folded, empty reductions, casts of special
 * values, integer scalars out of range). Exact answers only: a case either matches or names the
 * value that differs.
 */
export function issueCases(): ExactCase[] {
  const c = (name: string, run: (d: Device) => readonly Tensor[], ...expected: ExactOutput[]): ExactCase => ({ name, run, expected });
  const f32 = (...values: number[]): ExactOutput => ({ dtype: "f32", values });
  const NaN_ = Number.NaN;
  const Inf = Infinity;
  return [
    c("mean over more than one reduction pass: ones([65536]).mean() is 1, and variance/std 0", (d) => {
      const x = full([65536], 1, { device: d });
      return [x.mean(), x.variance(), x.std()];
    }, f32(1), f32(0), f32(0)),
    c("mean over [8,3,224,224] of 100 along [0,2,3] is 100 per channel", (d) => [full([8, 3, 224, 224], 100, { device: d }).mean([0, 2, 3])], f32(100, 100, 100)),
    c("NaN and ±Inf survive x - x and x * 0", (d) => {
      const x = tensor([NaN_, Inf, -Inf, 2], { device: d });
      return [x.sub(x), x.mul(0)];
    }, f32(NaN_, NaN_, NaN_, 0), f32(NaN_, NaN_, NaN_, 0)),
    c("division by a zero scalar and by a zero tensor: ±Inf and NaN; float mod 0 is NaN", (d) => {
      const x = tensor([1, -1, 0], { device: d });
      return [x.div(0), x.div(zeros([3], { device: d })), x.mod(0)];
    }, f32(Inf, -Inf, NaN_), f32(Inf, -Inf, NaN_), f32(NaN_, NaN_, NaN_)),
    c("values the shader compiler could fold: log 0, sqrt -1, rsqrt 0, 1/0, 1e30·1e30", (d) => [
      zeros([3], { device: d }).log(),
      full([3], -1, { device: d }).sqrt(),
      zeros([3], { device: d }).rsqrt(),
      zeros([3], { device: d }).reciprocal(),
      full([3], 1e30, { device: d }).mul(1e30),
    ], f32(-Inf, -Inf, -Inf), f32(NaN_, NaN_, NaN_), f32(Inf, Inf, Inf), f32(Inf, Inf, Inf), f32(Inf, Inf, Inf)),
    c("i32 mod 0 is 0 (NumPy), u32.clamp(-2, 6) drops the bound below the range", (d) => [
      tensor([5, -5, 0], { dtype: "i32", device: d }).mod(0),
      clamp(tensor([0, 5, 10], { dtype: "u32", device: d }), -2, 6),
    ], { dtype: "i32", values: [0, 0, 0] }, { dtype: "u32", values: [0, 5, 6] }),
    c("empty reductions: sum is 0, mean and variance are NaN", (d) => {
      const e = zeros([2, 0], { device: d });
      return [e.sum(), e.mean(1), e.variance(1)];
    }, f32(0), f32(NaN_, NaN_), f32(NaN_, NaN_)),
    c("variance with a divisor of 0 (correction = n) is NaN for 0/0, Inf otherwise", (d) => [
      tensor([3, 3], { device: d }).variance(0, { correction: 2 }),
      tensor([1, 2], { device: d }).variance(0, { correction: 2 }),
    ], f32(NaN_), f32(Inf)),
    c("gather counts a negative index from the end", (d) => [tensor([10, 20, 30], { device: d }).gather(tensor([2, -1, -3], { dtype: "i32", device: d }), 0)], f32(30, 30, 10)),
    c("float → int casts of NaN, ±Inf and out-of-range values saturate (NaN → 0), fractions truncate", (d) => {
      const x = tensor([NaN_, Inf, -Inf, 3e9, -3e9, 2.7, -2.7], { device: d });
      return [x.cast("i32"), x.cast("u32")];
    }, { dtype: "i32", values: [0, 2147483647, -2147483648, 2147483647, -2147483648, 2, -2] }, { dtype: "u32", values: [0, 4294967295, 0, 3000000000, 0, 2, 0] }),
    c("atan2(0, 0) is 0 and NaN propagates; log1p(Inf) is Inf; a finite mod ±Inf follows NumPy", (d) => [
      tensor([0, NaN_, 1], { device: d }).atan2(tensor([0, 1, NaN_], { device: d })),
      tensor([Inf, -1, NaN_], { device: d }).log1p(),
      tensor([5, -5], { device: d }).mod(Inf),
      tensor([5, -5], { device: d }).mod(-Inf),
    ], f32(0, NaN_, NaN_), f32(Inf, -Inf, NaN_), f32(5, Inf), f32(-Inf, -5)),
    c("a zero float mod has the divisor's sign, as NumPy (-7 mod 7 = +0, 7 mod -7 = -0; a random program of seed 1001); seen through 1/x", (d) => [
      tensor([-7, 7, 0, -0, 14], { device: d }).mod(tensor([7, -7, -Inf, 3, -7], { device: d })).reciprocal(),
      tensor([-7, 7, -0], { device: d }).mod(7).reciprocal(),
      tensor([-7, 7, 0], { device: d }).mod(-7).reciprocal(),
      tensor([-7, 0, -0], { device: d }).atan2(tensor([-7, 7, 0], { device: d }).mod(-7)),
    ], f32(Inf, -Inf, -Inf, Inf, -Inf), f32(Inf, Inf, Inf), f32(-Inf, -Inf, -Inf), f32(Math.fround(-Math.PI / 2), Math.fround(Math.PI), Math.fround(-Math.PI))),
    c("sums a compiler could reassociate keep IEEE's NaN: (x + b) - b, (x - b) + b, (-x + x) - (-x) (a random program of seed 7777)", (d) => {
      const x = tensor([Inf, -Inf, NaN_, 1], { device: d });
      const b = tensor([Inf, 1, 2, Inf], { device: d });
      return [x.add(b).sub(b), b.add(x).sub(b), x.sub(b).add(b), x.neg().add(x).sub(x.neg()), x.add(Inf).sub(Inf)];
    }, f32(NaN_, -Inf, NaN_, NaN_), f32(NaN_, -Inf, NaN_, NaN_), f32(NaN_, -Inf, NaN_, NaN_), f32(NaN_, NaN_, NaN_, 1), f32(NaN_, NaN_, NaN_, NaN_)),
    c("a quotient whose numerator the compiler knows is 0 keeps IEEE's NaN: (i mod i) / i is NaN for i = 0 (a random program of seed 31337)", (d) => {
      const i = tensor([0, 3, -2, 0, 5], { dtype: "i32", device: d });
      const x = tensor([0, Inf, -Inf, NaN_, 3, -2], { device: d });
      return [i.mod(i).div(i), x.mod(x).div(x), x.mul(0).div(x)];
    }, f32(NaN_, 0, 0, NaN_, 0), f32(NaN_, NaN_, NaN_, NaN_, 0, 0), f32(NaN_, NaN_, NaN_, NaN_, 0, 0)),
    c("a divisor the compiler knows is 0 still gives ±Inf: i / (i - i) with i and i - i read too (random program 486544639 of seed 515151)", (d) => {
      const i = full([], 3, { dtype: "i32", device: d });
      const z = i.sub(i);
      return [i, z, i.div(z)];
    }, { dtype: "i32", values: [3] }, { dtype: "i32", values: [0] }, f32(Inf)),
    c("quotients by ±0 known only at run time: x / f32(i - i) and x / -(|y - y|)", (d) => {
      const i = full([], 3, { dtype: "i32", device: d });
      const x = tensor([3, -2, 0, NaN_, Inf, -Inf], { device: d });
      return [x.div(i.sub(i)), x.div(x.sub(x).abs().neg())];
    }, f32(Inf, -Inf, NaN_, NaN_, Inf, -Inf), f32(-Inf, Inf, NaN_, NaN_, NaN_, NaN_)),
    c("a matmul read while its epilogue's every output is disposed unread (random program 1208634823 of seed 515151)", (d) => {
      const a = tensor([0, -2], { shape: [2, 1, 1], dtype: "i32", device: d });
      const b = tensor([2, -7, 2, 5], { shape: [2, 1, 2], dtype: "i32", device: d });
      const p = a.matmul(b);
      p.floorDiv(2).dispose();
      return [p];
    }, f32(0, 0, -4, -10)),
    c("NaN wins max, min, maximum and argmax (the first NaN's index)", (d) => {
      const x = tensor([1, NaN_, 3], { device: d });
      return [x.max(), x.min(), x.maximum(tensor([NaN_, 2, 1], { device: d })), x.argmax()];
    }, f32(NaN_), f32(NaN_), f32(NaN_, NaN_, 3), { dtype: "i32", values: [1] }),
  ];
}

/**
 * The index rule's error reach (`docs/semantics.md`, "Index errors"): an out-of-range index fails
 * the read of the gather's output and of exactly what is computed from it — through a second
 * gather (as its input or as its indices), through elementwise work between two gathers, and
 * across streams — while the outputs beside it in the same program read their values. The two
 * random programs of seed 23 on the H200 (a gather of a failed gather read values on WebGPU) are
 * the first case.
 */
export function indexErrorCases(): ExactCase[] {
  const c = (name: string, run: (d: Device) => readonly Tensor[], ...expected: ExactOutput[]): ExactCase => ({ name, run, expected });
  const f32 = (...values: number[]): ExactOutput => ({ dtype: "f32", values });
  const fails = (dtype: DType = "f32"): ExactOutput => ({ dtype, fails: "index-out-of-range" });
  // x[a, b] = 10a + b, shape [2, 4].
  const x = (d: Device): Tensor => tensor([[0, 1, 2, 3], [10, 11, 12, 13]], { device: d });
  const idx = (values: number[][], d: Device): Tensor => tensor(values, { dtype: "i32", device: d });
  return [
    c("a gather of a gather whose index is out of range fails; a gather of a clean gather reads", (d) => {
      const bad = x(d).gather(idx([[-3, -8]], d), 1);
      const good = x(d).gather(idx([[-1, 1]], d), 1);
      return [bad, bad.gather(idx([[0, 0]], d), 0), good.gather(idx([[0, 0]], d), 0), good];
    }, fails(), fails(), f32(3, 1), f32(3, 1)),
    c("the second gather's own index out of range fails only its output", (d) => {
      const first = x(d).gather(idx([[0], [1]], d), 1);
      return [first, first.gather(idx([[0], [2]], d), 0)];
    }, f32(0, 11), fails()),
    c("gather → elementwise → gather → elementwise: everything after the bad index fails, the rest reads", (d) => {
      const g1 = x(d).gather(idx([[1, 4]], d), 1);
      const y = g1.mul(2).add(1);
      const g2 = y.gather(idx([[1, 0]], d), 1);
      return [g1, y, g2, g2.exp(), x(d).neg().sum()];
    }, fails(), fails(), fails(), fails(), f32(-52)),
    c("indices computed by a failed gather fail the gather that uses them", (d) => {
      const positions = tensor([0, 1, 2], { dtype: "i32", device: d }).gather(tensor([5], { dtype: "i32", device: d }), 0);
      return [positions, x(d).gather(positions.reshape([1, 1]), 1), x(d).gather(idx([[2]], d), 1)];
    }, fails("i32"), fails(), f32(2)),
    c("a failed gather shared with another stream fails there too; the other stream's own work reads", (d) => {
      const bad = x(d).gather(idx([[7]], d), 1);
      const [there, own] = StreamId.executes(StreamId.of(1), () => [bad.add(1).gather(idx([[0]], d), 1), x(d).add(1).gather(idx([[0]], d), 1)]);
      return [bad, there, own];
    }, fails(), fails(), f32(1)),
    c("a failed gather consumed in place (its buffer reused by the next op) still fails what was computed from it", (d) => {
      const g = x(d).gather(idx([[1, 9]], d), 1);
      return [g.mul(2).add(1), x(d).gather(idx([[0, 1]], d), 1).neg().mul(2).add(1)];
    }, fails(), f32(1, -1)),
    c("indices from a failed gather consumed in place: the gather using them fails, a chain after it too", (d) => {
      const positions = tensor([0, 1, 2, 3], { dtype: "i32", device: d }).gather(tensor([1, 6], { dtype: "i32", device: d }), 0).add(0);
      const g = x(d).gather(positions.reshape([1, 2]), 1);
      return [g.mul(3).sub(1).abs(), x(d).sum()];
    }, fails(), f32(52)),
  ];
}

/**
 * The signed-zero rule (`docs/semantics.md`, "Signed zeros"): `clamp` returns `x` itself unless
 * it compares outside a bound (`clamp(-0, 0, 1)` is `-0`); `maximum`, `minimum`, the `max`/`min`
 * reductions and `relu` put `+0` above `-0` whatever the operand order. Zeros compare equal, so
 * each case shows the sign through `1/x` (`±Inf`) or `atan2` (`0` vs `±π`), which the values
 * check exactly. The second case is the random program of seed 23 on the H200 that disagreed.
 */
export function signedZeroCases(): ExactCase[] {
  const c = (name: string, run: (d: Device) => readonly Tensor[], ...expected: ExactOutput[]): ExactCase => ({ name, run, expected });
  const f32 = (...values: number[]): ExactOutput => ({ dtype: "f32", values });
  const Inf = Infinity;
  const pi = Math.fround(Math.PI);
  // Five elements: a vec4 body and a scalar tail on WebGPU.
  const a = (d: Device): Tensor => tensor([-0, 0, -0, 0, -0], { device: d });
  const b = (d: Device): Tensor => tensor([0, -0, -0, 0, 0], { device: d });
  return [
    c("clamp keeps x's zero unless it compares beyond a bound", (d) => [
      a(d).clamp(0, 1).reciprocal(),
      a(d).clamp(-1, -0).reciprocal(),
      a(d).clamp(-0, 0).reciprocal(),
      tensor([-1, 2, -0], { device: d }).clamp(0, 1).reciprocal(),
    ], f32(-Inf, Inf, -Inf, Inf, -Inf), f32(-Inf, Inf, -Inf, Inf, -Inf), f32(-Inf, Inf, -Inf, Inf, -Inf), f32(Inf, 1, -Inf)),
    c("atan2(y, clamp(y, 0, 1)) of -0 is -π (a random program of seed 23)", (d) => {
      const y = tensor([-0, 0, -2, NaN, -0], { device: d }).clamp(-1, 3);
      return [y.atan2(y.clamp(0, 1))];
    }, f32(-pi, 0, -Math.fround(Math.PI / 2), NaN, -pi)),
    c("maximum and minimum put +0 above -0 in either order, tensor and scalar operands", (d) => [
      a(d).maximum(b(d)).reciprocal(),
      a(d).minimum(b(d)).reciprocal(),
      b(d).maximum(a(d)).reciprocal(),
      a(d).maximum(0).reciprocal(),
      a(d).minimum(0).reciprocal(),
      b(d).minimum(-0).reciprocal(),
      a(d).relu().reciprocal(),
    ], f32(Inf, Inf, -Inf, Inf, Inf), f32(-Inf, -Inf, -Inf, Inf, -Inf), f32(Inf, Inf, -Inf, Inf, Inf), f32(Inf, Inf, Inf, Inf, Inf),
      f32(-Inf, Inf, -Inf, Inf, -Inf), f32(-Inf, -Inf, -Inf, -Inf, -Inf), f32(Inf, Inf, Inf, Inf, Inf)),
    c("max and min reductions of zeros: +0 above -0 whatever the order, also over several passes", (d) => {
      const negZeros = zeros([70000], { device: d }).neg();
      const mixed = concat([negZeros, zeros([1], { device: d }), negZeros]);
      return [a(d).max().reciprocal(), a(d).min().reciprocal(), negZeros.max().reciprocal(), mixed.max().reciprocal(), mixed.neg().min().reciprocal(), b(d).reshape([5, 1]).max(1).reciprocal()];
    }, f32(Inf), f32(-Inf), f32(-Inf), f32(Inf), f32(-Inf), f32(Inf, -Inf, -Inf, Inf, Inf)),
    c("sign keeps a zero's sign; atan2(sign(x), x) of -0 is -π (a random program of seed 101)", (d) => [
      a(d).sign().reciprocal(),
      a(d).sign().atan2(a(d)),
    ], f32(-Inf, Inf, -Inf, Inf, -Inf), f32(-pi, 0, -pi, 0, -pi)),
    c("a zero sum is +0: sum and matmul of -0 terms (a random program of seed 101)", (d) => {
      const negZeros = zeros([3, 4], { device: d }).neg();
      const products = zeros([2, 3], { device: d }).matmul(tensor([[-4, -5], [-1, -2], [-3, -6]], { device: d }));
      return [negZeros.sum().reciprocal(), negZeros.sum(1).reciprocal(), products.reciprocal(), products.atan2(products)];
    }, f32(Inf), f32(Inf, Inf, Inf), f32(Inf, Inf, Inf, Inf), f32(0, 0, 0, 0)),
  ];
}

/**
 * `sin`/`cos`/`tan` of every finite f32 are the f64 functions of that f32 (rounded to f32) within
 * `TRIG` (atol 2e-3, rtol 1e-4 for `tan` near a pole; `docs/semantics.md`, "Precision"): WGSL's built-ins are
 * accurate on `[-π, π]` only, so the backend reduces the argument itself. Zeros keep their sign
 * (`sin(-0) = tan(-0) = -0`), ±Inf and NaN give NaN. The first argument list has 17 entries (a
 * vec4 body and a scalar tail on WebGPU); the i32 case is the H200 random program of seed 1001
 * (`cos(-2^31)` was `1`, not `0.2378`).
 */
export function trigCases(): ExactCase[] {
  const args = [0, -0, 1e-30, Math.PI, Math.PI / 2, 100, 1e4, 12345.678, 1e6, 2 ** 24 + 1, 2147483647, -2147483648, 1e20, 3.4e38, Infinity, -Infinity, NaN].map(Math.fround);
  const ints = [-2147483648, 2147483647, 123456789, -7, 0];
  const of = (f: (x: number) => number, xs: readonly number[]): ExactOutput => ({ dtype: "f32", values: xs.map((x) => Math.fround(f(Math.fround(x)))), tol: TRIG });
  const x = (d: Device): Tensor => tensor(args, { device: d });
  return [
    {
      name: "sin, cos, tan of 0, -0, 1e-30, π, 100 … 3.4e38, ±Inf, NaN: the reduced argument's answer (one kernel each)",
      run: (d) => [x(d).sin(), x(d).cos(), x(d).tan()],
      expected: [of(Math.sin, args), of(Math.cos, args), of(Math.tan, args)],
    },
    {
      name: "sin, cos, tan of huge arguments fused with other ops: -sin(-x), cos(x·1), tan(x + 0) in one block",
      run: (d) => {
        const y = x(d);
        return [y.neg().sin().neg(), y.mul(1).cos(), y.add(0).tan()];
      },
      expected: [of(Math.sin, args), of(Math.cos, args), of((v) => Math.tan(v + 0), args)],
    },
    {
      name: "cos, sin, tan of i32 values cast to float: cos(-2^31) is 0.2378 (a random program of seed 1001)",
      run: (d) => {
        const i = tensor(ints, { dtype: "i32", device: d }).cast("f32");
        return [i.cos(), i.sin(), i.tan()];
      },
      expected: [of(Math.cos, ints), of(Math.sin, ints), of(Math.tan, ints)],
    },
  ];
}

/**
 * Division rounded as the oracle rounds it (`docs/semantics.md`, "Precision"): `fround(a / b)` for
 * pairs across 2^±45 (inside the range where the WebGPU backend corrects the quotient), quotients that are exact (`k / 255 · 255`, `x / x`, `6 / 3`),
 * `reciprocal`, and `mean` of equal values (the sum divided by the count). WGSL allows 2.5 ULP, and
 * NVIDIA's `255 / 255` was `0.99999994` (H200, 2026-11-29).
 */
export function divisionCases(): ExactCase[] {
  let state = 0x2545f491;
  const next = (): number => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < 4096; i++) {
    const sign = next() < 0.25 ? -1 : 1;
    a.push(Math.fround(sign * (1 + next()) * 2 ** Math.floor(next() * 90 - 45)));
    b.push(Math.fround((1 + next()) * 2 ** Math.floor(next() * 90 - 45)));
  }
  const ks = Array.from({ length: 256 }, (_, k) => k);
  const f32 = (values: readonly number[]): ExactOutput => ({ dtype: "f32", values });
  const same = a.map((v) => Math.fround(v * 3.7));
  return [
    {
      name: "float division is correctly rounded: 4096 random pairs across 2^±45 (fround(a / b))",
      run: (d) => [tensor(a, { device: d }).div(tensor(b, { device: d }))],
      expected: [f32(a.map((v, i) => Math.fround(v / (b[i] as number))))],
    },
    {
      name: "exact quotients stay exact: k / 255 · 255 for every u8 k, x / x, 6 / 3, reciprocal of 255 and 3",
      run: (d) => {
        const k = tensor(new Uint8Array(ks), { device: d }).cast("f32");
        const x = tensor(same, { device: d });
        return [k.div(255).mul(255), x.div(x.mul(1)), tensor([6, -6, 1], { device: d }).div(tensor([3, 3, 3], { device: d })), tensor([255, 3, -0.5], { device: d }).reciprocal()];
      },
      expected: [
        f32(ks.map((k) => Math.fround(Math.fround(k / 255) * 255))),
        f32(same.map(() => 1)),
        f32([2, -2, Math.fround(1 / 3)]),
        f32([Math.fround(1 / 255), Math.fround(1 / 3), -2]),
      ],
    },
    {
      name: "mean of equal values is the value: 255, 1000 and 70,000 elements of 100 (past a reduce pass)",
      run: (d) => [full([255], 100, { device: d }).mean(), full([1000], 100, { device: d }).mean(), full([70000], 100, { device: d }).mean()],
      expected: [f32([100]), f32([100]), f32([100])],
    },
  ];
}

/**
 * The exact cases of this file's families (the semantics table's answers), without issue 7's op
 * cases (`cases-ops.ts`): what a run too slow for the op compositions (the Chromium page) takes.
 */
export function apiExactCases(): ExactCase[] {
  return [...integerScalarCases(), ...typedArrayCases(), ...mixedEmptyCases(), ...issueCases(), ...signedZeroCases(), ...trigCases(), ...divisionCases(), ...indexErrorCases()];
}

/** Every exact case: {@link apiExactCases} and issue 7's op cases. */
export function exactCases(): ExactCase[] {
  return [...apiExactCases(), ...opsExactCases()];
}

/**
 * Runs `c` on `device` (made current by the caller) and compares each output's dtype and values
 * exactly. Returns `undefined` when it matches, else one line per difference. Disposes the outputs.
 */
export async function runExactCase(c: ExactCase, device: Device): Promise<string | undefined> {
  const outputs = tidy(() => c.run(device));
  try {
    if (outputs.length !== c.expected.length) return `${c.name}: ${outputs.length} outputs, expected ${c.expected.length}`;
    const problems: string[] = [];
    for (let k = 0; k < outputs.length; k++) {
      const out = outputs[k] as Tensor;
      const want = c.expected[k] as ExactOutput;
      if (out.dtype !== want.dtype) problems.push(`output ${k}: dtype ${out.dtype}, expected ${want.dtype}`);
      if ("fails" in want) {
        const outcome = await out.data().then(
          (data) => `values [${Array.from(data).join(", ")}]`,
          (error: unknown) => (rootKind(error) === want.fails ? undefined : `${String(error)}`),
        );
        if (outcome !== undefined) problems.push(`output ${k}: got ${outcome}, expected a read failing with root cause "${want.fails}"`);
        continue;
      }
      const data = await out.data();
      const got = Array.from(data, (v) => (out.dtype === "bool" ? v !== 0 : v));
      const same =
        got.length === want.values.length &&
        got.every((v, j) => {
          const w = want.values[j];
          if (Object.is(v, w)) return true;
          if (typeof v !== "number" || typeof w !== "number") return false;
          if (Number.isNaN(v) && Number.isNaN(w)) return true;
          if (want.tol !== undefined && w !== 0) return Math.abs(v - w) <= want.tol.atol + want.tol.rtol * Math.abs(w);
          return v === w && (w !== 0 || want.tol === undefined);
        });
      if (!same) problems.push(`output ${k}: got [${got.join(", ")}], expected [${want.values.join(", ")}]`);
    }
    return problems.length === 0 ? undefined : `${c.name}: ${problems.join("; ")}`;
  } finally {
    for (const t of outputs) t.dispose();
  }
}

/** The `kind` of a failed read's root cause (`TensorComputationError.root`), if it has one. */
function rootKind(error: unknown): unknown {
  if (!(error instanceof TensorComputationError)) return undefined;
  return (error.root as { kind?: unknown }).kind;
}
