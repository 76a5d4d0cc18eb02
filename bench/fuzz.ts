/**
 * `npm run fuzz [-- options]`: the seeded random-program differential test as a long run, without
 * vitest (`@weft/tensor/testing/core`'s `runDifferential`). Bundled by `scripts/fuzz.mjs` (and by
 * `scripts/bench.mjs`) into `.device/fuzz.mjs`, so it also runs on the GPU machine:
 *
 *   source .device/enter.sh; node .device/fuzz.mjs --programs 1000 --seed 7 --backend webgpu
 *
 * Options:
 *   --programs N     programs to run (default 200)
 *   --seed S         the first seed (default 1); program i uses programSeed(S, i)
 *   --backend B      cpu (the fused CPU, exact), webgpu (fused and unfused), all (default)
 *   --steps N        steps per program (default 14)
 *   --no-minimize    print the whole program of a failure instead of a minimal one
 *
 * Prints one block per failure (the target, the seed, what differed, a reproducer in TypeScript
 * over the public API), progress every 50 programs, and a closing line
 * `N programs × T targets: R reads compared, F failures`; exits 1 when anything failed.
 *
 * @module
 */
import { formatFailure, runDifferential, type DifferentialTarget } from "@weft/tensor/testing/core";
import { createCpuDevice, createWebGpuDevice } from "@weft/weft";

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? (process.argv[at + 1] ?? fallback) : fallback;
}
const programs = Number(option("programs", "200"));
const seed = Number(option("seed", "1"));
const backend = option("backend", "all");
const steps = Number(option("steps", "14"));
const minimize = !process.argv.includes("--no-minimize");
if (!Number.isSafeInteger(programs) || !Number.isSafeInteger(seed) || !["cpu", "webgpu", "all"].includes(backend)) {
  console.error("usage: npm run fuzz -- [--programs N] [--seed S] [--backend cpu|webgpu|all] [--steps N] [--no-minimize]");
  process.exit(2);
}

const targets: DifferentialTarget[] = [];
if (backend !== "webgpu") targets.push({ name: "cpu (fused)", device: createCpuDevice(), closeness: "exact" });
if (backend !== "cpu") {
  targets.push({ name: "webgpu (fused)", device: await createWebGpuDevice(), closeness: "modelled" });
  targets.push({ name: "webgpu (unfused)", device: await createWebGpuDevice({ fusion: false }), closeness: "modelled" });
}
console.log(`fuzz: ${programs} programs from seed ${seed} on ${targets.map((t) => `${t.name} = ${t.device.label}`).join(", ")}; reference: the CPU oracle (unfused)`);
const start = performance.now();
const report = await runDifferential({
  seed,
  programs,
  steps,
  minimize,
  reference: createCpuDevice({ fusion: false }),
  targets,
  onProgram: (i, failures) => {
    if ((i + 1) % 50 === 0) console.log(`fuzz: ${i + 1}/${programs} programs, ${failures} failures, ${((performance.now() - start) / 1000).toFixed(0)} s`);
  },
});
for (const f of report.failures) console.log(`\n${formatFailure(f)}`);
for (const t of targets) await t.device.syncAll();
console.log(`\n${report.programs} programs × ${targets.length} targets: ${report.reads} reads compared, ${report.failures.length} failures (${((performance.now() - start) / 1000).toFixed(0)} s)`);
process.exit(report.failures.length === 0 ? 0 : 1);
