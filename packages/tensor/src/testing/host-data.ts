/**
 * Deterministic host inputs and the comparison rule of the conformance kit.
 *
 * @module
 */
import type { DType } from "@weft/fusion";
import type { DataArray } from "../tensor/tensor.js";

/** What values an input holds. */
export type InputKind =
  /** Standard normal values scaled by 2. */
  | "normal"
  /** Uniform on `[0.1, 4)`: the domain of log, sqrt, rsqrt, pow bases, divisors. */
  | "positive"
  /** Uniform on `[-1, 1)`: tan without poles, prod without overflow. */
  | "unit"
  /** Integers in `[-5, 5]` (stored as the input dtype): ties for compares and argmax. */
  | "int"
  /** Integers in `[0, max)`: indices for gather. */
  | "index"
  /** Booleans with probability 1/2. */
  | "bool"
  /** Normal values with NaN, +Inf, -Inf, 0 and -0 mixed in. */
  | "special";

/** One input of a conformance case, generated on the host and uploaded to both devices. */
export interface InputSpec {
  readonly shape: readonly number[];
  readonly dtype?: DType;
  readonly kind?: InputKind;
  /** Upper bound (exclusive) for `index` inputs. */
  readonly max?: number;
}

/** How close the device under test must be to the oracle: `|a - b| ≤ atol + rtol·|b|`. */
export interface Tolerance {
  readonly rtol: number;
  readonly atol: number;
}

/** Exact agreement (integers, bools, layout ops, compares, IEEE-exact arithmetic). */
export const EXACT: Tolerance = { rtol: 0, atol: 0 };

/** Float add/sub/mul chains: different operation orders inside a fused kernel may round differently. */
export const ELEMENTWISE: Tolerance = { rtol: 1e-6, atol: 1e-6 };
/** exp, log, sqrt, div, pow, tanh, …: WGSL allows several ULP of error for these builtins. */
export const TRANSCENDENTAL: Tolerance = { rtol: 1e-4, atol: 1e-5 };
/** sin/cos/tan/atan2: WGSL's absolute error bound is 2^-11 on [-π, π]. */
export const TRIG: Tolerance = { rtol: 1e-4, atol: 2e-3 };
/** erf/gelu: the implementations use different approximations. */
export const APPROX: Tolerance = { rtol: 1e-3, atol: 1e-3 };

/** randn: WGSL's absolute `cos` error (2^-11) times the largest Box–Muller radius (≈ 5.7); see the module doc. */
export const RANDN: Tolerance = { rtol: 1e-4, atol: 3e-3 };

/** The tolerance of a sum-like reduction over `k` elements. */
export function reductionTolerance(k: number): Tolerance {
  return { rtol: 1e-4, atol: 1e-6 * k + 1e-5 };
}

/** A small deterministic PRNG (mulberry32): the same seed gives the same inputs on every run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A stable 32-bit hash of a case name, used as its input seed. */
export function hashName(name: string): number {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** Generates the flat host values of `spec` from `next`. */
export function generate(spec: InputSpec, next: () => number): number[] {
  let n = 1;
  for (const d of spec.shape) n *= d;
  const kind = spec.kind ?? (spec.dtype === "bool" ? "bool" : spec.dtype === "i32" || spec.dtype === "u32" ? "int" : "normal");
  const normal = (): number => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
  const out = new Array<number>(n);
  const specials = [Number.NaN, Infinity, -Infinity, 0, -0];
  for (let i = 0; i < n; i++) {
    switch (kind) {
      case "normal":
        out[i] = 2 * normal();
        break;
      case "positive":
        out[i] = 0.1 + 3.9 * next();
        break;
      case "unit":
        out[i] = 2 * next() - 1;
        break;
      case "int":
        out[i] = spec.dtype === "u32" ? Math.floor(next() * 11) : Math.floor(next() * 11) - 5;
        break;
      case "index":
        out[i] = Math.floor(next() * (spec.max ?? 1));
        break;
      case "bool":
        out[i] = next() < 0.5 ? 1 : 0;
        break;
      case "special":
        out[i] = next() < 0.3 ? (specials[Math.floor(next() * specials.length)] ?? 0) : 2 * normal();
        break;
      default:
        kind satisfies never;
    }
  }
  return out;
}

/**
 * Compares `actual` (device under test) with `expected` (oracle). NaN must match NaN; infinities
 * must match exactly; other values within `tolerance`. Returns a description of the first
 * mismatch, or `undefined` when they agree.
 */
export function compareArrays(actual: DataArray, expected: DataArray, tolerance: Tolerance): string | undefined {
  if (actual.constructor !== expected.constructor) {
    return `array type ${actual.constructor.name} differs from the oracle's ${expected.constructor.name}`;
  }
  if (actual.length !== expected.length) return `length ${actual.length} differs from the oracle's ${expected.length}`;
  let worst = -1;
  let worstExcess = 0;
  let mismatches = 0;
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i] ?? 0;
    const b = expected[i] ?? 0;
    if (Number.isNaN(b) || Number.isNaN(a)) {
      if (Number.isNaN(a) !== Number.isNaN(b)) {
        mismatches++;
        if (worst < 0) worst = i;
      }
      continue;
    }
    if (!Number.isFinite(b) || !Number.isFinite(a)) {
      if (a !== b) {
        mismatches++;
        if (worst < 0) worst = i;
      }
      continue;
    }
    const excess = Math.abs(a - b) - (tolerance.atol + tolerance.rtol * Math.abs(b));
    if (excess > 0) {
      mismatches++;
      if (worst < 0 || excess > worstExcess) {
        worst = i;
        worstExcess = excess;
      }
    }
  }
  if (mismatches === 0) return undefined;
  return `${mismatches} of ${actual.length} elements differ beyond rtol ${tolerance.rtol}, atol ${tolerance.atol}; worst at flat index ${worst}: got ${String(actual[worst])}, oracle ${String(expected[worst])}`;
}
