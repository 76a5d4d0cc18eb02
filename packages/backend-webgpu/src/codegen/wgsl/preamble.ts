import type { WgslBuilder } from "./builder.js";
import { NONFINITE, wgslType, type ValueType } from "./types.js";

/**
 * The helper functions codegen can call; each is emitted only when an expression uses it.
 *
 * @remarks
 * **Why so many guards.** WGSL lets an implementation assume that NaN and ±Inf never occur and
 * leaves many built-ins undefined outside their domain (`log(0)`, `sqrt(-1)`, `inverseSqrt(0)`,
 * `atan2(0, 0)`, `sin(Inf)`, float → int of NaN or out of range). SwiftShader folds `x != x` to
 * false and gives `exp(NaN) = Inf`; Mesa folds `x - x` to `0`. The CPU oracle follows IEEE 754
 * (`docs/semantics.md`), so every float op whose built-in could lose a special value goes through
 * a helper that decides the special cases on the **bits** (integer tests no optimiser may fold
 * away) and calls the built-in only for ordinary operands:
 * - tests: `isNan` (exponent all ones, mantissa ≠ 0), `isInf`, `isZero`, `signBit`;
 * - `keepNan(x, y)`: `y`, unless `x` is NaN, then `x` (wraps a transcendental `y = f(x)`);
 * - `ordered(a, b)`: neither operand is NaN (compares are `ordered & (a op b)`);
 * - `maxNan`/`minNan`/`clampNan`: `max`/`min`/`clamp` with the table's answers: a NaN operand
 *   wins (JS `Math.max`), `+0` is above `-0` for `maxNan`/`minNan` (IEEE 754-2019 `maximum`), and
 *   `clampNan` returns `x` itself unless it compares outside the bounds (so `clamp(-0, 0, 1)` is
 *   `-0`, NumPy's `clip`). WGSL's `max`/`min`/`clamp` may return either zero, and a select on a
 *   comparison of the same operands is no cure (Mesa's NIR, typeless, turns `select(x, hi, x > hi)`
 *   into `fmin` even through bitcasts), so the built-in runs and a tie of zeros is then decided
 *   on the bits (`docs/semantics.md`, "Signed zeros");
 * - domain guards with IEEE answers: `exp`, `log`, `log1p`, `expm1`, `sqrt`, `rsqrt`, `pow`
 *   (C99 Annex F), `atan2` (all signed zeros and infinities), `log2` (also exact on powers of
 *   two, from the exponent bits: WGSL's `log2` is only within 3 ULP);
 * - `fmod` (floored, NumPy's `remainder`) and `floorDiv` (NumPy's `floor_divide`): exact, from
 *   the exact remainder computed in integers (`divmodBits`, `packMag`) and a correctly rounded
 *   integer quotient (`divRound`), each lane through the scalar `modF32`/`floorDivF32`;
 * - `sin`/`cos`/`tan`: NaN for NaN and ±Inf, `-0` kept, and the argument reduced first
 *   (`trigReduce`, on `f32` scalars: Cody–Waite below 8192, Payne–Hanek with `mulWide` above),
 *   because WGSL's built-ins are accurate on `[-π, π]` only and drivers reduce large arguments
 *   badly (`cos(-2^31)` was `1` on an H200, not `0.2378`);
 * - same-operand forms: `subSelf` (`x - x`: 0, NaN for non-finite), `divSelf` (`x / x`),
 *   `modSelf`, emitted when both operands are one node so no compiler can fold them to a constant;
 * - `addIeee`/`subIeee`/`mulIeee`/`divIeee`: every float `+`, `-`, `*`, `/`, NaN decided on the
 *   bits (a NaN operand, infinities that cancel, `0 · Inf`, `0 / 0`, `Inf / Inf`): Mesa
 *   reassociates `(a + b) - b` to `a` and `-x + x` to `0`, which turns `(1 + Inf) - Inf` into `1`
 *   instead of NaN, and folds a quotient of a selected NaN to `0`;
 * - conversions: `toI32`/`toU32` (truncate, saturate, NaN → 0, like the oracle; WGSL clamps to
 *   `2^31 - 128`, not `2^31 - 1`);
 * - signed zeros: `plusZero` (a zero sum is `+0`: a compiler may fold `0.0 + p` to `p`, keeping a
 *   product's `-0`), `signOf` (`sign`, but `±0` and NaN are returned as they are).
 * `helpers.use(name, t)` returns the function's name for operands of type `t`.
 */
export type HelperName =
  | "erf" | "gelu" | "pow" | "pcg" | "random"
  | "isNan" | "isInf" | "isZero" | "signBit" | "ordered" | "keepNan" | "maxNan" | "minNan" | "clampNan"
  | "exp" | "log" | "log2" | "log1p" | "expm1" | "sqrt" | "rsqrt" | "sin" | "cos" | "tan" | "trigReduce" | "mulWide" | "fmod" | "atan2"
  | "subSelf" | "divSelf" | "modSelf" | "toI32" | "toU32" | "plusZero" | "signOf" | "addIeee" | "subIeee" | "mulIeee" | "divIeee"
  | "floorDiv" | "floorDivF32" | "modF32" | "divmodBits" | "packMag" | "divRound";

/** The helpers each helper calls (requested with it, for the same value type unless noted). */
const DEPENDS: Partial<Record<HelperName, readonly HelperName[]>> = {
  pow: ["isNan", "isInf", "isZero", "signBit"],
  ordered: ["isNan"],
  keepNan: ["isNan"],
  maxNan: ["isNan", "isZero"],
  minNan: ["isNan", "isZero"],
  clampNan: ["isNan", "isZero"],
  plusZero: ["isZero"],
  signOf: ["isNan", "isZero"],
  exp: ["isNan"],
  log: ["isNan", "isZero", "signBit"],
  log2: ["isNan", "isZero", "signBit"],
  log1p: ["isNan"],
  expm1: ["isNan"],
  sqrt: ["isNan", "isZero", "signBit"],
  rsqrt: ["isNan", "isZero", "signBit"],
  sin: ["isNan", "isInf"],
  cos: ["isNan", "isInf"],
  tan: ["isNan", "isInf"],
  atan2: ["isNan", "isInf", "isZero", "signBit"],
  subSelf: ["isNan", "isInf"],
  divSelf: ["isNan", "isInf", "isZero"],
  modSelf: ["isNan", "isInf", "isZero"],
  toI32: ["isNan"],
  toU32: ["isNan"],
};

/** The scalar `f32` type: the type of the helpers that work on one lane's bits. */
const F32: ValueType = { dtype: "f32", width: 1 };

/** The helpers each helper calls at a fixed type (whatever type it is requested for). */
const FIXED_DEPENDS: Partial<Record<HelperName, readonly (readonly [HelperName, ValueType])[]>> = {
  random: [["pcg", { dtype: "u32", width: 1 }]],
  sin: [["trigReduce", { dtype: "f32", width: 1 }]],
  cos: [["trigReduce", { dtype: "f32", width: 1 }]],
  tan: [["trigReduce", { dtype: "f32", width: 1 }]],
  trigReduce: [["mulWide", { dtype: "u32", width: 1 }]],
  fmod: [["modF32", F32]],
  floorDiv: [["floorDivF32", F32]],
  modF32: [["divmodBits", F32], ["packMag", F32]],
  floorDivF32: [["divmodBits", F32], ["packMag", F32], ["divRound", F32]],
};

/**
 * The helpers a kernel needs, collected while its expressions are emitted (docs/style.md#kernels: emit only
 * what is used).
 *
 * @remarks
 * **Bounded by** the helper names × the value types of one kernel (a handful).
 * **Invariant.** A helper's name encodes its type (`weft_erf_vec4f32`), so two typed copies never
 * collide, and `emit` writes them in a fixed order so generated sources are canonical.
 */
export class Preamble {
  /** Requested helpers, by mangled name → WGSL text. */
  readonly #helpers = new Map<string, string>();

  /** Requests helper `name` for values of type `t`; returns the function's name. */
  use(name: HelperName, t: ValueType): string {
    const fn = `weft_${name}_${mangle(t)}`;
    if (!this.#helpers.has(fn)) {
      for (const [dep, depType] of FIXED_DEPENDS[name] ?? []) this.use(dep, depType);
      for (const dep of DEPENDS[name] ?? []) this.use(dep, t);
      this.#helpers.set(fn, HELPERS[name](fn, wgslType(t), t));
    }
    return fn;
  }

  /** Whether nothing was requested. */
  get empty(): boolean {
    return this.#helpers.size === 0;
  }

  /** Writes every requested helper, sorted by name. */
  emit(w: WgslBuilder): void {
    for (const name of [...this.#helpers.keys()].sort()) {
      for (const l of (this.#helpers.get(name) ?? "").split("\n")) w.line(l);
      w.line("");
    }
  }
}

function mangle(t: ValueType): string {
  return wgslType(t).replace(/[<>]/g, "");
}

/** The name `use(name, t)` returns, without requesting anything (for tests and other templates). */
export function helperName(name: HelperName, t: ValueType): string {
  return `weft_${name}_${mangle(t)}`;
}

/** The `u32` type of the same width as `t` (what a float's bits are tested as). */
function bitsType(t: ValueType): string {
  return t.width === 1 ? "u32" : "vec4<u32>";
}

/** `x` as `f32` of `t`'s width (`f16` is widened: NaN survives, and `u32` bitcasts need 32 bits). */
function asF32(x: string, t: ValueType): string {
  if (t.dtype === "f32") return x;
  return t.width === 1 ? `f32(${x})` : `vec4<f32>(${x})`;
}
/** `x`'s bits (`u32` of `t`'s width; `f16` is widened first). */
function bitsOf(x: string, t: ValueType): string {
  return `bitcast<${bitsType(t)}>(${asF32(x, t)})`;
}

/** A `u32` constant of `t`'s width. */
function u(hex: string, t: ValueType): string {
  return `${bitsType(t)}(${hex}u)`;
}

/** The scalar float type of `t` (`f32` or `f16`). */
function scalarOf(t: ValueType): string {
  return t.dtype === "f16" ? "f16" : "f32";
}

/** A non-finite constant of type `t`, built at run time (see `NONFINITE` in `types.ts`). */
function special(bits: "0x7fc00000" | "0x7f800000" | "0xff800000", t: ValueType): string {
  const scalar = `${scalarOf(t)}(weft_nonfinite(${bits}u))`;
  return t.width === 1 ? scalar : `${wgslType(t)}(${scalar})`;
}

/**
 * `quotient`, except `±Inf` with the sign of `a / b` where the divisor is `±0` (the operands' bits
 * `ab`, `bb` and `mb` in scope, as {@link ieeeNanLines} declares them): WGSL leaves `x / 0`
 * indeterminate (its accuracy bound holds only for `|b|` in `[2^-126, 2^126]`), and Mesa returned
 * NaN for `3 / 0` once the divisor was a constant the code generator had folded (`f32(x - x)`;
 * random program 486544639 of `npm run fuzz -- --seed 515151`, 2026-11-30). IEEE and the oracle
 * give `±Inf`; `0 / 0` is left to the NaN cases.
 */
function byZeroDivisor(quotient: string, t: ValueType): string {
  const bits = `((ab ^ bb) & ${u("0x80000000", t)}) | ${u("0x7f800000", t)}`;
  const inf = `bitcast<${t.width === 1 ? "f32" : "vec4<f32>"}>(${bits})`;
  return `select(${quotient}, ${t.dtype === "f16" ? `${wgslType(t)}(${inf})` : inf}, mb == ${u("0", t)})`;
}

/** `±0` with the sign of `x` (of type `t`), built from the bits. */
function signedZeroOf(x: string, t: ValueType): string {
  const zero = `bitcast<${t.width === 1 ? "f32" : "vec4<f32>"}>(${bitsOf(x, t)} & ${u("0x80000000", t)})`;
  return t.dtype === "f16" ? `${wgslType(t)}(${zero})` : zero;
}

/** The float of type `t` whose bits (as {@link bitsOf} gives them) are `bits`. */
function fromBits(bits: string, t: ValueType): string {
  const value = `bitcast<${t.width === 1 ? "f32" : "vec4<f32>"}>(${bits})`;
  return t.dtype === "f16" ? `${wgslType(t)}(${value})` : value;
}

/**
 * `maxNan`/`minNan`: the built-in, a NaN operand winning (`a` first), and for two zeros the zero
 * the rule gives, built from the bits: `a & b` (`+0` unless both are `-0`) for the maximum,
 * `a | b` (`-0` unless both are `+0`) for the minimum.
 */
function pickOf(fn: string, ty: string, t: ValueType, builtin: "max" | "min"): string {
  const [isNan, isZero] = (["isNan", "isZero"] as const).map((h) => helperName(h, t));
  const zero = fromBits(`${bitsOf("a", t)} ${builtin === "max" ? "&" : "|"} ${bitsOf("b", t)}`, t);
  return [
    `fn ${fn}(a: ${ty}, b: ${ty}) -> ${ty} {`,
    `  let m = select(select(${builtin}(a, b), b, ${isNan}(b)), a, ${isNan}(a));`,
    `  return select(m, ${zero}, ${isZero}(a) & ${isZero}(b));`,
    `}`,
  ].join("\n");
}

/**
 * The lines that set `nan` for `a op b`: whether IEEE 754 makes the result NaN, decided on the
 * operands' bits (so a compiler that reassociates the operator into its neighbours — `(a + b) - b`
 * → `a`, `-x + x` → `0` — cannot lose a NaN), with few operations: the magnitudes' bits `ma`,
 * `mb` and their maximum `mx` answer "a NaN operand" (`mx > Inf`) and "an infinite operand"
 * (`mx == Inf`) at once.
 * - `+`: an infinite operand and bits that differ in the sign only (`Inf + -Inf`);
 * - `-`: an infinite operand and equal bits (`Inf - Inf`);
 * - `*`: an infinite operand and a zero one (`min(ma, mb) == 0`);
 * - `/`: equal magnitudes that are both zero or both infinite.
 * The chain workload's kernel (H200, 2^24 elements) spent ~8 µs of its 75 per guarded operator
 * with one test per operand class; this form needs about half the operations.
 */
function ieeeNanLines(op: "+" | "-" | "*" | "/", t: ValueType): string[] {
  const m = u("0x7fffffff", t);
  const inf = u("0x7f800000", t);
  const zero = u("0", t);
  const invalid: Record<typeof op, string> = {
    "+": `(mx == ${inf}) & ((ab ^ bb) == ${u("0x80000000", t)})`,
    "-": `(mx == ${inf}) & (ab == bb)`,
    "*": `(mx == ${inf}) & (min(ma, mb) == ${zero})`,
    "/": `(ma == mb) & ((ma == ${zero}) | (ma == ${inf}))`,
  };
  return [
    `  let ab = ${bitsOf("a", t)};`,
    `  let bb = ${bitsOf("b", t)};`,
    `  let ma = ab & ${m};`,
    `  let mb = bb & ${m};`,
    `  let mx = max(ma, mb);`,
    `  let nan = (mx > ${inf}) | (${invalid[op]});`,
  ];
}

/**
 * `addIeee`/`subIeee`/`mulIeee` (and `divIeee` for `f16`): the operator, with its NaN cases
 * decided on the operands' bits ({@link ieeeNanLines}).
 */
function ieeeOperator(fn: string, ty: string, t: ValueType, op: "+" | "-" | "*" | "/"): string {
  const value = op === "/" ? byZeroDivisor("a / b", t) : `a ${op} b`;
  return [`fn ${fn}(a: ${ty}, b: ${ty}) -> ${ty} {`, ...ieeeNanLines(op, t), `  return select(${value}, ${special("0x7fc00000", t)}, nan);`, `}`].join("\n");
}

/**
 * `divIeee` for `f32`: the quotient rounded as the oracle rounds it, with the NaN cases of
 * {@link ieeeOperator}.
 *
 * @remarks
 * WGSL (and Vulkan) allow `a / b` an error of 2.5 ULP, and NVIDIA uses it: `255 / 255` is
 * `0.99999994` there, so `x / 255 * 255` misses integers (H200 conformance, 2026-11-29). One
 * residual step fixes it (Markstein): `r = a − q·b`, then `q + r / b`. Two things stand in the way
 * on a GPU: `fma` may not be fused, and the driver rewrites algebra — NVIDIA turns `q + r / b`
 * with `q = a / b` into `(a + r) / b`, which rounds the correction away (measured on the H200:
 * the residual was right, the sum unchanged). So `q` and `b` are split into 12-bit halves on their
 * *bits*, both halves from integer operations (`hi` = the bits masked, `lo` = the low 12 mantissa
 * bits as an integer times `2^(e−150)`, also built from bits): the four products are exact in
 * `f32`, and the result is `q_hi + (q_lo + r / b)`, in which no compiler can see `a / b` (it
 * cannot know that `hi + lo` is `q`). The residual is good to about 2^-12
 * ULP of `q`: an exact quotient comes out exact, every other correctly rounded except within
 * 2^-12 ULP of a tie. The step is skipped where a product could leave the normal range (a biased
 * exponent of `q` or `b` outside [25, 253], `|a|` outside [2^-100, 2^125]) or the result is not
 * finite: there `q` stands, as WGSL gives it (NaN and zeros come from the operator), except for a
 * divisor of `±0`, whose `±Inf` is built from the bits ({@link byZeroDivisor}).
 */
function ieeeQuotient(fn: string, ty: string, t: ValueType): string {
  const bits = bitsType(t);
  const float = wgslType(t);
  const split = (x: string): string[] => [
    `  let ${x}w = bitcast<${bits}>(${x});`,
    `  let ${x}e = (${x}w >> ${u("23", t)}) & ${u("0xff", t)};`,
    `  let ${x}h = bitcast<${float}>(${x}w & ${u("0xfffff000", t)});`,
    `  let ${x}s = bitcast<${float}>((max(${x}e, ${u("24", t)}) - ${u("23", t)}) << ${u("23", t)});`,
    `  let ${x}l = bitcast<${float}>(bitcast<${bits}>(${float}(${x}w & ${u("0xfff", t)}) * ${x}s) | (${x}w & ${u("0x80000000", t)}));`,
  ];
  const inRange = (e: string): string => `(${e} >= ${u("25", t)}) & (${e} <= ${u("253", t)})`;
  return [
    `fn ${fn}(a: ${ty}, b: ${ty}) -> ${ty} {`,
    ...ieeeNanLines("/", t),
    `  let q = a / b;`,
    ...split("q"),
    ...split("b"),
    `  let r = (((a - qh * bh) - qh * bl) - ql * bh) - ql * bl;`,
    `  let q1 = qh + (ql + r / b);`,
    `  let m = abs(a);`,
    `  let step = ${inRange("qe")} & ${inRange("be")} & (m >= ${c("7.888609052210118e-31", t)}) & (m <= ${c("4.253529586511731e37", t)}) & ((bitcast<${bits}>(q1) & ${u("0x7fffffff", t)}) < ${u("0x7f800000", t)});`,
    `  return select(${byZeroDivisor("select(q, q1, step)", t)}, ${special("0x7fc00000", t)}, nan);`,
    `}`,
  ].join("\n");
}

/** A float constant of type `t` (component-wise for vectors). */
function c(value: string, t: ValueType): string {
  return `${wgslType(t)}(${value})`;
}

/** The bool type of `t`'s width. */
function boolOf(t: ValueType): string {
  return t.width === 1 ? "bool" : "vec4<bool>";
}

/** The integer type of `t`'s width holding `dtype`. */
function intOf(dtype: "i32" | "u32", t: ValueType): string {
  return t.width === 1 ? dtype : `vec4<${dtype}>`;
}

/** A one-argument helper `fn(x) -> T` whose body is `lines`. */
function fn1(fn: string, ty: string, lines: readonly string[], ret = ty): string {
  return [`fn ${fn}(x: ${ty}) -> ${ret} {`, ...lines.map((l) => `  ${l}`), `}`].join("\n");
}

/** 2/π to 192 bits, most significant 32-bit word first (fdlibm's `ipio2`, regrouped). */
const TWO_OVER_PI = ["0xa2f9836e", "0x4e441529", "0xfc2757d1", "0xf534ddc0", "0xdb629599", "0x3c439041"] as const;

/**
 * `sin`/`cos`/`tan` of `x` (type `t`): the argument reduced by `trigReduce` (per component, in
 * `f32`), Cephes' sinf/cosf polynomials on `|r| ≤ π/4` and the quadrant's identity (`sin(r + π/2) = cos r`, …;
 * `tan` is `sin r / cos r`, or `-cos r / sin r` in odd quadrants). `|x| < 2^-12` gives `x` for
 * `sin`/`tan` (error below 2^-25 relative; keeps `-0` and subnormals, which a GPU may flush);
 * NaN and ±Inf give NaN.
 */
function trigOf(op: "sin" | "cos" | "tan", fn: string, ty: string, t: ValueType): string {
  const reduce = helperName("trigReduce", { dtype: "f32", width: 1 });
  const f: ValueType = { dtype: "f32", width: t.width };
  const lanes = t.width === 1 ? ["xf"] : [0, 1, 2, 3].map((i) => `xf[${i}]`);
  const rq = lanes.map((lane, i) => `  let rq${i} = ${reduce}(${lane});`);
  const gather = (axis: "x" | "y"): string => (t.width === 1 ? `rq0.${axis}` : `vec4<f32>(${lanes.map((_, i) => `rq${i}.${axis}`).join(", ")})`);
  const body: Record<typeof op, readonly string[]> = {
    sin: [`  var v = select(s, co, odd);`, `  v = select(v, -v, (q & ${u("2", f)}) != ${u("0", f)});`, `  v = select(v, xf, abs(xf) < ${c("2.44140625e-4", f)});`],
    cos: [`  var v = select(co, s, odd);`, `  v = select(v, -v, ((q + ${u("1", f)}) & ${u("2", f)}) != ${u("0", f)});`],
    tan: [`  var v = select(s / co, -co / s, odd);`, `  v = select(v, xf, abs(xf) < ${c("2.44140625e-4", f)});`],
  };
  return [
    `fn ${fn}(x: ${ty}) -> ${ty} {`,
    `  let xf = ${asF32("x", t)};`,
    ...rq,
    `  let r = ${gather("x")};`,
    `  let q = ${bitsType(t)}(${gather("y")});`,
    // Cephes' sinf/cosf polynomials on |r| ≤ π/4 (about 1 ulp), not the built-ins: WGSL's sin/cos
    // are only bounded in absolute error (2^-11), and NVIDIA's return 0 for a tiny r, which made
    // tan of the f32 nearest π/2 -Inf instead of -2.29e7 (H200 conformance, 2026-11-29).
    `  let z = r * r;`,
    `  let s = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;`,
    `  let co = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0;`,
    `  let odd = (q & ${u("1", f)}) != ${u("0", f)};`,
    ...body[op],
    `  let out = select(v, ${special("0x7fc00000", f)}, ${helperName("isNan", t)}(x) | ${helperName("isInf", t)}(x));`,
    t.dtype === "f32" ? `  return out;` : `  return ${ty}(out);`,
    `}`,
  ].join("\n");
}

/**
 * A helper of type `t` that applies the scalar `f32` helper `core(a, b)` to each lane (an `f16`
 * lane widened to `f32` and the result rounded back once). The cores branch and loop on the
 * lanes' bits, which vector code cannot.
 */
function perLane(fn: string, ty: string, t: ValueType, core: string): string {
  const lanes = t.width === 1 ? [`${core}(${asF32("a", t)}, ${asF32("b", t)})`] : [0, 1, 2, 3].map((i) => `${core}(f32(a[${i}]), f32(b[${i}]))`);
  const value = t.width === 1 ? (lanes[0] ?? "") : `vec4<f32>(${lanes.join(", ")})`;
  return [`fn ${fn}(a: ${ty}, b: ${ty}) -> ${ty} {`, `  return ${t.dtype === "f32" ? value : `${ty}(${value})`};`, `}`].join("\n");
}

/**
 * NumPy's float remainder on one `f32` lane (`npy_remainder`): `fmod(a, b)`, plus `b` when it is
 * non-zero and its sign differs from `b`'s; a zero has `b`'s sign. Exact: when `|a| ≥ |b|` the
 * remainder `r·2^(eb−150)` lies on `b`'s grid, so `|b| − |fmod|` is `(mb − r)·2^(eb−150)`, built
 * from integers; when `|a| < |b|` it is `a`, or `a + b` rounded once (NumPy's `mod += b`: `-1e-10
 * mod 1` is `1`).
 */
function modF32Helper(fn: string): string {
  const [divmod, pack] = [helperName("divmodBits", F32), helperName("packMag", F32)];
  return [
    `fn ${fn}(a: f32, b: f32) -> f32 {`,
    `  let aw = bitcast<u32>(a);`,
    `  let bw = bitcast<u32>(b);`,
    `  let ua = aw & 0x7fffffffu;`,
    `  let ub = bw & 0x7fffffffu;`,
    `  if ((ua >= 0x7f800000u) | (ub > 0x7f800000u) | (ub == 0u)) { return ${NONFINITE}(0x7fc00000u); }`,
    `  let differ = ((aw ^ bw) & 0x80000000u) != 0u;`,
    `  let zero = bitcast<f32>(bw & 0x80000000u);`,
    `  if (ua == 0u) { return zero; }`,
    `  if (ub == 0x7f800000u) { return select(a, b, differ); }`,
    `  if (ua < ub) { return select(a, a + b, differ); }`,
    `  let r = ${divmod}(ua, ub).x;`,
    `  if (r == 0u) { return zero; }`,
    `  let mb = select((ub & 0x7fffffu) | 0x800000u, ub, ub < 0x800000u);`,
    `  return bitcast<f32>(${pack}(select(r, mb - r, differ), max(ub >> 23u, 1u)) | (bw & 0x80000000u));`,
    `}`,
  ].join("\n");
}

/**
 * NumPy's float `floor_divide` on one `f32` lane (`npy_floor_divide` → `npy_divmod`), exactly:
 * - NaN in, NaN out; `b = ±0` gives `a / b` (±Inf with the quotient's sign, NaN for `0 // 0`);
 *   `±Inf // b` is NaN (NumPy's `fmod(Inf, b)` is NaN);
 * - the exact integer quotient `q = ⌊|a| / |b|⌋` and remainder from {@link divmodBits}; below
 *   2^21 NumPy's answer *is* the floored quotient (`q`, or `−(q + 1)` for a non-zero remainder
 *   and opposite signs; a zero is `copysign(0, a / b)`): NumPy's `(a − mod) / b` rounds twice
 *   (relative 2^-23, under 1/4 there), its `div − 1` at most 1/8 more, and its snap to the nearest
 *   integer removes both; `b = ±Inf` is this case (`q = 0`: `-3 // Inf = -1`);
 * - from 2^21 on, NumPy's own steps in `f32`: `x = a − mod` (WGSL's `-` is correctly rounded and
 *   `mod` is built from integers, so nothing folds it; subnormal only for `|b| < 2^-147`, where a
 *   device that flushes subnormals may differ), `div = x / b` correctly rounded ({@link divRound}),
 *   `div − 1` for a remainder of the other sign, then `floor(dv)` plus 1 when `div − floor(dv) >
 *   0.5` (exact, `|div| ≥ 2^20`), ±Inf kept: `1e30 // 3 = 3.3333334e29`.
 */
function floorDivF32Helper(fn: string): string {
  const [divmod, pack, divRound] = [helperName("divmodBits", F32), helperName("packMag", F32), helperName("divRound", F32)];
  return [
    `fn ${fn}(a: f32, b: f32) -> f32 {`,
    `  let aw = bitcast<u32>(a);`,
    `  let bw = bitcast<u32>(b);`,
    `  let ua = aw & 0x7fffffffu;`,
    `  let ub = bw & 0x7fffffffu;`,
    `  let sg = (aw ^ bw) & 0x80000000u;`,
    `  let qnan = ${NONFINITE}(0x7fc00000u);`,
    `  if ((ua > 0x7f800000u) | (ub > 0x7f800000u)) { return qnan; }`,
    `  if (ub == 0u) { return select(bitcast<f32>(sg | 0x7f800000u), qnan, ua == 0u); }`,
    `  if (ua == 0x7f800000u) { return qnan; }`,
    `  var r = ua;`,
    `  var q = 0u;`,
    `  if (ua >= ub) {`,
    `    let dm = ${divmod}(ua, ub);`,
    `    r = dm.x;`,
    `    q = dm.y;`,
    `  }`,
    `  let below = (r != 0u) & (sg != 0u);`,
    `  if (q < 0x200000u) {`,
    `    let n = q + select(0u, 1u, below);`,
    `    return bitcast<f32>(select(bitcast<u32>(f32(n)), 0u, n == 0u) | sg);`,
    `  }`,
    `  let fm = bitcast<f32>(${pack}(r, max(ub >> 23u, 1u)) | (aw & 0x80000000u));`,
    `  var dv = ${divRound}(a - fm, b);`,
    `  if (below) { dv = dv - 1.0; }`,
    `  if ((bitcast<u32>(dv) & 0x7fffffffu) == 0x7f800000u) { return dv; }`,
    `  let fd = floor(dv);`,
    `  return select(fd, fd + 1.0, dv - fd > 0.5);`,
    `}`,
  ].join("\n");
}

/** Each helper's WGSL, given its function name and value type. */
const HELPERS: Record<HelperName, (fn: string, ty: string, t: ValueType) => string> = {
  /**
   * Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), odd-extended through `sign`; exactly ±1 beyond
   * |x| = 6 (so ±Inf needs no `exp(-Inf)`).
   */
  erf: (fn, ty) =>
    [
      `fn ${fn}(x: ${ty}) -> ${ty} {`,
      `  let a = abs(x);`,
      `  let t = 1.0 / (1.0 + 0.3275911 * a);`,
      `  let p = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t;`,
      `  return sign(x) * select(1.0 - p * exp(-a * a), ${ty}(1.0), a > ${ty}(6.0));`,
      `}`,
    ].join("\n"),
  /**
   * `gelu(x) = x·Φ(x)` as `x·(1 − h)` for `x ≥ 0` and `x·h` for `x < 0`, `h = erfc(|x|/√2)/2`: no
   * `1 + erf` that cancels in the negative tail (`1 + erf` kept ~6e-8 of absolute error, 0.5% of
   * `gelu(-4.7)`). `erfc` is Numerical Recipes' Chebyshev fit (`erfcc`, relative error < 1.2e-7 for
   * every argument; A&S 7.1.26's relative error grows to 0.7% at 5). `h` underflows to 0 below about
   * `-14`, so `gelu` is `-0` there and NaN at `-Inf` (`-Inf · 0`), as the oracle's `x·0`.
   */
  gelu: (fn, ty) =>
    [
      `fn ${fn}(x: ${ty}) -> ${ty} {`,
      `  let z = abs(x) * ${ty}(${Math.SQRT1_2});`,
      `  let t = 1.0 / (1.0 + 0.5 * z);`,
      `  let q = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));`,
      `  let h = 0.5 * t * exp(q - z * z);`,
      `  return x * select(1.0 - h, h, x < ${ty}(0.0));`,
      `}`,
    ].join("\n"),
  /**
   * `pow` with C99 Annex F's special cases (NumPy's): `pow(x, ±0) = 1` and `pow(1, y) = 1` for
   * every x, y (NaN included), `pow(-1, ±Inf) = 1`, signed zeros and infinities as IEEE says, a
   * negative base with a non-integer exponent is NaN; the rest is `exp2(y·log2|x|)` with the sign
   * of an odd integer exponent.
   */
  pow: (fn, ty, t) => {
    const [isNan, isInf, isZero, signBit] = (["isNan", "isInf", "isZero", "signBit"] as const).map((h) => helperName(h, t));
    const [one, zero, inf, nan] = [c("1.0", t), c("0.0", t), special("0x7f800000", t), special("0x7fc00000", t)];
    return [
      `fn ${fn}(x: ${ty}, y: ${ty}) -> ${ty} {`,
      `  let ax = abs(x);`,
      `  let yInt = (floor(y) == y) & !${isInf}(y);`,
      `  let odd = yInt & (abs(y - 2.0 * floor(y * 0.5)) == ${one});`,
      // |x|^y for finite non-zero |x| and finite y; the special magnitudes below.
      `  var m = exp2(y * log2(ax));`,
      `  m = select(m, select(${zero}, ${inf}, y < ${zero}), ${isZero}(x));`,
      `  m = select(m, select(${zero}, ${inf}, y > ${zero}), ${isInf}(x));`,
      `  m = select(m, select(${zero}, ${inf}, (ax > ${one}) == (y > ${zero})), ${isInf}(y) & !${isZero}(x) & !${isInf}(x));`,
      `  m = select(m, ${one}, ${isInf}(y) & (ax == ${one}));`,
      // The sign: negative (or -0) base with an odd integer exponent; a negative finite base
      // with a non-integer finite exponent is NaN.
      `  var r = select(m, -m, ${signBit}(x) & odd);`,
      `  r = select(r, ${nan}, ${signBit}(x) & !${isZero}(x) & !${isInf}(x) & !yInt & !${isInf}(y));`,
      `  r = select(r, ${nan}, ${isNan}(x) | ${isNan}(y));`,
      `  return select(r, ${one}, ${isZero}(y) | (${bitsOf("x", t)} == ${u("0x3f800000", t)}));`,
      `}`,
    ].join("\n");
  },
  /** ±Inf on the bits: exponent all ones, mantissa zero. */
  isInf: (fn, ty, t) => fn1(fn, ty, [`return (${bitsOf("x", t)} & ${u("0x7fffffff", t)}) == ${u("0x7f800000", t)};`], boolOf(t)),
  /** ±0 on the bits. */
  isZero: (fn, ty, t) => fn1(fn, ty, [`return (${bitsOf("x", t)} & ${u("0x7fffffff", t)}) == ${u("0", t)};`], boolOf(t)),
  /** The sign bit (true for negatives, -0 and -Inf). */
  signBit: (fn, ty, t) => fn1(fn, ty, [`return (${bitsOf("x", t)} & ${u("0x80000000", t)}) != ${u("0", t)};`], boolOf(t)),
  /** `exp`, with `exp(-Inf) = 0`, `exp(+Inf) = +Inf`, `exp(NaN) = NaN`. */
  exp: (fn, ty, t) =>
    fn1(fn, ty, [
      `let b = ${bitsOf("x", t)};`,
      `return select(select(exp(x), ${c("0.0", t)}, b == ${u("0xff800000", t)}), x, ${helperName("isNan", t)}(x) | (b == ${u("0x7f800000", t)}));`,
    ]),
  /** `log`: NaN below 0, `-Inf` at ±0, `+Inf` at `+Inf`, NaN for NaN. */
  log: (fn, ty, t) =>
    fn1(fn, ty, [
      `let r = select(log(x), ${special("0xff800000", t)}, ${helperName("isZero", t)}(x));`,
      `let posInf = ${bitsOf("x", t)} == ${u("0x7f800000", t)};`,
      `return select(select(r, ${special("0x7fc00000", t)}, ${helperName("signBit", t)}(x) & !${helperName("isZero", t)}(x)), x, ${helperName("isNan", t)}(x) | posInf);`,
    ]),
  /**
   * `log2` with `log`'s special values, and exact on powers of two (NumPy's `log2(8) = 3`): WGSL's
   * `log2` is only within 3 ULP, so a positive power of two (mantissa zero; for a subnormal, one
   * mantissa bit) takes its exponent from the bits. Computed in `f32` (an `f16` is widened).
   */
  log2: (fn, ty, t) => {
    const f: ValueType = { dtype: "f32", width: t.width };
    const i = intOf("i32", t);
    const wide = asF32("x", t);
    const e = `((${bitsOf("x", t)} >> ${u("23", t)}) & ${u("0xff", t)})`;
    const m = `(${bitsOf("x", t)} & ${u("0x7fffff", t)})`;
    const exact = `select(${wgslType(f)}(${i}(${e}) - ${i}(127i)), ${wgslType(f)}(${i}(firstLeadingBit(${m})) - ${i}(149i)), ${e} == ${u("0", t)})`;
    const power = `(${bitsOf("x", t)} < ${u("0x7f800000", t)}) & (${bitsOf("x", t)} != ${u("0", t)}) & (countOneBits(select(${m}, ${m} | ${u("0x800000", t)}, ${e} != ${u("0", t)})) == ${u("1", t)})`;
    const value = `select(log2(${wide}), ${exact}, ${power})`;
    return fn1(fn, ty, [
      `let v = ${t.dtype === "f32" ? value : `${ty}(${value})`};`,
      `let r = select(v, ${special("0xff800000", t)}, ${helperName("isZero", t)}(x));`,
      `let posInf = ${bitsOf("x", t)} == ${u("0x7f800000", t)};`,
      `return select(select(r, ${special("0x7fc00000", t)}, ${helperName("signBit", t)}(x) & !${helperName("isZero", t)}(x)), x, ${helperName("isNan", t)}(x) | posInf);`,
    ]);
  },
  /** `log(1 + x)` accurate near 0: NaN below -1, `-Inf` at -1, `+Inf` at `+Inf`. */
  log1p: (fn, ty, t) =>
    fn1(fn, ty, [
      `let v = ${c("1.0", t)} + x;`,
      `let r = select(log(v) * x / (v - ${c("1.0", t)}), x, v == ${c("1.0", t)});`,
      `let posInf = ${bitsOf("x", t)} == ${u("0x7f800000", t)};`,
      `let low = select(${special("0x7fc00000", t)}, ${special("0xff800000", t)}, x == ${c("-1.0", t)});`,
      `return select(select(r, low, x <= ${c("-1.0", t)}), x, ${helperName("isNan", t)}(x) | posInf);`,
    ]),
  /** `exp(x) - 1` accurate near 0: `+Inf` at `+Inf`, `-1` at `-Inf`. */
  expm1: (fn, ty, t) =>
    fn1(fn, ty, [
      `let b = ${bitsOf("x", t)};`,
      `let e = exp(x);`,
      `let r = select(select((e - ${c("1.0", t)}) * x / log(e), e - ${c("1.0", t)}, abs(x) > ${c("0.5", t)}), x + ${c("0.5", t)} * x * x, abs(x) < ${c("1e-5", t)});`,
      `return select(select(r, ${c("-1.0", t)}, b == ${u("0xff800000", t)}), x, ${helperName("isNan", t)}(x) | (b == ${u("0x7f800000", t)}));`,
    ]),
  /** `sqrt`: NaN below 0, ±0 and `+Inf` unchanged. */
  sqrt: (fn, ty, t) =>
    fn1(fn, ty, [
      `let keep = ${helperName("isZero", t)}(x) | ${helperName("isNan", t)}(x) | (${bitsOf("x", t)} == ${u("0x7f800000", t)});`,
      `return select(select(sqrt(x), ${special("0x7fc00000", t)}, ${helperName("signBit", t)}(x)), x, keep);`,
    ]),
  /** `1 / sqrt(x)`: NaN below 0, `±Inf` at ±0, `+0` at `+Inf`. */
  rsqrt: (fn, ty, t) =>
    fn1(fn, ty, [
      `let z = ${helperName("isZero", t)}(x);`,
      `var r = select(inverseSqrt(x), select(${special("0x7f800000", t)}, ${special("0xff800000", t)}, ${helperName("signBit", t)}(x)), z);`,
      `r = select(r, ${c("0.0", t)}, ${bitsOf("x", t)} == ${u("0x7f800000", t)});`,
      `return select(r, ${special("0x7fc00000", t)}, ${helperName("isNan", t)}(x) | (${helperName("signBit", t)}(x) & !z));`,
    ]),
  sin: (fn, ty, t) => trigOf("sin", fn, ty, t),
  cos: (fn, ty, t) => trigOf("cos", fn, ty, t),
  tan: (fn, ty, t) => trigOf("tan", fn, ty, t),
  /**
   * `vec2(r, q)` for a finite `f32` x: `x = (4n + q)·π/2 + r` with `|r| ≤ π/4` (to rounding), `q`
   * in 0..3 (as a float). Below `|x| = 8192` Cody–Waite: `k = round(x·2/π)` and
   * `r = ((x - k·C1) - k·C2) - k·C3`, where `C1` (8 bits) and `C2` (11 bits) are short enough that
   * `k·C1`, `k·C2` are exact for `k < 2^13`. Above it Payne–Hanek: the 24-bit mantissa times 192
   * bits of 2/π (`TWO_OVER_PI`), in 32-bit words with `mulWide`, and the 64 bits around the
   * binary point of `x·2/π` give `q` (the 2 bits above it) and the fraction, rounded to nearest
   * (a signed fraction in [-½, ½)). Within 1 ulp of the f64 reduction for every finite f32 (checked
   * against `Math.sin` of 400 000 random f32 over all exponents). NaN and ±Inf give garbage (the
   * callers select NaN); the branch is uniform in practice (large arguments are rare).
   */
  trigReduce: (fn) =>
    [
      `fn ${fn}(x: f32) -> vec2<f32> {`,
      `  let k = round(x * 0.6366197723675814);`,
      `  var r = ((x - k * 1.5703125) - k * 4.837512969970703e-4) - k * 7.549790126404332e-8;`,
      `  var q = u32(i32(k)) & 3u;`,
      `  let ax = abs(x);`,
      `  if (ax > 8192.0) {`,
      `    let b = bitcast<u32>(ax);`,
      `    let e = i32(b >> 23u) - 127;`,
      `    let ia = ((b & 0x7fffffu) | 0x800000u) << 8u;`,
      // The product ia · (2/π · 2^192), 224 bits, least significant word first.
      `    var w: array<u32, 7>;`,
      `    var carry = 0u;`,
      ...[...TWO_OVER_PI].reverse().flatMap((word, i) => [
        `    let m${i} = ${helperName("mulWide", { dtype: "u32", width: 1 })}(ia, ${word}u);`,
        `    w[${i}] = m${i}.x + carry;`,
        `    carry = m${i}.y + select(0u, 1u, w[${i}] < m${i}.x);`,
      ]),
      `    w[6] = carry;`,
      // x = ia · 2^(e-31), so the product's unit bit is 223 - e; the 64-bit window starts 62 below.
      `    let l = u32(161 - e);`,
      `    let wi = l >> 5u;`,
      `    let sh = l & 31u;`,
      `    let back = (32u - sh) & 31u;`,
      `    let mid = select((w[wi] >> sh) | (w[wi + 1u] << back), w[wi], sh == 0u);`,
      `    let hi = select((w[wi + 1u] >> sh) | (w[wi + 2u] << back), w[wi + 1u], sh == 0u);`,
      `    let fhi = (hi << 2u) | (mid >> 30u);`,
      `    let flo = mid << 2u;`,
      `    let sf = f32(bitcast<i32>(fhi)) * 2.3283064365386963e-10 + f32(flo) * 5.421010862427522e-20;`,
      `    let qa = ((hi >> 30u) + (fhi >> 31u)) & 3u;`,
      `    let neg = x < 0.0;`,
      `    r = select(1.0, -1.0, neg) * (sf * 1.5707963267948966);`,
      `    q = select(qa, (4u - qa) & 3u, neg);`,
      `  }`,
      `  return vec2<f32>(r, f32(q));`,
      `}`,
    ].join("\n"),
  /** `vec2(lo, hi)` of the 64-bit product of two `u32` (WGSL has no wide multiply), in 16-bit halves. */
  mulWide: (fn) =>
    [
      `fn ${fn}(a: u32, b: u32) -> vec2<u32> {`,
      `  let a0 = a & 0xffffu;`,
      `  let a1 = a >> 16u;`,
      `  let b0 = b & 0xffffu;`,
      `  let b1 = b >> 16u;`,
      `  let p00 = a0 * b0;`,
      `  let p01 = a0 * b1;`,
      `  let p10 = a1 * b0;`,
      `  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);`,
      `  return vec2<u32>((mid << 16u) | (p00 & 0xffffu), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));`,
      `}`,
    ].join("\n"),
  /**
   * Floored float modulo, NumPy's `remainder` (`npy_remainder` → `npy_divmod`) exactly: the
   * divisor's sign; NaN when either is NaN, `a` is ±Inf or `b` is ±0; a zero result has the
   * divisor's sign (`-7 mod 7 = +0`, `7 mod -7 = -0`, `0 mod -Inf = -0`); `a mod ±Inf` is `a` when
   * `a` has `b`'s sign, else `b`. Each lane through {@link modF32Helper} (`f16` in `f32`, as NumPy).
   */
  fmod: (fn, ty, t) => perLane(fn, ty, t, helperName("modF32", F32)),
  /**
   * NumPy's float `floor_divide` (`npy_floor_divide`) exactly, each lane through
   * {@link floorDivF32Helper} (`f16` computes in `f32` and rounds once, as NumPy's `npy_half`).
   */
  floorDiv: (fn, ty, t) => perLane(fn, ty, t, helperName("floorDivF32", F32)),
  modF32: (fn) => modF32Helper(fn),
  floorDivF32: (fn) => floorDivF32Helper(fn),
  /**
   * `vec2(r, q)` for finite magnitudes' bits `ua ≥ ub > 0` (`|a| = ma·2^(ea−150)`, `|b| =
   * mb·2^(eb−150)`, `ea = 1` for subnormals): `r = ma·2^(ea−eb) mod mb`, so the exact `fmod(|a|,
   * |b|)` is `r·2^(eb−150)` ({@link packMag}), and `q` the integer quotient `⌊|a| / |b|⌋`, exact
   * below 2^21 and at least 2^21 otherwise (capped so it never wraps). Long division on the
   * integer mantissas, 8 bits a step (`r < 2^24`, so `r << 8` fits 32 bits): at most 32 steps for
   * the widest exponent gap (2^127 mod 2^-149), none when the exponents are equal. Integer
   * operations only, so no compiler can reassociate it and a subnormal operand is exact.
   */
  divmodBits: (fn) =>
    [
      `fn ${fn}(ua: u32, ub: u32) -> vec2<u32> {`,
      `  let ma = select((ua & 0x7fffffu) | 0x800000u, ua, ua < 0x800000u);`,
      `  let mb = select((ub & 0x7fffffu) | 0x800000u, ub, ub < 0x800000u);`,
      `  var d = max(ua >> 23u, 1u) - max(ub >> 23u, 1u);`,
      `  var q = ma / mb;`,
      `  var r = ma % mb;`,
      `  loop {`,
      `    if (d == 0u) { break; }`,
      `    let s = min(d, 8u);`,
      `    let w = r << s;`,
      `    q = (min(q, 0x200000u) << s) + w / mb;`,
      `    r = w % mb;`,
      `    d = d - s;`,
      `  }`,
      `  return vec2<u32>(r, q);`,
      `}`,
    ].join("\n"),
  /**
   * The bits of the magnitude `r·2^(e−150)` for `r < 2^24` and a biased exponent `e ≥ 1` (a
   * remainder on `b`'s grid): normalised with `countLeadingZeros`, subnormal when it falls below
   * 2^-126. Exact (such a value is always representable), built from integers.
   */
  packMag: (fn) =>
    [
      `fn ${fn}(r: u32, e: u32) -> u32 {`,
      `  if (r == 0u) { return 0u; }`,
      `  let sh = countLeadingZeros(r) - 8u;`,
      `  if (e > sh) { return ((e - sh) << 23u) | ((r << sh) & 0x7fffffu); }`,
      `  return r << (e - 1u);`,
      `}`,
    ].join("\n"),
  /**
   * `x / b` correctly rounded (to nearest, ties to even), for finite non-zero `x`, `b` whose
   * quotient is at least 2^-126 in magnitude (it overflows to ±Inf): the mantissas normalised to
   * `[2^23, 2^24)`, 26 quotient bits by integer long division (a bit, three 8-bit steps, a bit)
   * and the remainder as the sticky bit. WGSL's `/` is only within 2.5 ULP and `ieeeQuotient`'s
   * correction within 2^-12 ULP of a tie; `floorDiv` needs the exact rounding NumPy's `(a − mod) / b`
   * gets, for quotients of any size.
   */
  divRound: (fn) => {
    const unpack = (v: string, u: string): string[] => [
      `  let ${v}s = countLeadingZeros(${u}) - 8u;`,
      `  let ${v}m = select((${u} & 0x7fffffu) | 0x800000u, ${u} << ${v}s, ${u} < 0x800000u);`,
      `  let ${v}e = select(i32(${u} >> 23u), 1 - i32(${v}s), ${u} < 0x800000u);`,
    ];
    return [
      `fn ${fn}(x: f32, b: f32) -> f32 {`,
      `  let xw = bitcast<u32>(x);`,
      `  let bw = bitcast<u32>(b);`,
      `  let sg = (xw ^ bw) & 0x80000000u;`,
      `  let ux = xw & 0x7fffffffu;`,
      `  let ub = bw & 0x7fffffffu;`,
      ...unpack("x", "ux"),
      ...unpack("b", "ub"),
      `  var r = xm;`,
      `  var q = 0u;`,
      `  if (r >= bm) { q = 1u; r = r - bm; }`,
      `  for (var i = 0u; i < 3u; i = i + 1u) {`,
      `    r = r << 8u;`,
      `    q = (q << 8u) | (r / bm);`,
      `    r = r % bm;`,
      `  }`,
      `  r = r << 1u;`,
      `  let carry = r >= bm;`,
      `  q = (q << 1u) | select(0u, 1u, carry);`,
      `  r = select(r, r - bm, carry);`,
      // q = ⌊2^25·xm / bm⌋ in [2^24, 2^26): keep 24 bits, round on the rest and the sticky r.
      `  let sh = select(1u, 2u, q >= 0x2000000u);`,
      `  let hf = 1u << (sh - 1u);`,
      `  let rest = q & ((1u << sh) - 1u);`,
      `  var m = q >> sh;`,
      `  m = m + select(0u, 1u, (rest > hf) | ((rest == hf) & ((r != 0u) | ((m & 1u) != 0u))));`,
      `  var e = xe - be + i32(sh) + 125;`,
      `  if (m == 0x1000000u) { m = 0x800000u; e = e + 1; }`,
      `  if (e >= 255) { return bitcast<f32>(sg | 0x7f800000u); }`,
      `  return bitcast<f32>(sg | (u32(e) << 23u) | (m & 0x7fffffu));`,
      `}`,
    ].join("\n");
  },
  /** `atan2(y, x)` with IEEE's (JS's) answers for every signed zero and infinity; NaN for NaN. */
  atan2: (fn, ty, t) => {
    const [isNan, isInf, isZero, signBit] = (["isNan", "isInf", "isZero", "signBit"] as const).map((h) => helperName(h, t));
    const pi = (k: string): string => `select(${c(k, t)}, -${c(k, t)}, ${signBit}(y))`;
    const yZero = signedZeroOf("y", t);
    return [
      `fn ${fn}(y: ${ty}, x: ${ty}) -> ${ty} {`,
      `  let xInf = ${isInf}(x);`,
      `  let yInf = ${isInf}(y);`,
      `  let towardPi = select(${yZero}, ${pi("3.141592653589793")}, ${signBit}(x));`,
      `  var r = atan2(y, x);`,
      `  r = select(r, ${pi("1.5707963267948966")}, ${isZero}(x) | (yInf & !xInf));`,
      `  r = select(r, towardPi, xInf & !yInf);`,
      `  r = select(r, select(${pi("0.7853981633974483")}, ${pi("2.356194490192345")}, ${signBit}(x)), xInf & yInf);`,
      `  r = select(r, towardPi, ${isZero}(y));`,
      `  return select(r, ${special("0x7fc00000", t)}, ${isNan}(x) | ${isNan}(y));`,
      `}`,
    ].join("\n");
  },
  /** `x - x` without a foldable expression: `+0` for finite `x`, NaN for ±Inf and NaN. */
  subSelf: (fn, ty, t) =>
    fn1(fn, ty, [`return select(${c("0.0", t)}, ${special("0x7fc00000", t)}, ${helperName("isNan", t)}(x) | ${helperName("isInf", t)}(x));`]),
  /** `x / x` without a foldable expression: `1`, NaN for ±0, ±Inf and NaN. */
  divSelf: (fn, ty, t) =>
    fn1(fn, ty, [
      `return select(${c("1.0", t)}, ${special("0x7fc00000", t)}, ${helperName("isNan", t)}(x) | ${helperName("isInf", t)}(x) | ${helperName("isZero", t)}(x));`,
    ]),
  /** Floored `x mod x` without a foldable expression: `±0` (the sign of `x`), NaN for ±0, ±Inf and NaN. */
  modSelf: (fn, ty, t) =>
    fn1(fn, ty, [
      `return select(${signedZeroOf("x", t)}, ${special("0x7fc00000", t)}, ${helperName("isNan", t)}(x) | ${helperName("isInf", t)}(x) | ${helperName("isZero", t)}(x));`,
    ]),
  /** Float → `i32` like the oracle: truncate toward zero, saturate at ±2^31, NaN → 0. */
  toI32: (fn, ty, t) => {
    const f: ValueType = { dtype: "f32", width: t.width };
    const i = intOf("i32", t);
    return fn1(
      fn,
      ty,
      [
        `let f = ${asF32("x", t)};`,
        `let r = select(select(${i}(f), ${i}(i32(-2147483647 - 1)), f <= ${c("-2147483648.0", f)}), ${i}(2147483647i), f >= ${c("2147483648.0", f)});`,
        `return select(r, ${i}(0i), ${helperName("isNan", t)}(x));`,
      ],
      i,
    );
  },
  /** Float → `u32` like the oracle: truncate toward zero, 0 below 0, saturate at 2^32, NaN → 0. */
  toU32: (fn, ty, t) => {
    const f: ValueType = { dtype: "f32", width: t.width };
    const v = intOf("u32", t);
    return fn1(
      fn,
      ty,
      [
        `let f = ${asF32("x", t)};`,
        `let r = select(select(${v}(f), ${v}(0u), f <= ${c("0.0", f)}), ${v}(4294967295u), f >= ${c("4294967296.0", f)});`,
        `return select(r, ${v}(0u), ${helperName("isNan", t)}(x));`,
      ],
      v,
    );
  },
  /** NaN test on the bits: exponent all ones and a non-zero mantissa. */
  isNan: (fn, ty, t) => {
    const u = bitsType(t);
    const bool = t.width === 1 ? "bool" : "vec4<bool>";
    return [
      `fn ${fn}(x: ${ty}) -> ${bool} {`,
      `  return (bitcast<${u}>(${asF32("x", t)}) & ${u}(0x7fffffffu)) > ${u}(0x7f800000u);`,
      `}`,
    ].join("\n");
  },
  /** Neither operand is NaN: an ordered comparison may be true. */
  ordered: (fn, ty, t) =>
    [
      `fn ${fn}(a: ${ty}, b: ${ty}) -> ${t.width === 1 ? "bool" : "vec4<bool>"} {`,
      `  return !(${helperName("isNan", t)}(a) | ${helperName("isNan", t)}(b));`,
      `}`,
    ].join("\n"),
  /** `y` (a function of `x`), or `x` itself when `x` is NaN. */
  keepNan: (fn, ty, t) =>
    [`fn ${fn}(x: ${ty}, y: ${ty}) -> ${ty} {`, `  return select(y, x, ${helperName("isNan", t)}(x));`, `}`].join("\n"),
  /** IEEE 754-2019 `maximum(a, b)`: a NaN operand is the result, `+0` is above `-0` (JS `Math.max`). */
  maxNan: (fn, ty, t) => pickOf(fn, ty, t, "max"),
  /** IEEE 754-2019 `minimum(a, b)`: a NaN operand is the result, `-0` is below `+0` (JS `Math.min`). */
  minNan: (fn, ty, t) => pickOf(fn, ty, t, "min"),
  /** `x`, or the bound it compares beyond (`lo` below, `hi` above); NaN stays NaN, `±0` keeps its sign. */
  clampNan: (fn, ty, t) =>
    [
      `fn ${fn}(x: ${ty}, lo: ${ty}, hi: ${ty}) -> ${ty} {`,
      `  let r = select(clamp(x, lo, hi), x, ${helperName("isNan", t)}(x));`,
      // A zero x that clamps to a zero compared equal to a bound: x itself, with its sign.
      `  return select(r, x, ${helperName("isZero", t)}(x) & ${helperName("isZero", t)}(r));`,
      `}`,
    ].join("\n"),
  /** `a + b`, NaN when an operand is NaN or the operands are opposite infinities (decided on the bits). */
  addIeee: (fn, ty, t) => ieeeOperator(fn, ty, t, "+"),
  /** `a - b`, NaN when an operand is NaN or the operands are equal infinities (decided on the bits). */
  subIeee: (fn, ty, t) => ieeeOperator(fn, ty, t, "-"),
  /** `a * b`, NaN when an operand is NaN or one is 0 and the other ±Inf (decided on the bits). */
  mulIeee: (fn, ty, t) => ieeeOperator(fn, ty, t, "*"),
  /** `a / b`, NaN when an operand is NaN, or for `0 / 0` and `±Inf / ±Inf` (decided on the bits). */
  divIeee: (fn, ty, t) => (t.dtype === "f32" ? ieeeQuotient(fn, ty, t) : ieeeOperator(fn, ty, t, "/")),
  /** `x`, but `+0` for either zero (decided and built on the bits). */
  plusZero: (fn, ty, t) =>
    fn1(fn, ty, [`return ${fromBits(`select(${bitsOf("x", t)}, ${u("0", t)}, ${helperName("isZero", t)}(x))`, t)};`]),
  /** `sign(x)`, but `±0` and NaN are `x` itself (WGSL's `sign` may drop both). */
  signOf: (fn, ty, t) => fn1(fn, ty, [`return select(sign(x), x, ${helperName("isZero", t)}(x) | ${helperName("isNan", t)}(x));`]),
  /** PCG hash (wrapping u32), the generator shared with the CPU backend. */
  pcg: (fn) =>
    [
      `fn ${fn}(x: u32) -> u32 {`,
      `  let state = x * 747796405u + 2891336453u;`,
      `  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;`,
      `  return (word >> 22u) ^ word;`,
      `}`,
    ].join("\n"),
  /** Uniform in [0, 1) from the 24 high bits of `pcg(counter ^ key)`. */
  random: (fn) =>
    [
      `fn ${fn}(counter: u32, key: u32) -> f32 {`,
      `  return f32(weft_pcg_u32(counter ^ key) >> 8u) / 16777216.0;`,
      `}`,
    ].join("\n"),
};
