import type { WgslBuilder } from "./builder.js";
import { wgslType, type ValueType } from "./types.js";

/** The helper functions codegen can call; each is emitted only when an expression uses it. */
export type HelperName = "erf" | "pow" | "pcg" | "random";

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
  pow: (fn, ty) =>
    [
      `fn ${fn}(x: ${ty}, y: ${ty}) -> ${ty} {`,
      `  let m = pow(abs(x), y);`,
      `  let yInt = floor(y) == y;`,
      `  let odd = yInt & (abs(y - 2.0 * floor(y * 0.5)) == ${ty}(1.0));`,
      `  let neg = select(m, select(m, -m, odd), yInt);`,
      `  let nan = ${ty}(weft_nonfinite(0x7fc00000u));`,
      `  return select(select(m, select(nan, neg, yInt), x < ${ty}(0.0)), ${ty}(1.0), y == ${ty}(0.0));`,
      `}`,
    ].join("\n"),
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
