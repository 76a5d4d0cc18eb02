/**
 * Host-side inputs and references: every library gets the *same* values (never zeros, which hide
 * unwritten outputs), and every result is checked against a float64 reference before its time
 * counts.
 *
 * @module
 */

/** `n` uniform f32 values in [`lo`, `hi`) from a fixed seed (mulberry32), identical across runs. */
export function hostData(n: number, seed = 1, lo = -2, hi = 2): Float32Array {
  const out = new Float32Array(n);
  let a = seed >>> 0;
  for (let i = 0; i < n; i++) {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = (((t ^ (t >>> 14)) >>> 0) / 4294967296) * (hi - lo) + lo;
  }
  return out;
}

/**
 * The 8-op chain every library runs, in float64: `relu(exp(-(sin(x*0.5+1))^2) + x)`.
 * Ops: mul, add, sin, square, neg, exp, add, relu.
 */
export function chainRef(x: number): number {
  const s = Math.sin(x * 0.5 + 1);
  return Math.max(Math.exp(-(s * s)) + x, 0);
}

/** The chain's op count, for the table. */
export const CHAIN_OPS = 8;

/** Indices to check in an array of `n`: the first and last 256 and 4096 spread between. */
export function checkIndices(n: number): number[] {
  const out = new Set<number>();
  for (let i = 0; i < Math.min(n, 256); i++) out.add(i);
  for (let i = Math.max(0, n - 256); i < n; i++) out.add(i);
  const step = Math.max(1, Math.floor(n / 4096));
  for (let i = 0; i < n; i += step) out.add(i);
  return [...out];
}

/**
 * Compares `actual` with `expected(i)` at `indices` by the relative error
 * ‖out − ref‖ / ‖ref‖ over those indices; NaN never passes. Returns `"ok (…)"` or `"WRONG: …"`.
 */
export function compare(actual: ArrayLike<number>, expected: (i: number) => number, indices: readonly number[], tolerance = 1e-4): string {
  let num = 0;
  let den = 0;
  let worst = -1;
  let worstErr = 0;
  for (const i of indices) {
    const a = actual[i];
    const e = expected(i);
    if (a === undefined || Number.isNaN(a)) return `WRONG: element ${i} is ${String(a)}, expected ${e}`;
    const d = a - e;
    num += d * d;
    den += e * e;
    if (Math.abs(d) > worstErr) {
      worstErr = Math.abs(d);
      worst = i;
    }
  }
  const rel = Math.sqrt(num) / Math.max(Math.sqrt(den), 1e-30);
  if (!(rel <= tolerance)) return `WRONG: rel err ${rel.toExponential(1)} (element ${worst}: ${String(actual[worst])} vs ${expected(worst)})`;
  return `ok (rel err ${rel.toExponential(1)})`;
}

/** True when a check string says the result is right. */
export function checkPassed(check: string | undefined): boolean {
  return check !== undefined && check.startsWith("ok");
}

/** The float64 sum of `x`. */
export function sumRef(x: Float32Array): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i] as number;
  return s;
}

/** Element (`i`, `j`) of `a @ b` for row-major `n × n` matrices, in float64. */
export function matmulRef(a: Float32Array, b: Float32Array, n: number, i: number, j: number): number {
  let s = 0;
  for (let k = 0; k < n; k++) s += (a[i * n + k] as number) * (b[k * n + j] as number);
  return s;
}

/** `2^k` written as `2^k` when `n` is a power of two, else the number. */
export function sizeText(n: number, suffix = "f32"): string {
  const k = Math.log2(n);
  return `${Number.isInteger(k) ? `2^${k}` : String(n)} ${suffix}`;
}
