/**
 * Weft's counter-based random numbers. The CPU and WebGPU backends implement exactly this, so the
 * same seed gives the same values on every device; all arithmetic is wrapping u32.
 *
 * @module
 */
import type { RandomDistribution } from "@weft/fusion";

/** The PCG hash (one round of PCG-RXS-M-XS 32/32) of a u32. */
export function pcg(x: number): number {
  const state = (Math.imul(x >>> 0, 747796405) + 2891336453) >>> 0;
  const word = Math.imul(((state >>> ((state >>> 28) + 4)) ^ state) >>> 0, 277803737) >>> 0;
  return ((word >>> 22) ^ word) >>> 0;
}

/** The two uniform variates in `[0, 1)` (24-bit resolution) of element `i` under the key `pcg(seed)`. */
export function uniformPair(key: number, i: number): [number, number] {
  const u1 = (pcg((Math.imul(2, i) ^ key) >>> 0) >>> 8) / 16777216;
  const u2 = (pcg(((Math.imul(2, i) + 1) ^ key) >>> 0) >>> 8) / 16777216;
  return [u1, u2];
}

/**
 * Element `i` (row-major index) of a `random` tensor, in f64 (the caller converts to its dtype).
 * `uniform`: `a + (b - a) · u1`; `normal`: Box–Muller, `a + b · √(-2 ln max(u1, 1e-7)) · cos(2π u2)`.
 */
export function randomValue(distribution: RandomDistribution, key: number, i: number, a: number, b: number): number {
  const [u1, u2] = uniformPair(key, i);
  switch (distribution) {
    case "uniform":
      return a + (b - a) * u1;
    case "normal":
      return a + b * Math.sqrt(-2 * Math.log(Math.max(u1, 1e-7))) * Math.cos(6.283185307179586 * u2);
    default:
      return distribution satisfies never;
  }
}
