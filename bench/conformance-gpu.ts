/**
 * The conformance kit on a real GPU, without vitest: every case of `@weft/tensor/testing/core` on
 * the WebGPU device (fused) against the unfused CPU oracle, then the exact-answer cases
 * (`cases-api.ts`: signed zeros, index errors, NaN through reassociable sums…) against their
 * answers on the fused and the unfused WebGPU device, printing one line per failure and a
 * closing `N passed, N failed` line. Bundled by `scripts/bench.mjs` into `.device/conformance.mjs`
 * for the GPU machine, where no test runner is installed:
 *
 *   source .device/enter.sh; node .device/conformance.mjs --backend vulkan
 *
 * @module
 */
import { setDevice } from "@weft/tensor";
import { checkReadInto, conformanceCases, exactCases, runConformanceCase, runExactCase } from "@weft/tensor/testing/core";
import { createCpuDevice, createWebGpuDevice } from "@weft/weft";

const device = await createWebGpuDevice({ fusion: true });
const oracle = await createCpuDevice({ fusion: false });
console.log(`conformance: ${device.label} against ${oracle.label}`);
let passed = 0;
let failed = 0;
const start = performance.now();
for (const c of conformanceCases({ largeThresholds: true })) {
  const result = await runConformanceCase(c, device, oracle);
  if (result.ok) passed++;
  else {
    failed++;
    console.log(`FAIL ${c.name}: ${result.message}`);
  }
}
const into = await checkReadInto(device);
if (into.ok) passed++;
else {
  failed++;
  console.log(`FAIL data({ into }): ${into.message}`);
}
const unfused = await createWebGpuDevice({ fusion: false });
for (const d of [device, unfused]) {
  const previous = setDevice(d);
  for (const c of exactCases()) {
    const problem = await runExactCase(c, d).catch((error: unknown) => `${c.name}: threw ${String(error)}`);
    if (problem === undefined) passed++;
    else {
      failed++;
      console.log(`FAIL exact (${d === device ? "fused" : "unfused"}) ${problem}`);
    }
  }
  setDevice(previous);
}
await unfused.syncAll();
await device.syncAll();
const memory = device.memory();
console.log(`conformance: ${((performance.now() - start) / 1000).toFixed(1)} s; live tensors after: ${memory.liveTensors}, live handles: ${memory.liveHandles}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
