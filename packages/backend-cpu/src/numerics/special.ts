/**
 * Special functions in f64 for the oracle: `erf`, `gelu`, round-half-to-even.
 *
 * @module
 */

const TWO_OVER_SQRT_PI = 1.1283791670955126;
const ONE_OVER_SQRT_PI = 0.5641895835477563;

/**
 * The error function in f64 by its defining series: the reference {@link erf}'s table is built
 * from (and tested against).
 *
 * @remarks
 * **Method.** `|x| < 2.5`: the Maclaurin series `2/√π Σ (-1)ⁿ x²ⁿ⁺¹ / (n! (2n+1))`, summed until
 * a term no longer changes the sum (cancellation costs at most ~e^6.25 ≈ 500× the f64 epsilon);
 * `|x| ≥ 2.5`: `1 - erfc(x)` with erfc's continued fraction evaluated bottom-up over 80 terms.
 * **Precision.** Absolute error below 1e-13 everywhere (checked against tabulated values in the
 * tests). Slow (up to ~80 divisions), so it runs only at module load and in tests.
 */
export function erfSeries(x: number): number {
  if (x !== x) return NaN;
  const ax = Math.abs(x);
  if (ax < 2.5) {
    const x2 = x * x;
    let term = x; // x^(2n+1) (-1)^n / n!
    let sum = x;
    for (let n = 1; n < 200; n++) {
      term *= -x2 / n;
      const next = sum + term / (2 * n + 1);
      if (next === sum) break;
      sum = next;
    }
    return TWO_OVER_SQRT_PI * sum;
  }
  if (ax > 6) return x > 0 ? 1 : -1;
  // erfc(ax) = exp(-ax²)/√π · 1/(ax + (1/2)/(ax + 1/(ax + (3/2)/(ax + …))))
  let t = ax;
  for (let k = 80; k >= 1; k--) t = ax + k / 2 / t;
  const erfc = (Math.exp(-ax * ax) * ONE_OVER_SQRT_PI) / t;
  return x > 0 ? 1 - erfc : erfc - 1;
}

/** Centers of {@link erf}'s Taylor pieces per unit of `x` (pieces are `1/ERF_STEPS` wide). */
const ERF_STEPS = 32;
/**
 * Taylor coefficients per piece: with `|h| ≤ 1/64` the first term left out (the 8th power) is
 * below 1e-16 (`|e^(-c²) H₇(c)| / 8! · 64^-8 < 1e-16` for every `c`).
 */
const ERF_TERMS = 8;
/** Beyond this `|x|`, `erf(x)` rounds to ±1 in f64 (`1 - erf(6) ≈ 2e-17`). */
const ERF_LIMIT = 6;

/**
 * Taylor coefficients of `erf` around `c = i / ERF_STEPS` for `i = 0 … ERF_LIMIT·ERF_STEPS`:
 * `erf(c + h) = erf(c) + 2/√π · e^(-c²) · Σ_{n≥1} (-1)^(n-1) H_{n-1}(c) hⁿ / n!` (`H` the
 * physicists' Hermite polynomials: the n-th derivative of `e^(-x²)` is `(-1)ⁿ Hₙ(x) e^(-x²)`).
 * Built once at module load (193 × 8 f64, ~12 KB).
 */
const ERF_TABLE: Float64Array = (() => {
  const pieces = ERF_LIMIT * ERF_STEPS + 1;
  const table = new Float64Array(pieces * ERF_TERMS);
  for (let i = 0; i < pieces; i++) {
    const c = i / ERF_STEPS;
    const scale = TWO_OVER_SQRT_PI * Math.exp(-c * c);
    table[i * ERF_TERMS] = erfSeries(c);
    let hPrev = 0; // H_{n-2}
    let hCur = 1; // H_{n-1}
    let factorial = 1;
    for (let n = 1; n < ERF_TERMS; n++) {
      factorial *= n;
      table[i * ERF_TERMS + n] = ((n % 2 === 1 ? 1 : -1) * scale * hCur) / factorial;
      // H_n = 2c·H_{n-1} - 2(n-1)·H_{n-2}.
      const next = 2 * c * hCur - 2 * (n - 1) * hPrev;
      hPrev = hCur;
      hCur = next;
    }
  }
  return table;
})();

/**
 * The error function in f64.
 *
 * @remarks
 * **Method.** Piecewise Taylor polynomials: `|x|` is rounded to the nearest `c = i/32`
 * (`i ≤ 192`), and `erf(|x|)` is the 8-term Taylor polynomial around `c` in `h = |x| - c`
 * (`|h| ≤ 1/64`), evaluated by Horner's rule; the coefficients come from `erfSeries` and the
 * Hermite recurrence at module load. Around `c = 0` the polynomial is the odd Maclaurin series,
 * so tiny arguments keep their relative precision. `|x| ≥ 6` gives ±1; NaN gives NaN.
 * **Precision.** Absolute error below 1e-13 everywhere (the bound of `erfSeries`; the
 * truncation adds below 1e-16), checked against tabulated values and against `erfSeries` in the
 * tests — far below one f32 ulp, so every f32 result is the correctly rounded one up to that
 * margin. (Abramowitz–Stegun 7.1.26, the usual GPU form, has 1.5e-7.)
 * **Cost.** Seven multiply-adds after one table lookup: ~9 ns per element on the 2-core machine
 * (2026-11-30), against ~13 ns for the earlier 13 terms around `i/16` (same bound) and ~100 ns
 * for summing the series per call. `gelu` is the serving MLP's activation, so this is most of
 * its elementwise time.
 */
export function erf(x: number): number {
  // `return x`, not `return NaN`: the global `NaN` made V8 box every result of the inlined
  // function into a heap number (one allocation per element, 2× slower; 2026-11-30, Node 20).
  if (x !== x) return x;
  if (x === 0) return x; // ±0 keeps its sign
  const ax = x < 0 ? -x : x;
  if (ax >= ERF_LIMIT) return x > 0 ? 1 : -1;
  const i = (ax * ERF_STEPS + 0.5) | 0; // the nearest center (ax < 6)
  const h = ax - i / ERF_STEPS;
  const base = i * ERF_TERMS;
  const t = ERF_TABLE;
  let p = t[base + 7] as number;
  p = p * h + (t[base + 6] as number);
  p = p * h + (t[base + 5] as number);
  p = p * h + (t[base + 4] as number);
  p = p * h + (t[base + 3] as number);
  p = p * h + (t[base + 2] as number);
  p = p * h + (t[base + 1] as number);
  const value = p * h + (t[base] as number);
  return x < 0 ? -value : value;
}

/** The exact GELU, `0.5 · x · (1 + erf(x / √2))` (not the tanh approximation). */
export function gelu(x: number): number {
  return 0.5 * x * (1 + erf(x / Math.SQRT2));
}

/** Rounds to the nearest integer, ties to even (`2.5 → 2`, `3.5 → 4`, `-2.5 → -2`, `-0.5 → -0`). ±∞ and NaN pass through. */
export function roundHalfEven(x: number): number {
  if (!Number.isFinite(x)) return x;
  const f = Math.floor(x);
  const diff = x - f;
  const r = diff < 0.5 ? f : diff > 0.5 ? f + 1 : f % 2 === 0 ? f : f + 1;
  return r === 0 && (x < 0 || Object.is(x, -0)) ? -0 : r; // keep the sign of zero, like IEEE roundEven
}
