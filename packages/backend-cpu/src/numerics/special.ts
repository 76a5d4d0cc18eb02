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
  const erfc = erfcLarge(ax);
  return x > 0 ? 1 - erfc : erfc - 1;
}

/**
 * `erfc(a)` for `a ≥ 2.5` in f64, with its relative precision: the continued fraction
 * `exp(-a²)/√π · 1/(a + (1/2)/(a + 1/(a + (3/2)/(a + …))))` evaluated bottom-up over 80 terms
 * (within 1 ulp of mpmath's `erfc` from 2.5 to 20). `+∞` gives `+0`. Slow (80 divisions): for
 * {@link erfSeries} and the negative tail of {@link gelu}, which ordinary data rarely reaches.
 */
export function erfcLarge(a: number): number {
  let t = a;
  for (let k = 80; k >= 1; k--) t = a + k / 2 / t;
  return (Math.exp(-a * a) * ONE_OVER_SQRT_PI) / t;
}

/**
 * Below this `x` (`|x|/√2 ≥ 2.5`), {@link gelu} is `0.5·x·erfc(|x|/√2)` from {@link erfcLarge}:
 * `1 + erf` there keeps erf's absolute error, which is a growing share of a value that falls like
 * `e^(-x²/2)` (8% at `x = -7`, and `-0` from `-8.5` where the value is still `-8e-17`). The
 * WebAssembly linear-layer epilogue (`wasm/gemm.ts`) uses the same literal.
 */
export const GELU_TAIL = -3.5355339059327378;

/** Centers of {@link erf}'s Taylor pieces per unit of `x` (pieces are `1/ERF_STEPS` wide). */
export const ERF_STEPS = 64;
/**
 * Taylor coefficients per piece: with `|h| ≤ 1/128` the first term left out (the 6th power) is
 * below 1.2e-14 (`2/√π · |e^(-c²) H₅(c)| / 6! · 128^-6` for every `c`), within erf's 1e-13.
 * (32 pieces per unit needed 8 terms for the same bound: two more multiply-adds per element.)
 */
export const ERF_TERMS = 6;
/** Beyond this `|x|`, `erf(x)` rounds to ±1 in f64 (`1 - erf(6) ≈ 2e-17`). */
export const ERF_LIMIT = 6;

/**
 * Taylor coefficients of `erf` around `c = i / ERF_STEPS` for `i = 0 … ERF_LIMIT·ERF_STEPS`:
 * `erf(c + h) = erf(c) + 2/√π · e^(-c²) · Σ_{n≥1} (-1)^(n-1) H_{n-1}(c) hⁿ / n!` (`H` the
 * physicists' Hermite polynomials: the n-th derivative of `e^(-x²)` is `(-1)ⁿ Hₙ(x) e^(-x²)`).
 * Built once at module load (385 × 6 f64, ~18 KB). Exported for the WebAssembly linear-layer
 * epilogue (`wasm/gemm.ts` `epilogueRows`), which evaluates the same pieces from a copy; nothing
 * writes it after load.
 */
export const ERF_TABLE: Float64Array = (() => {
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
 * `erf(a)` for `a ≥ 0` (NaN gives NaN): the table evaluation {@link erf} and {@link gelu} share.
 *
 * @remarks
 * **Method.** Piecewise Taylor polynomials: `a` is rounded to the nearest `c = i/64` (`i ≤ 384`),
 * and `erf(a)` is the 6-term Taylor polynomial around `c` in `h = a - c` (`|h| ≤ 1/128`),
 * evaluated by Horner's rule; the coefficients come from `erfSeries` and the Hermite recurrence
 * at module load. Around `c = 0` the polynomial is the odd Maclaurin series, so tiny arguments
 * keep their relative precision. `a ≥ 6` gives 1.
 * **Why a closure over the table.** Generated kernels inline this function, and V8 then reads the
 * table once per element. From a function's own `const` it knows the array never changes; from a
 * module `const` — which bundlers (esbuild for the bench) turn into a `var` — it reloads and
 * re-checks it per load. Literals, not ERF_LIMIT / ERF_STEPS / ERF_TERMS, for the same reason
 * (a division instead of a multiplication). On the 2-core machine (2026-11-30) a 1,024-element
 * gelu loop took 11.5 µs reading a module `var` table with named steps, 8.3 µs with literals and
 * 7.9 µs with literals and this closure. The tests hold the literals equal to the constants.
 */
const erfNonNegative: (a: number) => number = ((table: Float64Array) =>
  function erfNonNegative(a: number): number {
    if (a >= 6) return 1;
    const i = (a * 64 + 0.5) | 0; // the nearest center (0 for NaN, whose h is NaN)
    const h = a - i * 0.015625; // i / 64, exactly
    const base = i * 6;
    let p = table[base + 5] as number;
    p = p * h + (table[base + 4] as number);
    p = p * h + (table[base + 3] as number);
    p = p * h + (table[base + 2] as number);
    p = p * h + (table[base + 1] as number);
    return p * h + (table[base] as number);
  })(ERF_TABLE);

/**
 * The error function in f64.
 *
 * @remarks
 * **Method.** `erf(-x) = -erf(x)` and the table evaluation of `erfNonNegative` above. `|x| ≥ 6`
 * gives ±1; NaN gives NaN; ±0 keeps its sign.
 * **Precision.** Absolute error below 1e-13 everywhere (the bound of `erfSeries`; the
 * truncation adds below 1.2e-14; the largest difference from `erfSeries` on [0, 6] in steps of
 * 1e-5 is 9.9e-15), checked against tabulated values and against `erfSeries` in the tests — far
 * below one f32 ulp, so every f32 result is the correctly rounded one up to that margin.
 * (Abramowitz–Stegun 7.1.26, the usual GPU form, has 1.5e-7.) Around 0 the polynomial is odd,
 * so tiny arguments keep their relative precision.
 * **Cost.** Five multiply-adds after one table lookup. On the 2-core machine (2026-11-30) a
 * 1,024-element gelu loop took 10.5 µs, against 12.9 µs for seven multiply-adds around `i/32`
 * (the previous table, the same bound), and ~100 ns per element for summing the series.
 */
export function erf(x: number): number {
  // `return x`, not `return NaN`: the global `NaN` made V8 box every result of the inlined
  // function into a heap number (one allocation per element, 2× slower; 2026-11-30, Node 20).
  if (x !== x) return x;
  if (x === 0) return x; // ±0 keeps its sign
  const value = erfNonNegative(x < 0 ? -x : x);
  return x < 0 ? -value : value;
}

/**
 * The exact GELU, `0.5 · x · (1 + erf(x / √2))` (not the tanh approximation).
 *
 * @remarks
 * Evaluated as `0.5 · (x + |x| · erf(|x| / √2))` — the same value (`erf` is odd), without the
 * sign's branches around the table evaluation — and below `GELU_TAIL` as
 * `0.5 · x · erfc(|x| / √2)`, which keeps its relative precision in the negative tail. NaN gives
 * NaN; a zero result has `x`'s sign; `+∞` gives `+∞` and `-∞` NaN (`-∞ · 0`, as the product form
 * and the WebGPU kernel give). It is the
 * serving MLP's activation, so this is most of that model's elementwise time.
 */
export function gelu(x: number): number {
  if (x < -3.5355339059327378) return 0.5 * x * erfcLarge(x * -Math.SQRT1_2); // GELU_TAIL, a literal as in erfNonNegative
  const a = x < 0 ? -x : x;
  const r = 0.5 * (x + a * erfNonNegative(a * Math.SQRT1_2));
  // A zero takes `x`'s sign, as `x · 0` does in the product form (±0).
  return r !== 0 ? r : x * 0;
}

/** Rounds to the nearest integer, ties to even (`2.5 → 2`, `3.5 → 4`, `-2.5 → -2`, `-0.5 → -0`). ±∞ and NaN pass through. */
export function roundHalfEven(x: number): number {
  if (!Number.isFinite(x)) return x;
  const f = Math.floor(x);
  const diff = x - f;
  const r = diff < 0.5 ? f : diff > 0.5 ? f + 1 : f % 2 === 0 ? f : f + 1;
  return r === 0 && (x < 0 || Object.is(x, -0)) ? -0 : r; // keep the sign of zero, like IEEE roundEven
}
