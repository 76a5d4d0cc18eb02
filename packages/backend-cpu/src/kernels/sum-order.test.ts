/**
 * `sumF64` and the WebAssembly `sumWasm` add in the order that defines Weft's f32 `sum` (lane
 * `j mod 8` per block of `SUM_BLOCK`, lanes combined pairwise, blocks in order;
 * docs/semantics.md, "Summation order"): the unrolled loops must give the same bits as that order
 * written plainly, at every length around the unroll, SIMD and block boundaries. The WebAssembly
 * `max`/`min` must agree with the JavaScript fold on special values (NaN, ±Inf, ±0).
 */
import { describe, expect, it } from "vitest";
import { sumF64 } from "./tensor-kernels.js";
import { SUM_BLOCK, WASM_REDUCE_MIN, extremeWasm, sumWasm, wasmReduceSupport } from "./reduce-wasm.js";

/** The documented order, written plainly. */
function reference(src: Float32Array, base: number, count: number, step: number): number {
  let total = 0;
  for (let block = 0; block < count; block += SUM_BLOCK) {
    const lanes = [0, 0, 0, 0, 0, 0, 0, 0];
    for (let j = block; j < Math.min(count, block + SUM_BLOCK); j++) lanes[(j - block) % 8]! += src[base + j * step]!;
    const [l0, l1, l2, l3, l4, l5, l6, l7] = lanes as [number, number, number, number, number, number, number, number];
    total += l0 + l1 + (l2 + l3) + (l4 + l5 + (l6 + l7));
  }
  return total;
}

/** Values of mixed magnitude, so a different order gives different bits. */
function values(n: number): Float32Array {
  const out = new Float32Array(n);
  let a = 12345;
  for (let i = 0; i < n; i++) {
    a = (Math.imul(a, 1103515245) + 12345) >>> 0;
    out[i] = ((a / 2 ** 32) - 0.5) * 10 ** ((a >>> 7) % 9);
  }
  return out;
}

describe("sumF64", () => {
  const lengths = [0, 1, 7, 8, 9, 15, 16, 17, SUM_BLOCK - 1, SUM_BLOCK, SUM_BLOCK + 1, 2 * SUM_BLOCK + 13];
  it.each([1, 3])("adds in the documented order (step %i)", (step) => {
    const src = values(5 + step * (2 * SUM_BLOCK + 20));
    for (const n of lengths) for (const base of [0, 5]) expect(sumF64(src, base, n, step), `n ${n}, base ${base}`).toBe(reference(src, base, n, step));
  });
});

describe("sumWasm (WebAssembly SIMD)", () => {
  it("compiles here (Node 20 has WebAssembly SIMD)", () => {
    expect(wasmReduceSupport()).toEqual({ available: true, reason: "module compiled, f64x2 lanes" });
  });

  it("adds in the documented order, bit for bit", () => {
    const src = values(3 * SUM_BLOCK + 40);
    const lengths = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, WASM_REDUCE_MIN, WASM_REDUCE_MIN + 3, SUM_BLOCK - 1, SUM_BLOCK, SUM_BLOCK + 1, 2 * SUM_BLOCK + 13, 3 * SUM_BLOCK + 7];
    for (const n of lengths) for (const base of [0, 1, 5]) expect(sumWasm(src, base, n), `n ${n}, base ${base}`).toBe(reference(src, base, n, 1));
    expect(sumWasm(src, 0, 0)).toBe(0);
  });

  it("propagates NaN and infinities like the JavaScript sum", () => {
    const n = SUM_BLOCK + 21;
    for (const [at, value] of [[0, Number.NaN], [n - 1, Number.POSITIVE_INFINITY], [7, Number.NEGATIVE_INFINITY], [3, -0]] as const) {
      const src = values(n);
      src[at] = value;
      expect(sumWasm(src, 0, n), `${value} at ${at}`).toBe(sumF64(src, 0, n, 1));
    }
    const both = values(n);
    both[5] = Number.POSITIVE_INFINITY;
    both[n - 2] = Number.NEGATIVE_INFINITY;
    expect(sumWasm(both, 0, n)).toBeNaN();
    expect(Object.is(sumWasm(new Float32Array(300).fill(-0), 0, 300), sumF64(new Float32Array(300).fill(-0), 0, 300, 1))).toBe(true);
  });
});

/** The JavaScript fold of `maximum`/`minimum` (NaN wins, +0 above -0), written plainly. */
function extremeReference(src: Float32Array, base: number, count: number, isMax: boolean): number {
  let acc = src[base]!;
  for (let j = 1; j < count; j++) {
    const v = src[base + j]!;
    if (acc !== acc) return acc;
    if (v !== v || (isMax ? v > acc : v < acc)) acc = v;
    else if (v === 0 && acc === 0) acc = isMax ? Math.max(acc, v) : Math.min(acc, v);
  }
  return acc;
}

describe("extremeWasm (WebAssembly SIMD max/min)", () => {
  const lengths = [1, 2, 3, 4, 5, 15, 16, 17, 63, 64, 65, SUM_BLOCK - 1, SUM_BLOCK + 1, 2 * SUM_BLOCK + 9];
  it.each([true, false])("agrees with the fold (max %s) at every length", (isMax) => {
    const src = values(2 * SUM_BLOCK + 20);
    for (const n of lengths) for (const base of [0, 3]) expect(extremeWasm(src, base, n, isMax), `n ${n}, base ${base}`).toBe(extremeReference(src, base, n, isMax));
  });

  it.each([true, false])("NaN wins, ±Inf and signed zeros as the fold (max %s)", (isMax) => {
    const n = SUM_BLOCK + 37;
    for (const at of [0, 1, 17, SUM_BLOCK - 1, SUM_BLOCK, n - 1]) {
      const src = values(n);
      src[at] = Number.NaN;
      expect(extremeWasm(src, 0, n, isMax), `NaN at ${at}`).toBeNaN();
      src[at] = isMax ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
      expect(extremeWasm(src, 0, n, isMax), `Inf at ${at}`).toBe(src[at]);
    }
    for (const n2 of [1, 5, 300, SUM_BLOCK + 3]) {
      for (const first of [0, -0]) {
        const zeros = new Float32Array(n2).fill(first);
        zeros[n2 - 1] = first === 0 ? -0 : 0;
        expect(Object.is(extremeWasm(zeros, 0, n2, isMax), extremeReference(zeros, 0, n2, isMax)), `zeros n ${n2} first ${Object.is(first, -0) ? "-0" : "+0"}`).toBe(true);
      }
    }
  });
});
