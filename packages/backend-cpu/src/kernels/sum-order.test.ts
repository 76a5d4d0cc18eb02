/**
 * `sumF64` adds in the order that defines Weft's f32 `sum` (lane `j mod 8` per block of
 * `SUM_BLOCK`, lanes combined pairwise, blocks in order): the unrolled loops must give the same
 * bits as that order written plainly, at every length around the unroll and block boundaries.
 */
import { describe, expect, it } from "vitest";
import { SUM_BLOCK, sumF64 } from "./tensor-kernels.js";

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
