/**
 * The conformance cases of issue 7's ops (`isNaN`…`softplus`, `floorDiv`, `tril`/`triu`, `flip`
 * and negative-step slices, `tile`, `repeat`, `oneHot`, `layerNorm`, `einsum`, and the scans,
 * sorts, scatters, convolutions and pools as they land): exact answers computed by hand or known
 * from NumPy ({@link opsExactCases}, checked against the answer, not the oracle), and
 * oracle-compared cases on random data past the kernels' size thresholds
 * ({@link opsConformanceCases}).
 *
 * @remarks
 * **Why both.** An exact case catches a rule both backends get wrong the same way (NaN ordering, a
 * floor division by zero, an out-of-range one-hot index); an oracle case catches a backend that
 * differs from the CPU oracle on sizes and values nobody computed by hand.
 * **Tolerances.** Exact cases are exact (every value below is a float a correctly rounded f32
 * computation gives: small integers, halves, NaN, ±Inf). Oracle cases state theirs:
 * `TRANSCENDENTAL` for `elu`/`selu`/`softplus`/`log2` (WGSL's `exp`/`log` builtins), the reduction
 * tolerance for `layerNorm` and `einsum` (summation order).
 *
 * @module
 */
import type { Device } from "../device/device.js";
import { arange, eye, ones, tensor, zeros } from "../ops/creation.js";
import { avgPool2d, conv1d, conv2d, maxPool2d } from "../ops/convolution.js";
import { cumprod, cumsum } from "../ops/scan.js";
import { scatter, scatterAdd } from "../ops/scatter.js";
import { argsort, sort, topk } from "../ops/sort.js";
import { einsum } from "../ops/einsum.js";
import { floorDiv, softplus } from "../ops/math.js";
import type { Tensor } from "../tensor/tensor.js";
import type { ConformanceCase } from "./cases.js";
import type { ExactCase, ExactOutput } from "./cases-api.js";
import { EXACT, TRANSCENDENTAL, hashName, prng, reductionTolerance } from "./host-data.js";

const T = true;
const F = false;
const f32 = (...values: number[]): ExactOutput => ({ dtype: "f32", values });
const i32 = (...values: number[]): ExactOutput => ({ dtype: "i32", values });
const bools = (...values: boolean[]): ExactOutput => ({ dtype: "bool", values });

function c(name: string, run: (d: Device) => Tensor | readonly Tensor[], ...expected: ExactOutput[]): ExactCase {
  return {
    name,
    run: (d) => {
      const out = run(d);
      return Array.isArray(out) ? out : [out as Tensor];
    },
    expected,
  };
}

/**
 * NumPy's float `floor_divide` (`npy_floor_divide` → `npy_divmod`, `npymath`), an f64 transcription
 * with every step rounded to f32 as NumPy's `float32` loop rounds it: the reference of the random
 * floorDiv case, independent of every backend. `a % b` on f32 values is the exact `fmod`; one
 * `+ − ÷` of f32 values in f64, then rounded to f32, is the correctly rounded f32 operation.
 */
export function numpyFloorDivide(a: number, b: number): number {
  const f = Math.fround;
  if (b === 0) return a / b;
  const mod = a % b;
  let div = f(f(a - mod) / b);
  if (mod !== 0 && (b < 0) !== (mod < 0)) div = f(div - 1);
  if (div === 0) {
    const q = a / b;
    return q < 0 || Object.is(q, -0) ? -0 : 0;
  }
  let floordiv = Math.floor(div);
  if (f(div - floordiv) > 0.5) floordiv = f(floordiv + 1);
  return floordiv;
}

/** NumPy's float `remainder` (`npy_remainder` → `npy_divmod`), like {@link numpyFloorDivide}. */
export function numpyRemainder(a: number, b: number): number {
  const f = Math.fround;
  if (b === 0) return NaN;
  let mod = a % b;
  if (mod !== 0) {
    if ((b < 0) !== (mod < 0) && !Number.isNaN(mod)) mod = f(mod + b);
  } else {
    mod = b < 0 || Object.is(b, -0) ? -0 : 0;
  }
  return mod;
}

/**
 * `n` seeded f32 pairs for the random floorDiv case: a quarter each of random bit patterns (every
 * exponent, subnormals, NaN), small integers and tenths (near-multiples like `1 // 0.1`), values
 * spread over 2^-30…2^30, and specials (±0, ±Inf, NaN, tiny, huge).
 */
function randomF32Pairs(n: number): { a: Float32Array; b: Float32Array } {
  const next = prng(hashName("floorDiv random pairs"));
  const specials = [0, -0, Infinity, -Infinity, NaN, 1e-45, -1e-45, 3.4e38, -3.4e38, 1, -1, 0.1];
  const one = (): number => {
    const r = next();
    if (r < 0.25) return new Float32Array(new Uint32Array([Math.floor(next() * 2 ** 32)]).buffer)[0] as number;
    if (r < 0.5) return Math.round((next() - 0.5) * 200) / (next() < 0.5 ? 1 : 10);
    if (r < 0.9) return (next() - 0.5) * 2 ** Math.floor(next() * 60 - 30);
    return specials[Math.floor(next() * specials.length)] as number;
  };
  const a = new Float32Array(n);
  const b = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    a[i] = one();
    b[i] = one();
  }
  return { a, b };
}

/** The random floorDiv case's answers: {@link numpyFloorDivide} and {@link numpyRemainder} of its pairs. */
function numpyExpected(n: number): ExactOutput[] {
  const { a, b } = randomF32Pairs(n);
  return [f32(...Array.from(a, (x, i) => numpyFloorDivide(x, b[i] as number))), f32(...Array.from(a, (x, i) => numpyRemainder(x, b[i] as number)))];
}

/** The exact-answer cases (hand-computed or NumPy's answers). */
export function opsExactCases(): ExactCase[] {
  const special = (d: Device): Tensor => tensor([1, -2, NaN, Infinity, -Infinity, 0, -0], { device: d });
  const m34 = (d: Device): Tensor => arange(12, undefined, 1, { device: d }).reshape([3, 4]);
  return [
    // ── predicates ──
    c("isNaN / isInf / isFinite on NaN, ±Inf, ±0", (d) => [special(d).isNaN(), special(d).isInf(), special(d).isFinite()],
      bools(F, F, T, F, F, F, F), bools(F, F, F, T, T, F, F), bools(T, T, F, F, F, T, T)),
    c("isNaN / isInf / isFinite of integers and bool: never NaN or infinite", (d) => {
      const x = tensor([-5, 0, 7], { dtype: "i32", device: d });
      const b = tensor([true, false], { device: d });
      return [x.isNaN(), x.isInf(), x.isFinite(), b.isNaN(), b.isFinite()];
    }, bools(F, F, F), bools(F, F, F), bools(T, T, T), bools(F, F), bools(T, T)),
    c("isNaN of a rank-0 and an empty tensor", (d) => [tensor(NaN, { device: d }).isNaN(), tensor([], { device: d }).isNaN()], bools(T), bools()),
    // ── floorDiv ──
    c("floorDiv of floats is NumPy's: 1 // 0.1 = 9 (the exact fmod is 0.09999999), 0.3 // 0.1 = 3, signs, b < 0, halves", (d) =>
      tensor([1, 0.3, 7, -7, 7, -7, 6, 49, -1, 1, 5.5, -5.5, -0.3], { device: d }).floorDiv(tensor([0.1, 0.1, 2, 2, -2, -2, 3, 7, 0.1, -0.1, 0.5, -0.5, 0.1], { device: d })),
      f32(9, 3, 3, -4, -4, 3, 2, 7, -10, -10, 11, 11, -4)),
    c("floorDiv of floats with huge quotients, tiny and subnormal divisors, overflow to Inf (NumPy's answers)", (d) =>
      tensor([1e30, -1e30, 3.4e38, 1e30, 123456789, 1, 1e-40, 1e10, -1e10, 1e38, 16777217, -2.5e-45], { device: d })
        .floorDiv(tensor([3, 3, 1e-38, 1e-10, 7, 1e-45, 3e-41, 0.3, 0.3, -3.4e38, 3, 1e-45], { device: d })),
      f32(3.333333383491554e29, -3.333333383491554e29, Infinity, Infinity, 17636684, Infinity, 3, 33333331968, -33333331968, -1, 5592405, -2)),
    c("floorDiv of floats with zero divisors, ±Inf and NaN (NumPy: x // 0 = x / 0, ±Inf // x = NaN, -3 // Inf = -1)", (d) =>
      tensor([5, -5, 0, -0, Infinity, -Infinity, NaN, 3, -3, 0, -0, 3, Infinity, 5, Infinity], { device: d })
        .floorDiv(tensor([0, 0, 0, 0, 3, 3, 3, NaN, Infinity, Infinity, -Infinity, -Infinity, Infinity, -0, -0], { device: d })),
      f32(Infinity, -Infinity, NaN, NaN, NaN, NaN, NaN, NaN, -1, 0, 0, -1, NaN, -Infinity, -Infinity)),
    c("a zero floorDiv has the quotient's sign (NumPy's copysign(0, a / b)); seen through 1/x", (d) =>
      tensor([0, -0, 0, 1, -1, 3, -3, 0.5], { device: d }).floorDiv(tensor([3, 3, -3, 5, -5, -Infinity, -Infinity, -Infinity], { device: d })).reciprocal(),
      f32(Infinity, -Infinity, -Infinity, Infinity, Infinity, -1, Infinity, -1)),
    c("floorDiv with a float scalar on either side", (d) => [
      tensor([1, 2.5, -2.5, 0.7], { device: d }).floorDiv(0.1),
      floorDiv(1, tensor([0.1, 0.3, -0.3, 1e-20], { device: d })),
    ], f32(9, 24, -25, 6), f32(9, 3, -4, 1.0000000200408773e20)),
    c("float mod is NumPy's remainder exactly: -1e-10 mod 1 = 1, 1 mod 0.1 = 0.09999999, subnormals, huge quotients", (d) =>
      tensor([-1e-10, 1, 1e30, 1e-40, -7, 3.4e38, -1e30, 5.5, -5.5, 1e-45], { device: d }).mod(tensor([1, 0.1, 3, 3e-41, 0.1, 1e-38, 3, -0.5, 0.5, -3], { device: d })),
      f32(1, 0.09999998658895493, 0, 9.99826454295757e-42, 1.043081283569336e-7, 2.1024914002913836e-39, 0, -0, 0, -3)),
    c("floorDiv and mod of 2048 random f32 pairs (all exponents, subnormals, ±0, ±Inf, NaN) equal NumPy's algorithm in f64", (d) => {
      const { a, b } = randomF32Pairs(2048);
      return [tensor(a, { device: d }).floorDiv(tensor(b, { device: d })), tensor(a, { device: d }).mod(tensor(b, { device: d }))];
    }, ...numpyExpected(2048)),
    c("floorDiv of floats with NaN and ±Inf dividends (NumPy: fmod(±Inf, b) is NaN, so the quotient is)", (d) => tensor([NaN, Infinity, -Infinity, -7.5, 3], { device: d }).floorDiv(2), f32(NaN, NaN, NaN, -4, 1)),
    c("floorDiv of i32: floored, x // 0 = 0, MIN // -1 wraps, MIN // 3 exact", (d) =>
      tensor([7, -7, 7, -7, 5, -2147483648, -2147483648, 2147483647], { dtype: "i32", device: d })
        .floorDiv(tensor([2, 2, -2, -2, 0, -1, 3, -2], { dtype: "i32", device: d })),
      i32(3, -4, -4, 3, 0, -2147483648, -715827883, -1073741824)),
    c("floorDiv of u32 and a scalar first", (d) => [
      tensor([7, 4294967295, 0], { dtype: "u32", device: d }).floorDiv(2),
      floorDiv(10, tensor([3, -3, 0], { dtype: "i32", device: d })),
    ], { dtype: "u32", values: [3, 2147483647, 0] }, i32(3, -4, 0)),
    // ── activations with exact answers ──
    c("leakyRelu: negatives scaled by alpha, NaN kept, ±Inf", (d) => tensor([-2, 3, NaN, -Infinity, Infinity, 0], { device: d }).leakyRelu(0.5), f32(-1, 3, NaN, -Infinity, Infinity, 0)),
    c("softplus(x, beta = 1, threshold = 2): x itself past the threshold (PyTorch); ±Inf, NaN", (d) => [
      tensor([3, 25, -Infinity, Infinity, NaN, 2.5], { device: d }).softplus(1, 2),
      softplus(tensor([30, -Infinity], { device: d }), 4),
    ], f32(3, 25, 0, Infinity, NaN, 2.5), f32(30, 0)),
    c("elu at 0, +Inf, -Inf and NaN; softplus of ±Inf and NaN", (d) => [
      tensor([0, Infinity, -Infinity, NaN, 5], { device: d }).elu(2),
      tensor([Infinity, -Infinity, NaN, 1000], { device: d }).softplus(),
    ], f32(0, Infinity, -2, NaN, 5), f32(Infinity, 0, NaN, 1000)),
    c("log2 of 1, 0, negatives, +Inf and NaN", (d) => tensor([1, 0, -1, Infinity, NaN], { device: d }).log2(), f32(0, -Infinity, NaN, Infinity, NaN)),
    c("log2 is exact on powers of two, normal and subnormal (NumPy's answers); -0 is -Inf; of i32 in f32", (d) => [
      tensor([2, 8, 0.5, 1024, 2 ** -149, 2 ** 127, 2 ** -126, 2 ** -130, 2 ** 100, -0, -Infinity], { device: d }).log2(),
      tensor([1, 4, 1024, 65536], { dtype: "i32", device: d }).log2(),
    ], f32(1, 3, -1, 10, -149, 127, -126, -130, 100, -Infinity, NaN), f32(0, 2, 10, 16)),
    // ── triangles ──
    c("tril and triu of a [3,4] matrix with k = 0, 1, -1", (d) => [m34(d).tril(), m34(d).triu(1), m34(d).tril(-1), m34(d).triu(-1)],
      f32(0, 0, 0, 0, 4, 5, 0, 0, 8, 9, 10, 0),
      f32(0, 1, 2, 3, 0, 0, 6, 7, 0, 0, 0, 11),
      f32(0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0),
      f32(0, 1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11)),
    c("tril of a batch keeps NaN in the kept triangle; triu of bool", (d) => [
      tensor([[[NaN, NaN], [NaN, NaN]], [[1, 2], [3, 4]]], { device: d }).tril(),
      tensor([[true, true], [true, true]], { device: d }).triu(),
    ], f32(NaN, 0, NaN, NaN, 1, 0, 3, 4), bools(T, T, F, T)),
    // ── flip and negative steps ──
    c("flip over every axis, one axis, and a negative axis", (d) => [m34(d).flip(), m34(d).flip(0), m34(d).flip(-1)],
      f32(11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
      f32(8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3),
      f32(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8)),
    c("flip of rank 0, of an empty axis, and of i32", (d) => [tensor(3, { device: d }).flip(), tensor([], { device: d }).flip(0), tensor([1, 2, 3], { dtype: "i32", device: d }).flip()],
      f32(3), f32(), i32(3, 2, 1)),
    c("negative-step slices: x[::-1, 3:0:-2], x[-2:2:-3], x[::-5], x[0:3:-1] (empty)", (d) => [
      m34(d).slice([[null, null, -1], [3, 0, -2]]),
      arange(10, undefined, 1, { device: d }).slice([[-2, 2, -3]]),
      arange(10, undefined, 1, { device: d }).slice([[null, null, -5]]),
      arange(10, undefined, 1, { device: d }).slice([[0, 3, -1]]),
    ], f32(11, 9, 7, 5, 3, 1), f32(8, 5), f32(9, 4), f32()),
    // ── tile, repeat, oneHot ──
    c("tile: reps longer than the rank, shorter, and a zero rep", (d) => {
      const x = tensor([1, 2], { device: d });
      const y = tensor([[1, 2], [3, 4]], { device: d });
      return [x.tile([2, 2]), y.tile(2), x.tile(0)];
    }, f32(1, 2, 1, 2, 1, 2, 1, 2), f32(1, 2, 1, 2, 3, 4, 3, 4), f32()),
    c("repeat: a count per axis, the flattened tensor, per-element counts with a zero", (d) => {
      const y = tensor([[1, 2], [3, 4]], { dtype: "i32", device: d });
      return [y.repeat(2, 0), y.repeat(2), y.repeat([0, 3], 1)];
    }, i32(1, 2, 1, 2, 3, 4, 3, 4), i32(1, 1, 2, 2, 3, 3, 4, 4), i32(2, 2, 2, 4, 4, 4)),
    c("oneHot: out-of-range and negative indices give zero rows; u32 indices; f32 and bool outputs", (d) => [
      tensor([0, 2, -1, 3], { dtype: "i32", device: d }).oneHot(3),
      tensor([1, 7], { dtype: "u32", device: d }).oneHot(2, { dtype: "f32" }),
      tensor([[1], [0]], { dtype: "i32", device: d }).oneHot(2, { dtype: "bool" }),
    ], i32(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0), f32(0, 1, 0, 0), bools(F, T, T, F)),
    // ── layerNorm ──
    c("layerNorm of a constant row is 0 (then bias), and a NaN row is NaN", (d) =>
      tensor([[2, 2, 2, 2], [NaN, 1, 2, 3]], { device: d }).layerNorm(-1, { weight: tensor([1, 2, 3, 4], { device: d }), bias: tensor([0, 1, 0, 1], { device: d }) }),
      f32(0, 1, 0, 1, NaN, NaN, NaN, NaN)),
    // ── einsum ──
    c("einsum: matmul, transpose, outer, dot, trace-free sum, batched, a chain of three", (d) => {
      const a = tensor([[1, 2], [3, 4]], { device: d });
      const b = tensor([[5, 6], [7, 8]], { device: d });
      const v = tensor([1, 2], { device: d });
      return [
        einsum("ij,jk->ik", a, b),
        einsum("ij->ji", a),
        einsum("i,j", v, tensor([3, 4, 5], { device: d })),
        einsum("i,i->", v, v),
        einsum("ij->", a),
        einsum("bij,bjk->bik", arange(8, undefined, 1, { device: d }).reshape([2, 2, 2]), arange(8, undefined, 1, { device: d }).reshape([2, 2, 2])),
        einsum("ij,jk,kl->il", eye(2, 2, { device: d }), a, b),
        einsum("ij,ij->i", a, b),
      ];
    }, f32(19, 22, 43, 50), f32(1, 3, 2, 4), f32(3, 4, 5, 6, 8, 10), f32(5), f32(10), f32(2, 3, 6, 11, 46, 55, 66, 79), f32(19, 22, 43, 50), f32(17, 53)),
    c("einsum of i32 operands computes in f32 (as matmul); an empty contraction gives zeros", (d) => [
      einsum("ij,j->i", tensor([[1, 2], [3, 4]], { dtype: "i32", device: d }), tensor([1, -1], { dtype: "i32", device: d })),
      einsum("ik,kj->ij", tensor([], { device: d }).reshape([2, 0]), tensor([], { device: d }).reshape([0, 3])),
    ], f32(-1, -1), f32(0, 0, 0, 0, 0, 0)),
    c("einsum diagonals and traces (NumPy): ii->i, ii->, implicit ii, iij->j, iii->i, iji->ij, ii,ij->j, an empty diagonal", (d) => {
      const m = (shape: number[]): Tensor => arange(shape.reduce((a, b) => a * b, 1), undefined, 1, { device: d }).reshape(shape);
      return [
        einsum("ii->i", m([3, 3])),
        einsum("ii->", m([3, 3])),
        einsum("ii", m([3, 3])),
        einsum("iij->j", m([2, 2, 3])),
        einsum("iii->i", m([2, 2, 2])),
        einsum("iji->ij", m([2, 3, 2])),
        einsum("ii,ij->j", m([3, 3]), m([3, 2])),
        einsum("ii->i", m([0, 0])),
      ];
    }, f32(0, 4, 8), f32(12), f32(12), f32(9, 11, 13), f32(0, 7), f32(0, 2, 4, 7, 9, 11), f32(40, 52), f32()),
    c("einsum with an ellipsis (NumPy): broadcast batch dims, implicit output, ...ii->...i, a scalar operand; the shapes after the values", (d) => {
      const m = (shape: number[]): Tensor => arange(shape.reduce((a, b) => a * b, 1), undefined, 1, { device: d }).reshape(shape);
      const withShape = (t: Tensor): Tensor[] => [t, tensor(t.shape, { dtype: "i32", device: d })];
      return [
        ...withShape(einsum("...ij,...jk->...ik", m([2, 1, 2, 3]), m([5, 3, 2]))),
        ...withShape(einsum("...ij->...ji", m([2, 2, 3]))),
        ...withShape(einsum("...ii->...i", m([2, 3, 3]))),
        ...withShape(einsum("...ij,...jk", m([2, 2, 3]), m([3, 2]))),
        ...withShape(einsum("i...->...", m([2, 3]))),
        ...withShape(einsum("...,...", m([2]), tensor(3, { device: d }))),
      ];
    },
    f32(10, 13, 28, 40, 28, 31, 100, 112, 46, 49, 172, 184, 64, 67, 244, 256, 82, 85, 316, 328, 46, 67, 64, 94, 172, 193, 244, 274, 298, 319, 424, 454, 424, 445, 604, 634, 550, 571, 784, 814), i32(2, 5, 2, 2),
    f32(0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11), i32(2, 3, 2),
    f32(0, 4, 8, 9, 13, 17), i32(2, 3),
    f32(10, 13, 28, 40, 46, 67, 64, 94), i32(2, 2, 2),
    f32(3, 5, 7), i32(3),
    f32(0, 3), i32(2)),
    c("einsum broadcasts a size-1 letter as NumPy does: ij,jk->ik with j of 1 and 3, i,i of [1] and [3]; mixed-case implicit output ba,ab", (d) => {
      const m = (shape: number[]): Tensor => arange(shape.reduce((a, b) => a * b, 1), undefined, 1, { device: d }).reshape(shape);
      return [einsum("ij,jk->ik", m([2, 1]), m([3, 4])), einsum("i,i", m([1]), m([3])), einsum("i,i", tensor([2], { device: d }), m([3])), einsum("ba,ab", m([2, 3]), m([3, 2]))];
    }, f32(0, 0, 0, 0, 12, 15, 18, 21), f32(0), f32(6), f32(50)),
    // ── scans ──
    c("cumsum along each axis, of the flattened tensor, with NaN and ±Inf", (d) => {
      const y = tensor([[1, 2], [3, 4]], { device: d });
      return [cumsum(y, 0), y.cumsum(1), y.cumsum(), tensor([1, NaN, 2], { device: d }).cumsum(0), tensor([Infinity, -Infinity, 1], { device: d }).cumsum(0)];
    }, f32(1, 2, 4, 6), f32(1, 3, 3, 7), f32(1, 3, 6, 10), f32(1, NaN, NaN), f32(Infinity, NaN, NaN)),
    c("cumsum of bool counts in i32; i32 wraps; empty and rank 0", (d) => [
      tensor([true, false, true], { device: d }).cumsum(0),
      tensor([2147483647, 1], { dtype: "i32", device: d }).cumsum(0),
      tensor([], { device: d }).cumsum(0),
      tensor(5, { device: d }).cumsum(),
    ], i32(1, 1, 2), i32(2147483647, -2147483648), f32(), f32(5)),
    c("cumprod with a zero, of i32 and bool", (d) => [
      tensor([1, 2, 3, 4], { device: d }).cumprod(0),
      tensor([2, 0, 5], { device: d }).cumprod(0),
      cumprod(tensor([-2, 3, -1], { dtype: "i32", device: d }), 0),
      tensor([true, true, false, true], { device: d }).cumprod(),
    ], f32(1, 2, 6, 24), f32(2, 0, 0), i32(-2, -6, 6), i32(1, 1, 0, 0)),
    c("cumsum of 70,000 ones is 1..70000 exactly (17 rounds, past every workgroup)", (d) => ones([70000], { device: d }).cumsum(0),
      f32(...Array.from({ length: 70000 }, (_, i) => i + 1))),
    // ── sorts ──
    c("sort ascending puts NaN last, descending first; -0 and 0 keep their order", (d) => {
      const x = tensor([3, 1, NaN, 2, -Infinity, Infinity, -0, 0], { device: d });
      return [x.sort(), x.argsort(), x.sort(-1, { descending: true }), argsort(x, 0, { descending: true })];
    }, f32(-Infinity, -0, 0, 1, 2, 3, Infinity, NaN), i32(4, 6, 7, 1, 3, 0, 5, 2), f32(NaN, Infinity, 3, 2, 1, -0, 0, -Infinity), i32(2, 5, 0, 3, 1, 6, 7, 4)),
    c("argsort is stable in both directions", (d) => {
      const x = tensor([2, 1, 2, 1, 2], { dtype: "i32", device: d });
      return [x.argsort(), x.argsort(0, { descending: true })];
    }, i32(1, 3, 0, 2, 4), i32(0, 2, 4, 1, 3)),
    c("sort and argsort along axis 0 of i32; u32 and bool", (d) => {
      const y = tensor([[3, 1], [1, 2], [2, 0]], { dtype: "i32", device: d });
      return [sort(y, 0), y.argsort(0), tensor([4294967295, 0, 5], { dtype: "u32", device: d }).sort(), tensor([true, false, true, false], { device: d }).sort()];
    }, i32(1, 0, 2, 1, 3, 2), i32(1, 2, 2, 0, 0, 1), { dtype: "u32", values: [0, 5, 4294967295] }, bools(F, F, T, T)),
    c("sort of an empty axis and of a size-1 axis", (d) => [tensor([], { device: d }).sort(), tensor([[5]], { device: d }).sort(), tensor([[5]], { device: d }).argsort()], f32(), f32(5), i32(0)),
    c("argsort of 1000 values in reverse order (a 1024-wide network with padding)", (d) => arange(1000, undefined, 1, { device: d }).flip().argsort(),
      i32(...Array.from({ length: 1000 }, (_, i) => 999 - i))),
    c("topk: NaN counts as largest, ties keep their order; largest: false", (d) => {
      const x = tensor([1, 3, NaN, 3, 2], { device: d });
      const top = x.topk(3);
      const bottom = topk(x, 2, { largest: false });
      return [top.values, top.indices, bottom.values, bottom.indices];
    }, f32(NaN, 3, 3), i32(2, 1, 3), f32(1, 2), i32(0, 4)),
    // ── scatters ──
    c("scatter: the last duplicate wins; scatterAdd: duplicates add up; a negative index counts from the end", (d) => {
      const z = zeros([3], { device: d });
      const idx = tensor([0, 2, 0], { dtype: "i32", device: d });
      const src = tensor([1, 2, 3], { device: d });
      return [z.scatter(idx, src, 0), scatterAdd(z, idx, src, 0), z.scatter(tensor([-1], { dtype: "i32", device: d }), tensor([5], { device: d }), 0)];
    }, f32(3, 0, 2), f32(4, 0, 2), f32(0, 0, 5)),
    c("scatter along axis 1, indices smaller than the input, a scalar source", (d) => [
      scatter(zeros([2, 3], { device: d }), tensor([[0], [2]], { dtype: "i32", device: d }), tensor([[1], [2]], { device: d }), 1),
      zeros([3, 3], { device: d }).scatter(tensor([[1]], { dtype: "i32", device: d }), tensor([[7]], { device: d }), 0),
      tensor([1, 2, 3], { device: d }).scatter(tensor([1], { dtype: "u32", device: d }), 9, 0),
    ], f32(1, 0, 0, 0, 0, 2), f32(0, 0, 0, 7, 0, 0, 0, 0, 0), f32(1, 9, 3)),
    c("scatter and scatterAdd with an out-of-range index fail their output at the read (as gather); a sibling reads", (d) => {
      const z = zeros([3], { device: d });
      return [
        z.scatter(tensor([0, 3], { dtype: "i32", device: d }), tensor([1, 2], { device: d }), 0),
        z.scatterAdd(tensor([-4], { dtype: "i32", device: d }), 1, 0),
        z.add(1),
      ];
    }, { dtype: "f32", fails: "index-out-of-range" }, { dtype: "f32", fails: "index-out-of-range" }, f32(1, 1, 1)),
    c("sort, argsort and topk of empty tensors: [5, 0], [0, 3], k = 0", (d) => [
      zeros([5, 0], { device: d }).argsort(),
      zeros([0, 3], { device: d }).sort(1, { descending: true }),
      tensor([3, 1, 2], { device: d }).topk(0).indices,
    ], i32(), f32(), i32()),
    c("scatter: an out-of-range index among 5000 sources (a later walk chunk) fails the output; an i32 tensor scattered into by itself", (d) => {
      const idx = zeros([5000], { dtype: "i32", device: d }).scatter(tensor([4999], { dtype: "i32", device: d }), 7, 0);
      const self = tensor([1, 0, 2], { dtype: "i32", device: d });
      return [zeros([7], { device: d }).scatterAdd(idx, 1, 0), self.scatter(self, self, 0)];
    }, { dtype: "f32", fails: "index-out-of-range" }, i32(0, 1, 2)),
    c("scatterAdd of i32 with duplicates is exact; NaN sources propagate", (d) => [
      tensor([10, 20], { dtype: "i32", device: d }).scatterAdd(tensor([1, 1, 1, 0], { dtype: "i32", device: d }), tensor([1, 2, 3, 4], { dtype: "i32", device: d }), 0),
      zeros([2], { device: d }).scatterAdd(tensor([1, 0], { dtype: "i32", device: d }), tensor([NaN, 1], { device: d }), 0),
    ], i32(14, 26), f32(1, NaN)),
    // ── convolutions ──
    c("conv2d of a 4×4 ramp with a 2×2 box: valid, stride 2, padding 1 + stride 2, dilation 2, bias", (d) => {
      const x = arange(16, undefined, 1, { device: d }).reshape([1, 1, 4, 4]);
      const w = ones([1, 1, 2, 2], { device: d });
      return [
        conv2d(x, w),
        conv2d(x, w, { stride: 2 }),
        conv2d(x, w, { stride: [2, 2], padding: 1 }),
        conv2d(x, w, { dilation: 2 }),
        conv2d(x.reshape([1, 4, 4]), w, { bias: tensor([0.5], { device: d }), stride: 2 }),
      ];
    }, f32(10, 14, 18, 26, 30, 34, 42, 46, 50), f32(10, 18, 42, 50), f32(0, 3, 3, 12, 30, 18, 12, 27, 15), f32(20, 24, 36, 40), f32(10.5, 18.5, 42.5, 50.5)),
    c("conv2d with groups, channel mixing, and padding \"same\"", (d) => [
      conv2d(tensor([[[[1, 2], [3, 4]], [[5, 6], [7, 8]]]], { device: d }), tensor([[[[2]]], [[[3]]]], { device: d }), { groups: 2 }),
      conv2d(tensor([1, 2], { device: d }).reshape([1, 2, 1, 1]), tensor([[1, 0], [0, 1], [1, 1]], { device: d }).reshape([3, 2, 1, 1])),
      conv2d(ones([1, 1, 3, 3], { device: d }), ones([1, 1, 3, 3], { device: d }), { padding: "same" }),
    ], f32(2, 4, 6, 8, 15, 18, 21, 24), f32(1, 2, 3), f32(4, 6, 4, 6, 9, 6, 4, 6, 4)),
    c("conv1d: valid, padding 1, stride 2, an unbatched [C, L] input", (d) => {
      const x = tensor([[[1, 2, 3, 4, 5]]], { device: d });
      const w = tensor([[[1, 0, -1]]], { device: d });
      return [conv1d(x, w), x.conv1d(w, { padding: 1 }), conv1d(x, w, { stride: 2 }), conv1d(x.reshape([1, 5]), w)];
    }, f32(-2, -2, -2), f32(-2, -2, -2, -2, 4), f32(-2, -2), f32(-2, -2, -2)),
    // ── pools ──
    c("maxPool2d: kernel 2; padding 1 never wins; NaN wins its window; i32 with negatives", (d) => {
      const x = arange(16, undefined, 1, { device: d }).reshape([1, 1, 4, 4]);
      return [
        maxPool2d(x, 2),
        x.maxPool2d(2, { padding: 1 }),
        maxPool2d(tensor([[[1, NaN], [3, 4]]], { device: d }), 2),
        maxPool2d(tensor([[[[-5, -6], [-7, -8]]]], { dtype: "i32", device: d }), 2, { stride: 1, padding: 1 }),
      ];
    }, f32(5, 7, 13, 15), f32(0, 2, 3, 8, 10, 11, 12, 14, 15), f32(NaN), i32(-5, -5, -6, -5, -5, -6, -7, -7, -8)),
    c("avgPool2d: kernel 2; padding counted (PyTorch's default) and not counted", (d) => {
      const x = arange(16, undefined, 1, { device: d }).reshape([1, 1, 4, 4]);
      return [avgPool2d(x, 2), x.avgPool2d(2, { padding: 1 }), avgPool2d(x, [2, 2], { padding: [1, 1], countIncludePad: false })];
    }, f32(2.5, 4.5, 10.5, 12.5), f32(0, 0.75, 0.75, 3, 7.5, 4.5, 3, 6.75, 3.75), f32(0, 1.5, 3, 6, 7.5, 9, 12, 13.5, 15)),
  ];
}

const x0 = (xs: readonly Tensor[]): Tensor => xs[0] as Tensor;
const x1 = (xs: readonly Tensor[]): Tensor => xs[1] as Tensor;

/** The oracle-compared cases: random data, sizes that are not multiples of 4 and past a workgroup. */
export function opsConformanceCases(): ConformanceCase[] {
  return [
    { name: "isNaN/isInf/isFinite of special values on [37, 5]", inputs: [{ shape: [37, 5], kind: "special" }], run: (xs) => [x0(xs).isNaN(), x0(xs).isInf(), x0(xs).isFinite()], tolerance: EXACT },
    { name: "elu, selu, softplus, log2, leakyRelu on [37, 5]", inputs: [{ shape: [37, 5], kind: "normal" }], run: (xs) => [x0(xs).elu(), x0(xs).selu(), x0(xs).softplus(), x0(xs).abs().log2(), x0(xs).leakyRelu(0.2)], tolerance: TRANSCENDENTAL },
    { name: "softplus with beta 2 and 0.5, threshold 1 and 20, on [37, 5]", inputs: [{ shape: [37, 5], kind: "normal" }], run: (xs) => [x0(xs).softplus(2, 1), x0(xs).softplus(0.5), x0(xs).softplus(3, Infinity)], tolerance: TRANSCENDENTAL },
    { name: "activations of special values (NaN, ±Inf, ±0)", inputs: [{ shape: [64], kind: "special" }], run: (xs) => [x0(xs).elu(), x0(xs).softplus(), x0(xs).leakyRelu()], tolerance: TRANSCENDENTAL },
    { name: "floorDiv of i32 with negative divisors and zeros on [300]", inputs: [{ shape: [300], kind: "int", dtype: "i32" }, { shape: [300], kind: "int", dtype: "i32" }], run: (xs) => x0(xs).floorDiv(x1(xs)), tolerance: EXACT },
    { name: "floorDiv of f32 on [37, 5]", inputs: [{ shape: [37, 5], kind: "normal" }, { shape: [5], kind: "positive" }], run: (xs) => x0(xs).floorDiv(x1(xs)).add(x0(xs).floorDiv(-0.75)), tolerance: EXACT },
    { name: "tril/triu of a [3, 70, 33] batch, fused into a chain", inputs: [{ shape: [3, 70, 33], kind: "normal" }], run: (xs) => x0(xs).tril(2).add(x0(xs).triu(-3).mul(2)), tolerance: EXACT },
    { name: "flip and negative-step slices of [129, 7]", inputs: [{ shape: [129, 7], kind: "normal" }], run: (xs) => [x0(xs).flip(), x0(xs).flip(0).add(1), x0(xs).slice([[100, 3, -7], [null, null, -2]])], tolerance: EXACT },
    { name: "tile and repeat of [5, 3]", inputs: [{ shape: [5, 3], kind: "normal" }], run: (xs) => [x0(xs).tile([2, 1, 3]), x0(xs).repeat(3, 0), x0(xs).repeat([1, 0, 2], 1)], tolerance: EXACT },
    { name: "oneHot of [300] indices into depth 70", inputs: [{ shape: [300], kind: "index", max: 70, dtype: "i32" }], run: (xs) => x0(xs).oneHot(70), tolerance: EXACT },
    { name: "layerNorm of [33, 300] with weight and bias", inputs: [{ shape: [33, 300], kind: "normal" }, { shape: [300], kind: "normal" }, { shape: [300], kind: "normal" }], run: (xs) => x0(xs).layerNorm(-1, { weight: x1(xs), bias: xs[2] as Tensor }), tolerance: reductionTolerance(300) },
    { name: "cumsum/cumprod along each axis of [37, 70]", inputs: [{ shape: [37, 70], kind: "unit" }], run: (xs) => [x0(xs).cumsum(0), x0(xs).cumsum(1), x0(xs).mul(0.1).add(1).cumprod(1)], tolerance: reductionTolerance(70) },
    { name: "cumsum of i32 over 3000 elements", inputs: [{ shape: [3000], kind: "int", dtype: "i32" }], run: (xs) => x0(xs).cumsum(0), tolerance: EXACT },
    { name: "sort/argsort of [5, 300] with special values, both directions", inputs: [{ shape: [5, 300], kind: "special" }], run: (xs) => [x0(xs).sort(), x0(xs).argsort(), x0(xs).sort(0, { descending: true }), x0(xs).argsort(1, { descending: true })], tolerance: EXACT },
    { name: "argsort of i32 with many ties on [700] (stable)", inputs: [{ shape: [700], kind: "int", dtype: "i32" }], run: (xs) => x0(xs).argsort(), tolerance: EXACT },
    {
      // The WebGPU sort's thresholds (`backend-webgpu` kernels/sort.ts): rows padded to 2 (1, 2), odd,
      // the workgroup size (128) ± 1, the in-workgroup block (2048) ± 1; sliced views (strided rows).
      name: "sort/argsort of rows 1, 2, 3, 127, 128, 129, 2047, 2048, 2049 wide, special values, both directions",
      inputs: [{ shape: [3, 2049], kind: "special" }],
      run: (xs) => [1, 2, 3, 127, 128, 129, 2047, 2048, 2049].flatMap((w) => {
        const x = x0(xs).slice([null, [0, w]]);
        return [x.sort(), x.argsort(-1, { descending: true })];
      }),
      tolerance: EXACT,
    },
    { name: "sort/argsort of rows past the workgroup block: i32 ties on [2, 5000], f32 on [9000], both directions", inputs: [{ shape: [2, 5000], kind: "int", dtype: "i32" }, { shape: [9000], kind: "special" }], run: (xs) => [x0(xs).argsort(), x0(xs).sort(-1, { descending: true }), x1(xs).sort(), x1(xs).argsort(0, { descending: true })], tolerance: EXACT },
    { name: "argsort along axis 0 of a transposed [300, 37] (many strided rows); sort of u32 and bool", inputs: [{ shape: [300, 37], kind: "normal" }, { shape: [1000], kind: "bool" }], run: (xs) => [x0(xs).transpose().argsort(0), x0(xs).transpose().sort(1, { descending: true }), x1(xs).argsort(), x1(xs).cast("u32").sort(0, { descending: true })], tolerance: EXACT },
    { name: "topk 10 of [3, 5000] (a long row, k < n) and topk 0", inputs: [{ shape: [3, 5000], kind: "normal" }], run: (xs) => { const t = x0(xs).topk(10); const s = x0(xs).topk(3, { largest: false }); return [t.values, t.indices, s.values, s.indices, x0(xs).topk(0).values]; }, tolerance: EXACT },
    { name: "cumsum/cumprod of [3, 9000] (18 scan blocks) and of a transposed input: the same order on every backend", inputs: [{ shape: [3, 9000], kind: "unit" }, { shape: [70, 40], kind: "int", dtype: "i32" }], run: (xs) => [x0(xs).cumsum(1), x0(xs).mul(0.001).add(1).cumprod(1), x1(xs).transpose().cumsum(1), x1(xs).cumprod(0)], tolerance: EXACT },
    {
      // The scan's thresholds: one block (512, serial), a block ± 1, many blocks; strided rows.
      name: "cumsum/cumprod of rows 1, 511, 512, 513, 1025 wide (the scan block, 512) from sliced views: the same blocked order on every backend",
      inputs: [{ shape: [4, 1025], kind: "unit" }],
      run: (xs) => [1, 511, 512, 513, 1025].flatMap((w) => {
        const x = x0(xs).slice([null, [0, w]]);
        return [x.cumsum(1), x.mul(0.01).add(1).cumprod(1), x.transpose().cumsum(0)];
      }),
      tolerance: EXACT,
    },
    { name: "cumsum of one row of 2,200,000 (more scan blocks than one carry walk, 4096)", inputs: [{ shape: [2200000], kind: "unit" }], run: (xs) => x0(xs).cumsum(0), tolerance: EXACT },
    { name: "scatter and scatterAdd of 5000 sources per row into [2, 100] (past the walk chunk), in order", inputs: [{ shape: [2, 100], kind: "normal" }, { shape: [2, 5000], kind: "index", max: 100, dtype: "i32" }, { shape: [2, 5000], kind: "normal" }], run: (xs) => [x0(xs).scatter(x1(xs), xs[2] as Tensor, 1), x0(xs).scatterAdd(x1(xs), xs[2] as Tensor, 1), x0(xs).transpose().scatterAdd(x1(xs).transpose().slice([[0, 7]]), (xs[2] as Tensor).transpose().slice([[0, 7]]), 0)], tolerance: EXACT },
    { name: "topk 7 of [9, 130]", inputs: [{ shape: [9, 130], kind: "normal" }], run: (xs) => { const t = x0(xs).topk(7); return [t.values, t.indices]; }, tolerance: EXACT },
    { name: "scatter and scatterAdd of [40, 33] with repeated indices along both axes", inputs: [{ shape: [40, 33], kind: "normal" }, { shape: [40, 50], kind: "index", max: 33, dtype: "i32" }, { shape: [40, 50], kind: "normal" }], run: (xs) => [x0(xs).scatter(x1(xs), xs[2] as Tensor, 1), x0(xs).scatterAdd(x1(xs), xs[2] as Tensor, 1)], tolerance: EXACT },
    { name: "conv2d [2, 4, 17, 19] with a [6, 2, 3, 3] kernel, groups 2, stride 2, padding 1, bias", inputs: [{ shape: [2, 4, 17, 19], kind: "normal" }, { shape: [6, 2, 3, 3], kind: "normal" }, { shape: [6], kind: "normal" }], run: (xs) => conv2d(x0(xs), x1(xs), { groups: 2, stride: 2, padding: 1, bias: xs[2] as Tensor }), tolerance: reductionTolerance(18) },
    { name: "conv1d [3, 5, 130] with a [4, 5, 5] kernel, dilation 2, padding same", inputs: [{ shape: [3, 5, 130], kind: "normal" }, { shape: [4, 5, 5], kind: "normal" }], run: (xs) => conv1d(x0(xs), x1(xs), { dilation: 2, padding: "same" }), tolerance: reductionTolerance(25) },
    { name: "maxPool2d and avgPool2d of [2, 3, 33, 35] with special values", inputs: [{ shape: [2, 3, 33, 35], kind: "special" }], run: (xs) => [maxPool2d(x0(xs), 3, { stride: 2, padding: 1 }), avgPool2d(x0(xs), [2, 3])], tolerance: reductionTolerance(9) },
    { name: "einsum attention scores bhqd,bhkd->bhqk", inputs: [{ shape: [2, 3, 17, 8], kind: "normal" }, { shape: [2, 3, 19, 8], kind: "normal" }], run: (xs) => einsum("bhqd,bhkd->bhqk", x0(xs), x1(xs)), tolerance: reductionTolerance(8) },
    { name: "einsum diagonal, trace and broadcast ellipsis matmul on [3, 70, 70] and [70, 33]", inputs: [{ shape: [3, 70, 70], kind: "normal" }, { shape: [70, 33], kind: "normal" }], run: (xs) => [einsum("...ii->...i", x0(xs)), einsum("bii->b", x0(xs)), einsum("...ij,...jk->...ik", x0(xs), x1(xs)), einsum("bij,bjj->bi", x0(xs), x0(xs))], tolerance: reductionTolerance(70) },
  ];
}
