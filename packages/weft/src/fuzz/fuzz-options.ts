/**
 * What the seeded random-program differential test runs, shared by the CI test
 * (`random-programs.test.ts`), the Chromium page (`browser/fuzz.entry.ts`) and the long-run CLI
 * (`npm run fuzz`, `bench/fuzz.ts`), so every runner's fixed seeds are written once.
 *
 * @module
 */

/** The fixed seed the CI runs start from (program `i` uses `programSeed(FUZZ_SEED, i)`). */
export const FUZZ_SEED = 20261129;

/**
 * Programs per CI run in Node: each runs on the CPU oracle, the fused CPU (exactly), and WebGPU
 * fused and unfused (within the modelled bounds). Sized for about a minute on the 2-core CI box
 * with software WebGPU; a longer run with fresh seeds is `npm run fuzz -- --programs 2000 --seed N`.
 */
export const CI_PROGRAMS = 120;

/** Programs of the Chromium run (SwiftShader; the page also runs the CPU oracle). */
export const BROWSER_PROGRAMS = 60;

/** Reads an integer environment variable, or `fallback` when it is unset or empty. */
export function envInteger(name: string, fallback: number): number {
  const raw = typeof process === "undefined" ? undefined : process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name}=${raw} must be a non-negative integer`);
  return n;
}
