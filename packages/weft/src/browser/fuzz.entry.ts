/**
 * The seeded random-program differential test in headless Chromium: {@link BROWSER_PROGRAMS}
 * programs from the fixed seed on the WebGPU device from `navigator.gpu` (SwiftShader in CI),
 * fused and unfused, against the unfused CPU oracle in the same page. Bundled and opened by
 * `fuzz-browser.test.ts` through `runInBrowser`; one harness test per target, whose failure
 * message holds every failing program's seed, differences and reproducer.
 */
import { formatFailure, runDifferential, type DifferentialTarget } from "@weft/tensor/testing/core";
import { check, runRegisteredTests, test } from "@weft/browser-harness/page";
import { createCpuDevice, createWebGpuDevice } from "../device/backends.js";
import { BROWSER_PROGRAMS, FUZZ_SEED } from "../fuzz/fuzz-options.js";
import { FUZZ_TESTS } from "./suite.js";

const oracle = createCpuDevice({ fusion: false });
for (const [name, fusion] of [[FUZZ_TESTS[0], true], [FUZZ_TESTS[1], false]] as const) {
  test(name, async () => {
    const device = await createWebGpuDevice({ fusion });
    check(device.backend === "webgpu", `the device under test is ${device.label}, not a WebGPU device`);
    const target: DifferentialTarget = { name: device.label, device, closeness: "modelled" };
    const report = await runDifferential({ seed: FUZZ_SEED, programs: BROWSER_PROGRAMS, reference: oracle, targets: [target] });
    await device.syncAll();
    check(report.failures.length === 0, `${report.failures.length} of ${BROWSER_PROGRAMS} programs disagree:\n${report.failures.map(formatFailure).join("\n\n")}`);
  });
}

await runRegisteredTests();
