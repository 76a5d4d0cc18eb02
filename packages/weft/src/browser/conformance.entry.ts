/**
 * The conformance kit in headless Chromium: every case of `@weft/tensor/testing/core` on the
 * WebGPU device from `navigator.gpu` (SwiftShader in CI) against the unfused CPU oracle in the
 * same page, registered with the WebGPU harness's `test` and run by its `runRegisteredTests()`.
 * Bundled and opened by `conformance-browser.test.ts` through `runInBrowser`.
 *
 * @remarks
 * **Imports.** The page imports the vitest-free kit (`@weft/tensor/testing/core`) and the
 * harness's in-page registry (`@weft/browser-harness/page`, no `node:` imports) by their
 * package subpaths; `runInBrowser` bundles every `@weft/*` subpath from its package's sources.
 *
 * **What runs.** {@link DEVICE_TEST} first, then one test per case (the catalogue sized by
 * {@link BROWSER_CATALOGUE}), then the exact-answer cases ({@link browserExactCases}, on the device
 * made current), then {@link RELEASE_TEST}. A case reports the core's message: the
 * output, the worst element, got vs oracle, the tolerance — or the error a device threw.
 */
import { checkReleased, conformanceCases, runConformanceCase, runExactCase } from "@weft/tensor/testing/core";
import { check, runRegisteredTests, test } from "@weft/browser-harness/page";
import { type Device, setDevice } from "@weft/tensor";
import { createCpuDevice, createWebGpuDevice } from "../device/backends.js";
import { BROWSER_CATALOGUE, DEVICE_TEST, RELEASE_TEST, browserExactCases, exactTestName } from "./suite.js";

const oracle = createCpuDevice({ fusion: false });
/** The device under test, or why there is none (every case then fails with that reason). */
const started: { device: Device; baseline: number } | { error: unknown } = await createWebGpuDevice().then(
  (device) => ({ device, baseline: device.memory().liveTensors }),
  (error: unknown) => ({ error }),
);
const deviceUnderTest = (): { device: Device; baseline: number } => {
  if ("error" in started) {
    throw new Error(`no WebGPU device in the page: ${started.error instanceof Error ? `${started.error.name}: ${started.error.message}` : String(started.error)}`);
  }
  return started;
};

test(DEVICE_TEST, () => {
  const { device } = deviceUnderTest();
  check(device.backend === "webgpu", `the device under test is ${device.label}, not a WebGPU device`);
});

for (const c of conformanceCases(BROWSER_CATALOGUE)) {
  test(c.name, async () => {
    const result = await runConformanceCase(c, deviceUnderTest().device, oracle);
    check(result.ok, result.message ?? "");
  });
}

for (const c of browserExactCases()) {
  test(exactTestName(c), async () => {
    const { device } = deviceUnderTest();
    const previous = setDevice(device);
    try {
      const problem = await runExactCase(c, device);
      check(problem === undefined, problem ?? "");
    } finally {
      setDevice(previous);
    }
  });
}

test(RELEASE_TEST, async () => {
  const { device, baseline } = deviceUnderTest();
  const result = await checkReleased(device, baseline);
  check(result.ok, result.message ?? "");
});

await runRegisteredTests();
