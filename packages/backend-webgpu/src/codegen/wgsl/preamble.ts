import type { WgslBuilder } from "./builder.js";
import { wgslType, type ValueType } from "./types.js";

/**
 * The helper functions codegen can call; each is emitted only when an expression uses it.
 *
 * @remarks
 * **NaN-safe helpers.** WGSL's `max`/`min`/`clamp` return the non-NaN operand, and an
 * implementation may assume NaN never occurs (SwiftShader folds `x != x` to false and gives
 * `exp(NaN) = Inf`). The CPU oracle follows IEEE/JS, so every float op that could lose a NaN goes
 * through these, which test NaN on the bits (an integer test no optimiser can fold away):
 * - `isNan(x)`: `(bitcast<u32>(x) & 0x7fffffff) > 0x7f800000` (component-wise for `vec4`);
 * - `ordered(a, b)`: neither operand is NaN (compares are `ordered & (a op b)`; `ne` is its negation or'ed);
 * - `keepNan(x, y)`: `y`, unless `x` is NaN, then `x` (wraps a transcendental `y = f(x)`);
 * - `maxNan(a, b)` / `minNan(a, b)`: like `max`/`min`, but a NaN operand wins (JS `Math.max`);
 * - `clampNan(x, lo, hi)`: `clamp`, but NaN stays NaN.
 * Reduction combiners use `maxNan`/`minNan` the same way: `helpers.use("maxNan", t)` returns the
 * function's name for the accumulator type `t`.
 */
export type HelperName = "erf" | "pow" | "pcg" | "random" | "isNan" | "ordered" | "keepNan" | "maxNan" | "minNan" | "clampNan";

/** The helpers each helper calls (requested with it, for the same value type unless noted). */
const DEPENDS: Partial<Record<HelperName, readonly HelperName[]>> = {
  pow: ["isNan"],
  ordered: ["isNan"],
  keepNan: ["isNan"],
  maxNan: ["isNan"],
  minNan: ["isNan"],
  clampNan: ["isNan"],
};

/**
 * The helpers a kernel needs, collected while its expressions are emitted (STYLE.md §2.12: emit only
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
      if (name === "random") this.use("pcg", { dtype: "u32", width: 1 });
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
/** Each helper's WGSL, given its function name and value type. */
const HELPERS: Record<HelperName, (fn: string, ty: string, t: ValueType) => string> = {
  /** Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), odd-extended through `sign`. */
  erf: (fn, ty) =>
    [
      `fn ${fn}(x: ${ty}) -> ${ty} {`,
      `  let a = abs(x);`,
      `  let t = 1.0 / (1.0 + 0.3275911 * a);`,
      `  let p = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t;`,
      `  return sign(x) * (1.0 - p * exp(-a * a));`,
      `}`,
    ].join("\n"),
  /** `pow` with the CPU's definition for negative bases and integer exponents (WGSL's is NaN). */
  pow: (fn, ty, t) =>
    [
      `fn ${fn}(x: ${ty}, y: ${ty}) -> ${ty} {`,
      // WGSL's pow is undefined at x = 0; JS gives 0 for y > 0 and +Inf for y < 0.
      `  let m = select(pow(abs(x), y), select(${ty}(0.0), ${ty}(weft_nonfinite(0x7f800000u)), y < ${ty}(0.0)), x == ${ty}(0.0));`,
      `  let yInt = floor(y) == y;`,
      `  let odd = yInt & (abs(y - 2.0 * floor(y * 0.5)) == ${ty}(1.0));`,
      `  let neg = select(m, select(m, -m, odd), yInt);`,
      `  let nan = ${ty}(weft_nonfinite(0x7fc00000u));`,
      `  let r = select(m, select(nan, neg, yInt), x < ${ty}(0.0));`,
      // JS: pow(x, 0) = 1 for every x (NaN included); otherwise a NaN operand gives NaN.
      `  let anyNan = ${helperName("isNan", t)}(x) | ${helperName("isNan", t)}(y);`,
      `  return select(select(r, select(x, y, ${helperName("isNan", t)}(y)), anyNan), ${ty}(1.0), y == ${ty}(0.0));`,
      `}`,
    ].join("\n"),
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
  /** `max(a, b)`, but a NaN operand is the result (JS `Math.max`). */
  maxNan: (fn, ty, t) =>
    [
      `fn ${fn}(a: ${ty}, b: ${ty}) -> ${ty} {`,
      `  return select(select(max(a, b), b, ${helperName("isNan", t)}(b)), a, ${helperName("isNan", t)}(a));`,
      `}`,
    ].join("\n"),
  /** `min(a, b)`, but a NaN operand is the result (JS `Math.min`). */
  minNan: (fn, ty, t) =>
    [
      `fn ${fn}(a: ${ty}, b: ${ty}) -> ${ty} {`,
      `  return select(select(min(a, b), b, ${helperName("isNan", t)}(b)), a, ${helperName("isNan", t)}(a));`,
      `}`,
    ].join("\n"),
  /** `clamp(x, lo, hi)`, but NaN stays NaN. */
  clampNan: (fn, ty, t) =>
    [`fn ${fn}(x: ${ty}, lo: ${ty}, hi: ${ty}) -> ${ty} {`, `  return select(clamp(x, lo, hi), x, ${helperName("isNan", t)}(x));`, `}`].join("\n"),
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
