/**
 * The seeded random-program differential test in CI (Node): fixed seeds, every program on the
 * unfused CPU oracle, the fused CPU (bit-exact: fusion must not change a value), and WebGPU fused
 * and unfused (within each value's modelled bound; docs/semantics.md). A failure prints the
 * program's seed, what differed and a minimal reproducer.
 *
 * @remarks
 * **Longer runs.** `WEFT_FUZZ_PROGRAMS` and `WEFT_FUZZ_SEED` override the fixed run here;
 * `npm run fuzz -- --programs 2000 --seed 123 --backend webgpu` is the same run as a script
 * (`bench/fuzz.ts`), also bundled for the GPU machine. Under CI WebGPU must run, not skip.
 */
import { describe, expect, it } from "vitest";
import { formatFailure, runDifferential, type DifferentialTarget } from "@weft/tensor/testing";
import { createCpuDevice, createWebGpuDevice, probeAdapter } from "../device/backends.js";
import { CI_PROGRAMS, FUZZ_SEED, envInteger } from "./fuzz-options.js";

const programs = envInteger("WEFT_FUZZ_PROGRAMS", CI_PROGRAMS);
const seed = envInteger("WEFT_FUZZ_SEED", FUZZ_SEED);
const probe = await probeAdapter();
const required = process.env["CI"] === "true";

describe("random programs: every backend agrees with the CPU oracle", () => {
  it(`${programs} programs from seed ${seed}: the fused CPU exactly`, async () => {
    const report = await runDifferential({ seed, programs, reference: createCpuDevice({ fusion: false }), targets: [{ name: "cpu (fused)", device: createCpuDevice(), closeness: "exact" }] });
    expect(report.failures.map(formatFailure).join("\n\n"), "fusion must not change a value on the CPU").toBe("");
    expect(report.reads, "the programs read values").toBeGreaterThan(programs);
  }, 600_000);

  it.skipIf(!probe.available && !required)(`${programs} programs from seed ${seed}: WebGPU fused and unfused within the modelled bounds`, async () => {
    if (!probe.available) throw new Error(`CI must run the WebGPU random programs, but no adapter was found: ${probe.reason}`);
    const targets: DifferentialTarget[] = [
      { name: "webgpu (fused)", device: await createWebGpuDevice(), closeness: "modelled" },
      { name: "webgpu (unfused)", device: await createWebGpuDevice({ fusion: false }), closeness: "modelled" },
    ];
    const report = await runDifferential({ seed, programs, reference: createCpuDevice({ fusion: false }), targets });
    for (const t of targets) await t.device.syncAll();
    expect(report.failures.map(formatFailure).join("\n\n"), "WebGPU must give the oracle's answer (or the same typed error) on every read").toBe("");
  }, 900_000);
});
