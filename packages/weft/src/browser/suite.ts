/**
 * What the browser conformance run covers, shared by the page (`conformance.entry.ts`) and the
 * vitest test that drives it (`conformance-browser.test.ts`), so the test knows how many tests
 * the page must report as passed.
 *
 * @module
 */
import { type ConformanceCatalogueOptions, type ExactCase, apiExactCases } from "@weft/tensor/testing/core";

/**
 * The catalogue of the browser run: every case Node runs except the threshold cases (see
 * `ConformanceCatalogueOptions.thresholds`: under load a single one took minutes on SwiftShader,
 * 2026-11-29) and issue 7's op cases (`ConformanceCatalogueOptions.ops`: compositions of kernels
 * the rest of the page checks). Measured on the 2-core CI box, the page takes about 50 s, of which the 2^20-element chain (mostly
 * the unfused CPU oracle in the page) is the largest part; should it ever dominate, shrink it here
 * with `largeElementwiseLog2` (the case name carries the size). Never shrink the large reduction
 * below 2^17: it is the case that crosses the 65,535-iteration loop bound of software adapters
 * (docs/design.md#where-webgpu-runs).
 */
export const BROWSER_CATALOGUE: ConformanceCatalogueOptions = { thresholds: false, ops: false };

/**
 * The exact-answer cases the page runs after the catalogue (`cases-api.ts`: the semantics table's
 * answers, known without the oracle — integer scalars, typed arrays, mixed empty blocks, the
 * issue's cases, signed zeros, trig, division, index errors), each named `exact: <case>`. Issue
 * 7's op cases stay out for the same reason as in the catalogue (compositions, minutes on
 * SwiftShader).
 */
export function browserExactCases(): ExactCase[] {
  return apiExactCases();
}

/** The page's name for the exact case `c`. */
export function exactTestName(c: ExactCase): string {
  return `exact: ${c.name}`;
}

/** The page's test that checks the device came from `navigator.gpu` (registered first). */
export const DEVICE_TEST = "the page gets a WebGPU device from navigator.gpu";

/** The page's test that checks every tensor was released (registered last). */
export const RELEASE_TEST = "releases every tensor the suite created";

/** The tests of the lifetimes page (`lifetimes.entry.ts`), in the order it runs them. */
export const LIFETIME_TESTS = [
  "the page has no async context (the synchronous-only carrier)",
  "a scope disposes its synchronous segment's tensors and tracked ones, not untracked later ones",
  "concurrent scopes never dispose each other's tensors",
  "a Stream.spawn task disposes what it created",
  "nothing is left alive",
] as const;

/** The tests of the random-program page (`fuzz.entry.ts`): WebGPU fused, then unfused. */
export const FUZZ_TESTS = [
  "random programs agree with the CPU oracle on WebGPU (fused)",
  "random programs agree with the CPU oracle on WebGPU (unfused)",
] as const;
