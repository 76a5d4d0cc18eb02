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
import { arange, eye, tensor } from "../ops/creation.js";
import { einsum } from "../ops/einsum.js";
import { floorDiv } from "../ops/math.js";
import type { Tensor } from "../tensor/tensor.js";
import type { ConformanceCase } from "./cases.js";
import type { ExactCase, ExactOutput } from "./cases-api.js";
import { EXACT, TRANSCENDENTAL, reductionTolerance } from "./host-data.js";

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
    c("floorDiv of floats: signs, exact multiples, a zero divisor, 1 // 0.1 = 10 and 0.3 // 0.1 = 3 (f32 products, see ops/math.ts)", (d) =>
      tensor([1, 7, -7, 7, -7, 5, -5, 0, 6, 49, 0.3], { device: d }).floorDiv(tensor([0.1, 2, 2, -2, -2, 0, 0, 0, 3, 7, 0.1], { device: d })),
      f32(10, 3, -4, -4, 3, Infinity, -Infinity, NaN, 2, 7, 3)),
    c("floorDiv of floats with NaN and ±Inf dividends", (d) => tensor([NaN, Infinity, -Infinity, -7.5, 3], { device: d }).floorDiv(2), f32(NaN, Infinity, -Infinity, -4, 1)),
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
    c("elu at 0, +Inf, -Inf and NaN; softplus of ±Inf and NaN", (d) => [
      tensor([0, Infinity, -Infinity, NaN, 5], { device: d }).elu(2),
      tensor([Infinity, -Infinity, NaN, 1000], { device: d }).softplus(),
    ], f32(0, Infinity, -2, NaN, 5), f32(Infinity, 0, NaN, 1000)),
    c("log2 of 1, 0, negatives, +Inf and NaN", (d) => tensor([1, 0, -1, Infinity, NaN], { device: d }).log2(), f32(0, -Infinity, NaN, Infinity, NaN)),
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
  ];
}

const x0 = (xs: readonly Tensor[]): Tensor => xs[0] as Tensor;
const x1 = (xs: readonly Tensor[]): Tensor => xs[1] as Tensor;

/** The oracle-compared cases: random data, sizes that are not multiples of 4 and past a workgroup. */
export function opsConformanceCases(): ConformanceCase[] {
  return [
    { name: "isNaN/isInf/isFinite of special values on [37, 5]", inputs: [{ shape: [37, 5], kind: "special" }], run: (xs) => [x0(xs).isNaN(), x0(xs).isInf(), x0(xs).isFinite()], tolerance: EXACT },
    { name: "elu, selu, softplus, log2, leakyRelu on [37, 5]", inputs: [{ shape: [37, 5], kind: "normal" }], run: (xs) => [x0(xs).elu(), x0(xs).selu(), x0(xs).softplus(), x0(xs).abs().log2(), x0(xs).leakyRelu(0.2)], tolerance: TRANSCENDENTAL },
    { name: "activations of special values (NaN, ±Inf, ±0)", inputs: [{ shape: [64], kind: "special" }], run: (xs) => [x0(xs).elu(), x0(xs).softplus(), x0(xs).leakyRelu()], tolerance: TRANSCENDENTAL },
    { name: "floorDiv of i32 with negative divisors and zeros on [300]", inputs: [{ shape: [300], kind: "int", dtype: "i32" }, { shape: [300], kind: "int", dtype: "i32" }], run: (xs) => x0(xs).floorDiv(x1(xs)), tolerance: EXACT },
    { name: "floorDiv of f32 on [37, 5]", inputs: [{ shape: [37, 5], kind: "normal" }, { shape: [5], kind: "positive" }], run: (xs) => x0(xs).floorDiv(x1(xs)).add(x0(xs).floorDiv(-0.75)), tolerance: EXACT },
    { name: "tril/triu of a [3, 70, 33] batch, fused into a chain", inputs: [{ shape: [3, 70, 33], kind: "normal" }], run: (xs) => x0(xs).tril(2).add(x0(xs).triu(-3).mul(2)), tolerance: EXACT },
    { name: "flip and negative-step slices of [129, 7]", inputs: [{ shape: [129, 7], kind: "normal" }], run: (xs) => [x0(xs).flip(), x0(xs).flip(0).add(1), x0(xs).slice([[100, 3, -7], [null, null, -2]])], tolerance: EXACT },
    { name: "tile and repeat of [5, 3]", inputs: [{ shape: [5, 3], kind: "normal" }], run: (xs) => [x0(xs).tile([2, 1, 3]), x0(xs).repeat(3, 0), x0(xs).repeat([1, 0, 2], 1)], tolerance: EXACT },
    { name: "oneHot of [300] indices into depth 70", inputs: [{ shape: [300], kind: "index", max: 70, dtype: "i32" }], run: (xs) => x0(xs).oneHot(70), tolerance: EXACT },
    { name: "layerNorm of [33, 300] with weight and bias", inputs: [{ shape: [33, 300], kind: "normal" }, { shape: [300], kind: "normal" }, { shape: [300], kind: "normal" }], run: (xs) => x0(xs).layerNorm(-1, { weight: x1(xs), bias: xs[2] as Tensor }), tolerance: reductionTolerance(300) },
    { name: "einsum attention scores bhqd,bhkd->bhqk", inputs: [{ shape: [2, 3, 17, 8], kind: "normal" }, { shape: [2, 3, 19, 8], kind: "normal" }], run: (xs) => einsum("bhqd,bhkd->bhqk", x0(xs), x1(xs)), tolerance: reductionTolerance(8) },
  ];
}
