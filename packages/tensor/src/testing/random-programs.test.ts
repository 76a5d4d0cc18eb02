/**
 * The random-program generator's own invariants (its programs run in `@weft/weft`'s fuzz tests).
 */
import { describe, expect, it } from "vitest";
import { generateProgram, programSeed } from "./random-programs.js";

describe("generateProgram", () => {
  it("no value's facts hold a NaN bound (it would fail every comparison): 3,000 programs, and the H200 fuzz run's program 1783257831", () => {
    // Program 1783257831 (seed 90909, H200, 2026-11-30) summed an empty floorDiv result whose facts
    // were unbounded (±Inf: a divisor that may be 0): 0 · ∞ gave the sum a NaN bound, and two reads
    // that agreed exactly with the oracle were reported as failures.
    const seeds = [1783257831, ...Array.from({ length: 3000 }, (_, i) => programSeed(90909, i))];
    let values = 0;
    for (const seed of seeds) {
      const program = generateProgram(seed);
      program.facts.forEach((f, v) => {
        if (f === undefined) return;
        values++;
        expect([f.lo, f.hi, f.err].some(Number.isNaN), `program ${seed}, v${v}: facts ${JSON.stringify(f)}`).toBe(false);
      });
      for (const v of program.outputs) expect(program.facts[v], `program ${seed} reads v${v}, which has facts`).toBeDefined();
    }
    expect(values, "the programs hold values with facts").toBeGreaterThan(10_000);
  });

  it("an integer cast of NaN/±Inf data is known to reach the saturation bounds (the H200 fuzz run's program 3169985020)", () => {
    const seeds = [3169985020, ...Array.from({ length: 2000 }, (_, i) => programSeed(111317, i))];
    let casts = 0;
    for (const seed of seeds) {
      const program = generateProgram(seed);
      program.steps.forEach((step, v) => {
        if (step.kind !== "cast" || (step.dtype !== "i32" && step.dtype !== "u32")) return;
        const from = program.facts[step.x];
        const to = program.facts[v];
        if (from === undefined || to === undefined || !from.special) return;
        casts++;
        expect(to.hi, `program ${seed}, v${v}: ${JSON.stringify(to)}`).toBeGreaterThanOrEqual(step.dtype === "u32" ? 2 ** 32 : 2 ** 31);
        if (step.dtype === "i32") expect(to.lo, `program ${seed}, v${v}`).toBeLessThanOrEqual(-(2 ** 31));
      });
    }
    expect(casts, "the programs cast special data to integers").toBeGreaterThan(10);
  });
});
