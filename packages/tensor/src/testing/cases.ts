/**
 * The conformance catalogue: every op of the user API, plus the edge cases every backend must get
 * right, each with the tolerance it is held to.
 *
 * @remarks
 * **Tolerances** (`|got - oracle| ≤ atol + rtol·|oracle|`, NaN matches NaN, ±Inf exactly):
 * - exact: layout ops, casts, compares, logical ops, `where`, integer arithmetic, `max`/`min`,
 *   `argmax`/`argmin`, `floor`/`ceil`/`round`/`sign`/`relu`/`abs`/`neg`, float `mod` and
 *   `floorDiv` (NumPy's answers from the exact remainder, `docs/semantics.md`), creation ops;
 * - `ELEMENTWISE` (rtol 1e-6, atol 1e-6): float `add`/`sub`/`mul` chains, where different
 *   operation orders inside a fused kernel may round differently;
 * - `TRANSCENDENTAL` (rtol 1e-4, atol 1e-5): `exp`, `log`, `sqrt`, `div`, `pow`, `tanh`, … —
 *   WGSL allows several ULP of error for these builtins;
 * - `TRIG` (atol 2e-3): `sin`/`cos`/`tan`/`atan2` (WGSL: absolute error 2^-11 on `[-π, π]`; the
 *   WebGPU backend reduces larger arguments first, so it holds for every finite f32);
 * - `APPROX` (atol 1e-3): `erf`/`gelu`, whose implementations use different approximations;
 * - reductions and matmul: rtol 1e-4 and atol growing with the reduced length `k`
 *   (`1e-6·k + 1e-5`): summation order differs between a tree and a loop;
 * - `rand`/`randn`: both backends share one counter-based generator; rtol/atol 1e-5 (uniform);
 *   `RANDN` (rtol 1e-4, atol 3e-3) for normal: Box–Muller computes `r·cos(2π·u2)` with
 *   `r = √(-2 ln max(u1, 1e-7)) ≤ 5.7`, and WGSL bounds `cos` only to an absolute 2^-11, so a
 *   conforming adapter may differ by 5.7 · 2^-11 ≈ 2.8e-3 (SwiftShader does: 6e-4 measured). A
 *   wrong generator differs by O(1), so this still catches one.
 *
 * @module
 */
import type { DType, UnaryOp } from "@weft/fusion";
import type { Device } from "../device/device.js";
import { arange, eye, full, linspace, ones, rand, randn, zeros } from "../ops/creation.js";
import { binary, where } from "../ops/elementwise.js";
import { concat, gather, stack } from "../ops/layout.js";
import type { Tensor } from "../tensor/tensor.js";
import { thresholdCases } from "./cases-thresholds.js";
import { opsConformanceCases } from "./cases-ops.js";
import { APPROX, ELEMENTWISE, EXACT, RANDN, TRANSCENDENTAL, TRIG, reductionTolerance, type InputKind, type InputSpec, type Tolerance } from "./host-data.js";

/** One conformance case: host inputs, what to compute from them, and the tolerance. */
export interface ConformanceCase {
  /** The property the case checks, used as the test name. */
  readonly name: string;
  /** Inputs generated on the host (same values on both devices). */
  readonly inputs: readonly InputSpec[];
  /** Builds the outputs from the uploaded inputs on `device`. Intermediates may be left to `tidy`. */
  readonly run: (inputs: readonly Tensor[], device: Device) => Tensor | readonly Tensor[];
  /** Tolerance against the oracle (default exact). */
  readonly tolerance?: Tolerance;
}

/** log2 of the element count of the large elementwise-chain case (2^20 by default). */
export const LARGE_ELEMENTWISE_LOG2 = 20;
/** log2 of the element count of the large reduction case (2^18: four times Mesa's 65,535-iteration loop bound). */
export const LARGE_REDUCTION_LOG2 = 18;

/**
 * Options of {@link conformanceCases}: the sizes of the two large cases. A runner on a slow
 * adapter (SwiftShader in a 2-core CI box) may shrink them; the names carry the size, so a report
 * always says what ran.
 */
export interface ConformanceCatalogueOptions {
  /** log2 of the large elementwise chain's length; default {@link LARGE_ELEMENTWISE_LOG2}. */
  readonly largeElementwiseLog2?: number;
  /**
   * log2 of the large reduction's length; default {@link LARGE_REDUCTION_LOG2}. Keep it above 16,
   * or the case no longer crosses Mesa's loop bound (docs/design.md#mesa-loop-bound) and stops testing it.
   */
  readonly largeReductionLog2?: number;
  /**
   * Add the threshold case that crosses 65,535 workgroups at the default workgroup size
   * (8.4 M elements; `thresholdCases({ large: true })`): for a real GPU, not a 2-core CI box.
   */
  readonly largeThresholds?: boolean;
  /**
   * Whether the threshold cases (`cases-thresholds.ts`) are in the catalogue (default true). The
   * Chromium run leaves them out: on SwiftShader in a 2-core box a single one takes minutes, and
   * they exercise the kernels, which Node's software WebGPU and the GPU run already check; the
   * browser run checks the browser's path (navigator.gpu, the page's bundling, release).
   */
  readonly thresholds?: boolean;
  /**
   * Whether issue 7's op cases (`cases-ops.ts`: scans, sorts, convolutions, … composed of the
   * kernels the rest of the catalogue checks) are in the catalogue (default true). The Chromium
   * run leaves them out for the reason it leaves out the threshold cases: it checks the browser's
   * path, and Node's software WebGPU and the GPU run check these ops' kernels.
   */
  readonly ops?: boolean;
}

export { ELEMENTWISE, TRANSCENDENTAL, TRIG, APPROX, RANDN, reductionTolerance } from "./host-data.js";

const x0 = (xs: readonly Tensor[]): Tensor => xs[0] as Tensor;
const x1 = (xs: readonly Tensor[]): Tensor => xs[1] as Tensor;
const x2 = (xs: readonly Tensor[]): Tensor => xs[2] as Tensor;

const UNARY_DOMAIN: Record<Exclude<UnaryOp, "not">, { kind: InputKind; tol: Tolerance }> = {
  neg: { kind: "normal", tol: EXACT },
  abs: { kind: "normal", tol: EXACT },
  exp: { kind: "normal", tol: TRANSCENDENTAL },
  log: { kind: "positive", tol: TRANSCENDENTAL },
  log2: { kind: "positive", tol: TRANSCENDENTAL },
  log1p: { kind: "positive", tol: TRANSCENDENTAL },
  expm1: { kind: "unit", tol: TRANSCENDENTAL },
  sqrt: { kind: "positive", tol: TRANSCENDENTAL },
  rsqrt: { kind: "positive", tol: TRANSCENDENTAL },
  sin: { kind: "unit", tol: TRIG },
  cos: { kind: "unit", tol: TRIG },
  tan: { kind: "unit", tol: TRIG },
  tanh: { kind: "normal", tol: TRANSCENDENTAL },
  sigmoid: { kind: "normal", tol: TRANSCENDENTAL },
  relu: { kind: "normal", tol: EXACT },
  gelu: { kind: "normal", tol: APPROX },
  silu: { kind: "normal", tol: TRANSCENDENTAL },
  erf: { kind: "normal", tol: APPROX },
  floor: { kind: "normal", tol: EXACT },
  ceil: { kind: "normal", tol: EXACT },
  round: { kind: "normal", tol: EXACT },
  sign: { kind: "normal", tol: EXACT },
  reciprocal: { kind: "positive", tol: TRANSCENDENTAL },
  square: { kind: "normal", tol: ELEMENTWISE },
};

function unaryCases(): ConformanceCase[] {
  return Object.entries(UNARY_DOMAIN).map(([op, { kind, tol }]) => ({
    name: `unary ${op} matches the oracle on [37, 5] (a size that is not a multiple of 4)`,
    inputs: [{ shape: [37, 5], kind }],
    run: (xs) => x0(xs).unary(op as UnaryOp),
    tolerance: tol,
  }));
}

const BINARY: readonly { op: "add" | "sub" | "mul" | "div" | "pow" | "maximum" | "minimum" | "mod" | "floorDiv" | "atan2"; lhs: InputKind; rhs: InputKind; tol: Tolerance }[] = [
  { op: "add", lhs: "normal", rhs: "normal", tol: ELEMENTWISE },
  { op: "sub", lhs: "normal", rhs: "normal", tol: ELEMENTWISE },
  { op: "mul", lhs: "normal", rhs: "normal", tol: ELEMENTWISE },
  { op: "div", lhs: "normal", rhs: "positive", tol: TRANSCENDENTAL },
  { op: "pow", lhs: "positive", rhs: "unit", tol: TRANSCENDENTAL },
  { op: "maximum", lhs: "normal", rhs: "normal", tol: EXACT },
  { op: "minimum", lhs: "normal", rhs: "normal", tol: EXACT },
  { op: "mod", lhs: "normal", rhs: "positive", tol: EXACT },
  { op: "floorDiv", lhs: "normal", rhs: "normal", tol: EXACT },
  { op: "atan2", lhs: "normal", rhs: "normal", tol: TRIG },
];

function binaryCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  for (const { op, lhs, rhs, tol } of BINARY) {
    out.push({
      name: `binary ${op} broadcasts [3,1,5] with [4,1] like the oracle`,
      inputs: [{ shape: [3, 1, 5], kind: lhs }, { shape: [4, 1], kind: rhs }],
      run: (xs) => binary(op, x0(xs), x1(xs)),
      tolerance: tol,
    });
    out.push({
      name: `binary ${op} with a scalar on either side matches the oracle`,
      inputs: [{ shape: [19], kind: lhs === "positive" && rhs === "positive" ? "positive" : lhs }],
      run: (xs) => [binary(op, x0(xs), op === "pow" ? 0.5 : 1.5), binary(op, op === "pow" || op === "div" || op === "mod" || op === "floorDiv" ? 2.5 : -1.5, op === "div" || op === "mod" || op === "floorDiv" ? x0(xs).abs().add(0.5) : x0(xs))],
      tolerance: tol,
    });
  }
  for (const op of ["add", "sub", "mul", "maximum", "minimum"] as const) {
    out.push({
      name: `integer ${op} on i32 is exact`,
      inputs: [{ shape: [6, 7], dtype: "i32" }, { shape: [7], dtype: "i32" }],
      run: (xs) => binary(op, x0(xs), x1(xs)),
    });
  }
  out.push({
    name: "an i32 tensor with a non-integer scalar promotes to f32",
    inputs: [{ shape: [9], dtype: "i32" }],
    run: (xs) => [x0(xs).add(0.5), x0(xs).mul(2), x0(xs).div(2)],
    tolerance: TRANSCENDENTAL,
  });
  for (const op of ["eq", "ne", "lt", "le", "gt", "ge"] as const) {
    out.push({
      name: `compare ${op} (with ties) gives the oracle's bools`,
      inputs: [{ shape: [5, 8], kind: "int" }, { shape: [8], kind: "int" }],
      run: (xs) => [binary(op, x0(xs), x1(xs)), binary(op, x0(xs), 1)],
    });
  }
  for (const op of ["and", "or", "xor"] as const) {
    out.push({
      name: `logical ${op} on bools matches the oracle`,
      inputs: [{ shape: [4, 6], dtype: "bool" }, { shape: [1, 6], dtype: "bool" }],
      run: (xs) => [binary(op, x0(xs), x1(xs)), binary(op, x0(xs), true)],
    });
  }
  out.push({
    name: "logical not flips every bool",
    inputs: [{ shape: [33], dtype: "bool" }],
    run: (xs) => x0(xs).not(),
  });
  out.push({
    name: "where selects between broadcast branches and scalars",
    inputs: [{ shape: [3, 4], dtype: "bool" }, { shape: [4], kind: "normal" }, { shape: [3, 1], kind: "normal" }],
    run: (xs) => [where(x0(xs), x1(xs), x2(xs)), where(x0(xs), x1(xs), 0), where(x0(xs), 1, -1)],
  });
  out.push({
    name: "clamp bounds values (two-sided and one-sided)",
    inputs: [{ shape: [50], kind: "normal" }],
    run: (xs) => [x0(xs).clamp(-1, 0.5), x0(xs).clamp(0), x0(xs).clamp(undefined, 1)],
  });
  out.push({
    name: "cast converts between every pair of f32, i32, u32 and bool",
    inputs: [{ shape: [40], kind: "normal" }, { shape: [40], dtype: "i32" }, { shape: [40], dtype: "bool" }],
    run: (xs) => {
      const f = x0(xs);
      return [f.cast("i32"), f.abs().cast("u32"), f.cast("bool"), x1(xs).cast("f32"), x1(xs).cast("bool"), x2(xs).cast("f32"), x2(xs).cast("i32")];
    },
  });
  return out;
}

function reductionCases(): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  const shape = [6, 7, 9];
  for (const op of ["sum", "mean", "max", "min", "prod"] as const) {
    const kind = op === "prod" ? "unit" : "normal";
    out.push({
      name: `reduce ${op} over one, two, negative and all axes, with and without keepDims`,
      inputs: [{ shape, kind }],
      run: (xs) => {
        const x = x0(xs);
        return [x[op](1), x[op]([0, 2], { keepDims: true }), x[op](-1), x[op](), x[op]([-3, -2])];
      },
      tolerance: op === "max" || op === "min" ? EXACT : reductionTolerance(6 * 7 * 9),
    });
  }
  out.push({
    name: "integer sum and prod stay integers, bool sum counts",
    inputs: [{ shape: [5, 6], dtype: "i32" }, { shape: [5, 6], dtype: "bool" }],
    run: (xs) => [x0(xs).sum(1), x0(xs).max(0), x1(xs).sum(), x1(xs).sum(0)],
  });
  for (const op of ["argmax", "argmin"] as const) {
    out.push({
      name: `${op} returns the first index of the extreme value (ties included)`,
      inputs: [{ shape: [7, 10], kind: "int" }],
      run: (xs) => [x0(xs)[op](1), x0(xs)[op](0, { keepDims: true }), x0(xs)[op]()],
    });
  }
  out.push({
    name: "any and all over axes match the oracle",
    inputs: [{ shape: [4, 5, 3], dtype: "bool" }],
    run: (xs) => [x0(xs).any(1), x0(xs).all([0, 2]), x0(xs).any(), x0(xs).all()],
  });
  out.push({
    name: "variance, std and logSumExp match the oracle",
    inputs: [{ shape: [8, 13], kind: "normal" }],
    run: (xs) => [x0(xs).variance(1), x0(xs).std(0, { correction: 1 }), x0(xs).logSumExp(1), x0(xs).logSumExp([0, 1], { keepDims: true })],
    tolerance: reductionTolerance(104),
  });
  out.push({
    name: "softmax and logSoftmax are stable for large logits",
    inputs: [{ shape: [4, 33], kind: "normal" }],
    run: (xs) => {
      const big = x0(xs).mul(100);
      return [x0(xs).softmax(), big.softmax(-1), x0(xs).logSoftmax(0), big.logSoftmax()];
    },
    tolerance: { rtol: 1e-4, atol: 1e-5 },
  });
  out.push({
    // A backend may fuse the softmax op sequence into one kernel (WebGPU does for dense f32 rows
    // up to 4096 along the last axis); this pins every side of that: NaN/±Inf rows, rows of 1,
    // of 10, past a workgroup, past the fused limit, offset rows (a slice), strided rows (a
    // transpose) and rank 1.
    name: "softmax over NaN/±Inf, every row length, offset and strided rows",
    inputs: [{ shape: [8, 8], kind: "special" }, { shape: [6, 10], kind: "normal" }, { shape: [3, 300], kind: "normal" }, { shape: [2, 4100], kind: "normal" }, { shape: [5, 1], kind: "normal" }, { shape: [9], kind: "normal" }],
    run: (xs) => {
      const [special, tens, long, past, ones, flat] = xs as [Tensor, Tensor, Tensor, Tensor, Tensor, Tensor];
      return [special.softmax(), tens.mul(30).softmax(), long.softmax(), past.softmax(), ones.softmax(), flat.softmax(), tens.slice([[2, 6]]).softmax(), tens.transpose().softmax(), special.softmax(0)];
    },
    tolerance: { rtol: 1e-4, atol: 1e-6 },
  });
  out.push({
    // `0.5·x·(1 + erf(x/√2))` cancels for x ≪ 0 (0.5% off at -4.7 on an H200, 8% at -7 in f64):
    // each backend computes the tail from erfc instead. Relative, with no absolute floor, down to
    // -12.5 (the value, -4.6e-35, is still a normal f32: a device may flush subnormals); alone, and
    // as a linear layer's epilogue (the CPU backend's WebAssembly one recomputes the tail).
    name: "gelu keeps its relative precision deep in the negative tail, alone and after a linear layer",
    inputs: [],
    run: (_, device) => {
      const x = arange(0, 257, 1, { device }).mul(-9 / 256).sub(3.25);
      return [x.gelu(), x.reshape([257, 1]).matmul(ones([1, 9], { device })).add(zeros([9], { device })).gelu()];
    },
    tolerance: { rtol: 1e-4, atol: 0 },
  });
  return out;
}

function matmulCases(): ConformanceCase[] {
  return [
    { name: "matmul [5,7]x[7,3]", inputs: [{ shape: [5, 7] }, { shape: [7, 3] }], run: (xs) => x0(xs).matmul(x1(xs)), tolerance: reductionTolerance(7) },
    { name: "batched matmul [2,3,4]x[2,4,5]", inputs: [{ shape: [2, 3, 4] }, { shape: [2, 4, 5] }], run: (xs) => x0(xs).matmul(x1(xs)), tolerance: reductionTolerance(4) },
    { name: "matmul broadcasts batch dims [2,1,3,4]x[5,4,6] and ranks", inputs: [{ shape: [2, 1, 3, 4] }, { shape: [5, 4, 6] }], run: (xs) => x0(xs).matmul(x1(xs)), tolerance: reductionTolerance(4) },
    { name: "matmul with 1-D operands follows NumPy", inputs: [{ shape: [6] }, { shape: [6, 3] }, { shape: [6] }], run: (xs) => [x0(xs).matmul(x1(xs)), x1(xs).transpose().matmul(x0(xs)), x0(xs).matmul(x2(xs))], tolerance: reductionTolerance(6) },
    { name: "matmul of a transposed (non-contiguous) operand", inputs: [{ shape: [9, 5] }, { shape: [9, 4] }], run: (xs) => x0(xs).transpose().matmul(x1(xs)), tolerance: reductionTolerance(9) },
    { name: "matmul with an epilogue (bias add + relu)", inputs: [{ shape: [16, 33] }, { shape: [33, 17] }, { shape: [17] }], run: (xs) => x0(xs).matmul(x1(xs)).add(x2(xs)).relu(), tolerance: reductionTolerance(33) },
    { name: "matmul 64x130x70 (not multiples of the tile size)", inputs: [{ shape: [64, 130] }, { shape: [130, 70] }], run: (xs) => x0(xs).matmul(x1(xs)), tolerance: reductionTolerance(130 * 4) },
    { name: "integer matmul computes in f32", inputs: [{ shape: [3, 4], dtype: "i32" }, { shape: [4, 2], dtype: "i32" }], run: (xs) => x0(xs).matmul(x1(xs)) },
    {
      // A backend may run a chain of small products — each left operand the previous layer's
      // epilogue result — with the epilogues and a softmax as one kernel (WebGPU does:
      // docs/performance.md#matmul-chain); this pins the served MLP's shape, a chain without
      // softmax, one weight in two layers, a layer past a workgroup's width (run in parts) and
      // NaN/±Inf rows.
      name: "a small MLP: products chained through epilogues, with and without softmax, fused or in parts",
      inputs: [
        { shape: [8, 64], kind: "normal" },
        { shape: [64, 128], kind: "normal" },
        { shape: [128], kind: "normal" },
        { shape: [128, 128], kind: "normal" },
        { shape: [128, 10], kind: "normal" },
        { shape: [5, 16], kind: "special" },
        { shape: [16, 300], kind: "normal" },
        { shape: [300, 7], kind: "normal" },
      ],
      run: (xs) => {
        // The weights are the inputs themselves: a weight computed in the same segment (a scale)
        // would join the first product's block, which then no longer starts with it.
        const [x, w1, b, w2, w3, s, wide, out] = xs as [Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor];
        const mlp = x.matmul(w1).add(b).relu().matmul(w2).add(b).tanh().matmul(w3).mul(0.25).softmax();
        const plain = x.matmul(w1).tanh().matmul(w2).mul(0.5);
        const shared = x.matmul(w1).tanh().matmul(w2).tanh().matmul(w2).add(b).mul(0.2).softmax();
        const parts = s.matmul(wide).relu().matmul(out).mul(0.01).softmax();
        return [mlp, plain, shared, parts];
      },
      tolerance: reductionTolerance(300),
    },
  ];
}

function layoutCases(): ConformanceCase[] {
  return [
    { name: "reshape with -1 and flatten keep row-major order", inputs: [{ shape: [4, 6] }], run: (xs) => [x0(xs).reshape([3, -1]).add(1), x0(xs).reshape([2, 2, 6]).flatten(1).exp()], tolerance: TRANSCENDENTAL },
    { name: "permute then an elementwise op reads the strided view", inputs: [{ shape: [2, 3, 5] }, { shape: [5, 3, 2] }], run: (xs) => x0(xs).permute([2, 1, 0]).add(x1(xs)), tolerance: ELEMENTWISE },
    { name: "transpose (default last two) then exp", inputs: [{ shape: [3, 4, 7] }], run: (xs) => x0(xs).transpose().exp(), tolerance: TRANSCENDENTAL },
    { name: "expand then mul broadcasts a size-1 dim", inputs: [{ shape: [3, 1] }, { shape: [2, 3, 4] }], run: (xs) => x0(xs).expand([2, 3, 4]).mul(x1(xs)), tolerance: ELEMENTWISE },
    { name: "squeeze and unsqueeze", inputs: [{ shape: [1, 5, 1] }], run: (xs) => [x0(xs).squeeze().neg(), x0(xs).squeeze(0).unsqueeze(-1).neg()] },
    {
      name: "slice with steps and negative indices, then an op",
      inputs: [{ shape: [10, 9] }],
      run: (xs) => [x0(xs).slice([[1, -1, 2], [-7, null, 3]]).exp(), x0(xs).slice([-1]), x0(xs).slice([null, [2, 5]]).sum(0)],
      tolerance: TRANSCENDENTAL,
    },
    { name: "concat along an inner axis promotes dtypes", inputs: [{ shape: [2, 3] }, { shape: [2, 5], dtype: "i32" }], run: (xs) => [concat([x0(xs), x1(xs)], 1), concat([x0(xs), x0(xs)], 0)] },
    { name: "stack and split round-trip", inputs: [{ shape: [3, 4] }, { shape: [3, 4] }], run: (xs) => [stack([x0(xs), x1(xs)], 1), ...x0(xs).split([1, 3], 1), ...x1(xs).split(3, 0)] },
    {
      name: "gather along an axis (torch semantics) and index_select",
      inputs: [{ shape: [5, 6] }, { shape: [5, 4], dtype: "i32", kind: "index", max: 6 }, { shape: [7], dtype: "i32", kind: "index", max: 5 }],
      run: (xs) => [gather(x0(xs), x1(xs), 1), x0(xs).gather(x2(xs), 0)],
    },
    { name: "pad with a constant", inputs: [{ shape: [3, 4] }], run: (xs) => [x0(xs).pad([[1, 2], [0, 3]], -7), x0(xs).pad([[2, 0]])] },
  ];
}

function creationCases(): ConformanceCase[] {
  const make = (f: (d: Device) => Tensor | Tensor[], name: string, tolerance: Tolerance = EXACT): ConformanceCase => ({ name, inputs: [], run: (_, d) => f(d), tolerance });
  return [
    make((device) => [zeros([3, 5], { device }), ones([7], { device, dtype: "i32" }), full([2, 2], 2.5, { device }), full([4], true, { device })], "zeros, ones and full"),
    make((device) => [arange(10, undefined, 1, { device }), arange(-3, 11, 2, { device, dtype: "i32" }), arange(1, 0, -0.25, { device })], "arange with positive, negative and fractional steps", ELEMENTWISE),
    make((device) => [linspace(-1, 1, 9, { device }), linspace(0, 5, 1, { device })], "linspace includes both ends", ELEMENTWISE),
    make((device) => [eye(4, undefined, { device }), eye(3, 5, { device, dtype: "i32" })], "eye is an identity matrix"),
    make((device) => [rand([1000], { device, seed: 7 }), rand([3, 33], { device, seed: 123456 })], "rand with a seed matches the oracle's generator", { rtol: 1e-5, atol: 1e-5 }),
    make((device) => randn([2049], { device, seed: 99 }), "randn with a seed matches the oracle's generator", RANDN),
  ];
}

function chain8(x: Tensor, y: Tensor): Tensor {
  return x.mul(1.5).add(y).exp().sub(0.25).mul(y).tanh().add(1).sqrt();
}

function edgeCases(options: ConformanceCatalogueOptions): ConformanceCase[] {
  const chainLog2 = options.largeElementwiseLog2 ?? LARGE_ELEMENTWISE_LOG2;
  const reduceLog2 = options.largeReductionLog2 ?? LARGE_REDUCTION_LOG2;
  const half = 1 << Math.floor(reduceLog2 / 2);
  return [
    { name: "empty tensors flow through elementwise ops, reductions and concat", inputs: [{ shape: [0, 3] }, { shape: [2, 3] }], run: (xs) => [x0(xs).add(1), x0(xs).sum(0), x0(xs).sum(1), concat([x0(xs), x1(xs)], 0), x0(xs).reshape([3, 0])] },
    { name: "size-1 dims broadcast against each other", inputs: [{ shape: [3, 1] }, { shape: [1, 4] }, { shape: [1] }], run: (xs) => x0(xs).mul(x1(xs)).add(x2(xs)), tolerance: ELEMENTWISE },
    { name: "scalars (rank 0) work in every op family", inputs: [{ shape: [] }, { shape: [4] }], run: (xs) => [x0(xs).add(x1(xs)), x0(xs).exp(), x1(xs).sum(), x0(xs).reshape([1, 1])], tolerance: TRANSCENDENTAL },
    {
      name: "NaN and ±Inf propagate like the oracle",
      inputs: [{ shape: [64], kind: "special" }, { shape: [64], kind: "special" }],
      run: (xs) => [x0(xs).add(x1(xs)), x0(xs).mul(2), x0(xs).relu(), x0(xs).exp(), x0(xs).eq(x0(xs)), x0(xs).lt(x1(xs)), x0(xs).maximum(x1(xs)), x0(xs).ne(x0(xs))],
      tolerance: TRANSCENDENTAL,
    },
    { name: "reductions see NaN and ±Inf", inputs: [{ shape: [8, 8], kind: "special" }], run: (xs) => [x0(xs).sum(1), x0(xs).max(1), x0(xs).min(0)], tolerance: reductionTolerance(8) },
    { name: "odd sizes (1, 3, 7, 1023) that are not multiples of 4", inputs: [{ shape: [1] }, { shape: [3] }, { shape: [7] }, { shape: [1023] }], run: (xs) => xs.map((x) => x.mul(3).add(1).sigmoid()), tolerance: TRANSCENDENTAL },
    { name: `a large elementwise chain (2^${chainLog2} elements)`, inputs: [{ shape: [2 ** chainLog2] }, { shape: [2 ** chainLog2] }], run: (xs) => chain8(x0(xs), x1(xs).abs()), tolerance: TRANSCENDENTAL },
    {
      name: `a large reduction (2^${reduceLog2} elements, sum and max)`,
      inputs: [{ shape: [2 ** reduceLog2], kind: "unit" }],
      run: (xs) => [x0(xs).sum(), x0(xs).max(), x0(xs).reshape([-1, half]).sum(1)],
      tolerance: reductionTolerance(2 ** reduceLog2),
    },
    { name: "a fused chain of 8 elementwise ops", inputs: [{ shape: [257] }, { shape: [257], kind: "positive" }], run: (xs) => chain8(x0(xs), x1(xs)), tolerance: TRANSCENDENTAL },
    { name: "a reduction after an elementwise prologue, then an epilogue", inputs: [{ shape: [31, 67] }], run: (xs) => x0(xs).mul(0.5).exp().sum(1).log().add(2), tolerance: reductionTolerance(67) },
    { name: "an elementwise op on a sliced, permuted view then a reduction", inputs: [{ shape: [6, 8, 5] }], run: (xs) => x0(xs).slice([[1, 5], [0, 8, 3]]).permute([2, 0, 1]).square().mean([1, 2]), tolerance: reductionTolerance(12) },
    { name: "many ops sharing one input fork and join", inputs: [{ shape: [40] }], run: (xs) => { const a = x0(xs).exp(); const b = x0(xs).neg().exp(); return [a.add(b).div(2), a.sub(b)]; }, tolerance: TRANSCENDENTAL },
  ];
}

/**
 * Every case of the kit, grouped by family, then every family at the sizes that cross each kernel
 * threshold (`cases-thresholds.ts`); `options` sizes the two large cases (default full size).
 */
export function conformanceCases(options: ConformanceCatalogueOptions = {}): ConformanceCase[] {
  return [...unaryCases(), ...binaryCases(), ...reductionCases(), ...matmulCases(), ...layoutCases(), ...creationCases(), ...(options.ops === false ? [] : opsConformanceCases()), ...edgeCases(options), ...(options.thresholds === false ? [] : thresholdCases({ large: options.largeThresholds ?? false }))];
}

/** The dtype each input uploads as (default f32). */
export function inputDType(spec: InputSpec): DType {
  return spec.dtype ?? "f32";
}
