/**
 * The conformance kit on a real GPU, without vitest: every case of `@weft/tensor/testing/core` on
 * the WebGPU device (fused) against the unfused CPU oracle, printing one line per failure and a
 * closing `N passed, N failed` line. Bundled by `scripts/bench.mjs` into `.device/conformance.mjs`
 * for the GPU machine, where no test runner is installed:
 *
 *   source .device/enter.sh; node .device/conformance.mjs --backend vulkan
 *
 * @module
 */
import { checkReadInto, conformanceCases, runConformanceCase } from "@weft/tensor/testing/core";
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
await device.syncAll();
const memory = device.memory();
console.log(`conformance: ${((performance.now() - start) / 1000).toFixed(1)} s; live tensors after: ${memory.liveTensors}, live handles: ${memory.liveHandles}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
