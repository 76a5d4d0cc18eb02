import { describe, expect, it } from "vitest";
import { ERF_LIMIT, ERF_STEPS, ERF_TERMS, GELU_TAIL, erf, erfSeries, gelu, roundHalfEven } from "./special.js";
import { pcg, randomValue, uniformPair } from "./random.js";
import { binaryFn, castFn, convert, unaryFn } from "./scalar-ops.js";

/** The spec's PCG written independently in BigInt arithmetic (mod 2³²), to cross-check `pcg`. */
function pcgBig(x: number): number {
  const m = 0xffffffffn;
  const state = (BigInt(x >>> 0) * 747796405n + 2891336453n) & m;
  const shift = (state >> 28n) + 4n;
  const word = (((state >> shift) ^ state) * 277803737n) & m;
  return Number(((word >> 22n) ^ word) & m);
}

describe("special functions", () => {
  it("erf's literals are its table's constants (it spells them out for bundled code)", () => {
    // A change to one of these must change erf's literals too; the next test then holds the two
    // together (a wrong piece width or center moves erf far beyond its 5e-14).
    expect([ERF_STEPS, ERF_TERMS, ERF_LIMIT]).toEqual([64, 6, 6]);
  });

  it("erf matches tabulated values to 1e-13", () => {
    const table: [number, number][] = [
      [0, 0], [0.1, 0.1124629160182849], [0.5, 0.5204998778130465], [1, 0.8427007929497149],
      [1.5, 0.9661051464753108], [2, 0.9953222650189527], [2.5, 0.999593047982555],
      [3, 0.9999779095030014], [4, 0.9999999845827421], [-1, -0.8427007929497149],
    ];
    for (const [x, value] of table) expect(Math.abs(erf(x) - value), `erf(${x})`).toBeLessThan(1e-13);
    expect(erf(Infinity)).toBe(1);
    expect(erf(-Infinity)).toBe(-1);
    expect(erf(NaN)).toBeNaN();
  });

  it("erf's Taylor pieces agree with the defining series everywhere (f64 and every f32 rounding)", () => {
    let seed = 7;
    const next = (): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    const f32 = new Float32Array(2);
    // Both sides of every piece boundary (c ± 1/64), the centers, and random points out to ±7.
    const xs: number[] = [];
    for (let i = 0; i <= 192; i++) for (const d of [0, 1 / 64 - 1e-12, -1 / 64 + 1e-12, 1 / 64, 1e-3]) xs.push(i / 32 + d, -(i / 32 + d));
    for (let k = 0; k < 5000; k++) xs.push((next() - 0.5) * 14);
    for (const x of xs) {
      expect(Math.abs(erf(x) - erfSeries(x)), `erf(${x})`).toBeLessThan(5e-14);
      f32[0] = erf(Math.fround(x));
      f32[1] = erfSeries(Math.fround(x));
      expect(f32[0], `f32 erf(${Math.fround(x)})`).toBe(f32[1]);
    }
    // Tiny arguments keep their relative precision; zeros keep their sign; ±6 and beyond are ±1.
    for (const x of [1e-300, 5e-324, 1e-20, 1e-8, -1e-5]) expect(Math.abs(erf(x) / erfSeries(x) - 1), `erf(${x})`).toBeLessThan(1e-15);
    expect(Object.is(erf(-0), -0)).toBe(true);
    expect(Object.is(erf(0), 0)).toBe(true);
    expect([erf(6), erf(-6), erf(1e300)]).toEqual([1, -1, 1]);
  });

  it("gelu is the exact erf form", () => {
    expect(gelu(1)).toBeCloseTo(0.8413447460685429, 14);
    expect(gelu(-1)).toBeCloseTo(-0.15865525393145707, 14);
    expect(gelu(0)).toBe(0);
  });

  it("gelu's branch-free form is the product form 0.5·x·(1 + erf(x/√2)), special values included", () => {
    const product = (x: number): number => 0.5 * x * (1 + erf(x / Math.SQRT2));
    let worst = 0;
    for (let k = -4000; k <= 4000; k++) {
      const x = k / 400; // [-10, 10], every table piece on both sides and past the ±1 limit
      if (x < GELU_TAIL) continue; // the erfc form: the next test
      const want = product(x);
      // Equal up to the f64 rounding of the two forms (absolute, since the product form itself
      // cancels for x ≪ 0), and so equal as f32 except within ~1e-16 of an f32 tie.
      worst = Math.max(worst, Math.abs(gelu(x) - want) / Math.max(1, Math.abs(x)));
    }
    expect(worst).toBeLessThan(1e-15);
    expect(Object.is(gelu(-0), -0), "gelu(-0) is -0").toBe(true);
    expect(Object.is(gelu(0), 0)).toBe(true);
    expect(gelu(NaN)).toBeNaN();
    expect(gelu(Infinity)).toBe(Infinity);
    expect(gelu(-Infinity), "-∞ · 0, as the product form and the WebGPU kernel give").toBeNaN();
    expect(product(-Infinity)).toBeNaN();
    expect(gelu(3e38)).toBe(3e38);
    expect(gelu(-3e38)).toBe(-0);
  });

  it("gelu keeps its relative precision in the negative tail (erfc form below GELU_TAIL), where 1 + erf cancels", () => {
    expect(GELU_TAIL).toBe(-2.5 * Math.SQRT2); // the literal gelu and wasm/gemm.ts spell out
    // x · erfc(-x/√2) / 2 from mpmath at 40 digits.
    const table: [number, number][] = [
      [-3.6, -0.00057279092456712197], [-4, -0.00012668496733247969], [-4.7, -6.1137950334112257e-6], [-5, -1.4332578593959696e-6],
      [-6, -5.9195258702261888e-9], [-7, -8.958687807200845e-12], [-8, -4.9767684594174273e-15], [-8.5, -8.0576045988728206e-17],
      [-10, -7.6198530241605261e-23], [-12, -2.1317785344932148e-32], [-14, -1.091095154686992e-43], [-20, -5.5072482372124674e-88],
      [-30, -1.4720141781444561e-196], [-37, -2.1184613523340934e-298],
    ];
    for (const [x, want] of table) expect(Math.abs(gelu(x) / want - 1), `gelu(${x})`).toBeLessThan(1e-12); // exp(-a²) of a rounded a² (~1e-13 at x = -37)
    // Across the switch the two forms agree to the table form's precision.
    const x = GELU_TAIL;
    const justBelow = x - Math.abs(x) * Number.EPSILON; // a few ulps below
    expect(Math.abs(gelu(justBelow) / gelu(x) - 1)).toBeLessThan(1e-12);
    expect(Object.is(gelu(-40), -0), "an underflowed tail is -0 (x · 0)").toBe(true);
  });

  it("round breaks ties to even and passes non-finite values through", () => {
    expect([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6, -2.6].map(roundHalfEven)).toEqual([0, 2, 2, -0, -2, -2, 2, 3, -3]);
    expect(roundHalfEven(Infinity)).toBe(Infinity);
    expect(roundHalfEven(NaN)).toBeNaN();
  });
});

describe("random numbers", () => {
  it("pcg equals the specification evaluated in exact integer arithmetic", () => {
    for (const x of [0, 1, 2, 12345, 0x7fffffff, 0x80000000, 0xffffffff, 747796405]) {
      expect(pcg(x), `pcg(${x})`).toBe(pcgBig(x));
    }
  });

  it("uniform variates lie in [0, 1) and depend on the key and the index", () => {
    const key = pcg(42);
    const seen = new Set<number>();
    for (let i = 0; i < 1000; i++) {
      const [u1, u2] = uniformPair(key, i);
      expect(u1 >= 0 && u1 < 1 && u2 >= 0 && u2 < 1, "24-bit fractions are in [0, 1)").toBe(true);
      seen.add(u1);
    }
    expect(seen.size, "distinct indices give (almost always) distinct values").toBeGreaterThan(990);
    expect(uniformPair(pcg(43), 0)).not.toEqual(uniformPair(key, 0));
  });

  it("uniform maps to [a, b) and normal has roughly the requested moments", () => {
    const key = pcg(7);
    let sum = 0;
    let sq = 0;
    const n = 20000;
    for (let i = 0; i < n; i++) {
      const u = randomValue("uniform", key, i, -2, 3);
      expect(u >= -2 && u < 3).toBe(true);
      const v = randomValue("normal", key, i, 1, 2);
      sum += v;
      sq += (v - 1) ** 2;
    }
    expect(Math.abs(sum / n - 1), "mean of normal(1, 2)").toBeLessThan(0.1);
    expect(Math.abs(Math.sqrt(sq / n) - 2), "std of normal(1, 2)").toBeLessThan(0.1);
  });
});

describe("scalar semantics", () => {
  it("integer div truncates toward zero and mod takes the divisor's sign", () => {
    const div = binaryFn("div", "i32");
    const mod = binaryFn("mod", "i32");
    expect([div(7, 2), div(-7, 2), div(7, -2), div(-7, -2)]).toEqual([3, -3, -3, 3]);
    expect([mod(7, 3), mod(-7, 3), mod(7, -3), mod(-7, -3)]).toEqual([1, 2, -2, -1]);
    expect([div(5, 0), div(-5, 0), div(0, 0)], "division by zero is 0 (NumPy's //; docs/semantics.md)").toEqual([0, 0, 0]);
    expect(mod(5, 0), "mod by zero is 0").toBe(0);
    expect(div(-2147483648, -1), "INT_MIN / -1 wraps").toBe(-2147483648);
  });

  it("float pow follows IEEE / C99 (NumPy), not JavaScript, at 1 and -1", () => {
    const pow = binaryFn("pow", "f32");
    expect([pow(1, Number.NaN), pow(1, Infinity), pow(1, -Infinity), pow(-1, Infinity), pow(-1, -Infinity)], "pow(1, y) = 1 and pow(-1, ±Inf) = 1").toEqual([1, 1, 1, 1, 1]);
    expect(pow(Number.NaN, 0), "pow(x, 0) = 1 even for NaN").toBe(1);
    expect(pow(-1, Number.NaN), "otherwise NaN propagates").toBeNaN();
    expect([pow(0, -1), pow(-0, -1), pow(-8, 1 / 3)], "signed zeros and a negative base").toEqual([Infinity, -Infinity, Number.NaN]);
  });

  it("float mod is floored and NaN-producing for a zero divisor", () => {
    const mod = binaryFn("mod", "f32");
    expect([mod(7.5, 2), mod(-7.5, 2), mod(7.5, -2)]).toEqual([1.5, 0.5, -0.5]);
    expect(mod(1, 0)).toBeNaN();
    expect([mod(5, Infinity), mod(-5, Infinity), mod(5, -Infinity), mod(0, Infinity)], "a mod ±Inf: a with the divisor's sign, else the divisor (NumPy)").toEqual([5, Infinity, -Infinity, 0]);
    expect(mod(Infinity, 2), "an infinite dividend is NaN").toBeNaN();
  });

  it("integer arithmetic wraps like i32 and u32", () => {
    expect(binaryFn("add", "i32")(2147483647, 1)).toBe(-2147483648);
    expect(binaryFn("mul", "i32")(65536, 65536)).toBe(0);
    expect(binaryFn("sub", "u32")(0, 1)).toBe(4294967295);
    expect(binaryFn("pow", "i32")(3, 4)).toBe(81);
    expect(unaryFn("neg", "u32")(1)).toBe(4294967295);
    expect(unaryFn("abs", "i32")(-2147483648), "abs(INT_MIN) wraps to INT_MIN").toBe(-2147483648);
  });

  it("casts truncate toward zero, saturate floats, wrap integers and test != 0 for bool", () => {
    const f2i = castFn("f32", "i32");
    expect([f2i(2.7), f2i(-2.7), f2i(NaN), f2i(1e10), f2i(-1e10)]).toEqual([2, -2, 0, 2147483647, -2147483648]);
    expect(castFn("i32", "u32")(-1), "integer casts wrap").toBe(4294967295);
    expect([castFn("f32", "bool")(0), castFn("f32", "bool")(-0.5), castFn("f32", "bool")(NaN)]).toEqual([0, 1, 1]);
    expect(castFn("bool", "f32")(1)).toBe(1);
    expect(convert(0.1, "f32"), "f32 values are rounded to f32").toBe(Math.fround(0.1));
  });

  it("max and min propagate NaN; sign(0) is 0; sigmoid and silu use the plain forms", () => {
    expect(binaryFn("maximum", "f32")(NaN, 1)).toBeNaN();
    expect(binaryFn("minimum", "f32")(1, NaN)).toBeNaN();
    expect(unaryFn("sign", "f32")(0)).toBe(0);
    expect(unaryFn("sigmoid", "f32")(0)).toBe(0.5);
    expect(unaryFn("silu", "f32")(2)).toBeCloseTo(2 / (1 + Math.exp(-2)), 15);
  });
});
