/**
 * The conformance kit in headless Chromium: every case of `@weft/tensor/testing/core` on the
 * WebGPU device from `navigator.gpu` (SwiftShader in CI) against the unfused CPU oracle in the
 * same page, registered with the WebGPU harness's `test` and run by its `runRegisteredTests()`.
 * Bundled and opened by `conformance-browser.test.ts` through `runInBrowser`.
 *
 * @remarks
 * **Why the two dynamic imports.** The page needs the vitest-free kit (`@weft/tensor/testing/core`)
 * and the harness's in-page registry (`@weft/backend-webgpu`'s `src/browser/harness.ts`). Today
 * `runInBrowser` aliases only `@weft/<pkg>` to `src/index.ts` (a subpath such as
 * `@weft/tensor/testing/core` becomes `…/src/index.ts/testing/core` and fails to resolve), and the
 * harness has no package export at all. A static relative import of another package's source
 * would put that file outside this package's `rootDir` and break `tsc -b`. So the two modules are
 * loaded with esbuild glob imports (a template literal with an empty substitution): esbuild
 * bundles exactly the one file the pattern matches, TypeScript leaves the path alone, and the
 * types come from the package's published declarations. Replace them with plain imports once
 * `runInBrowser` resolves `@weft/*` subpaths and the harness is exported.
 *
 * **What runs.** {@link DEVICE_TEST} first, then one test per case (the catalogue sized by
 * {@link BROWSER_CATALOGUE}), then {@link RELEASE_TEST}. A case reports the core's message: the
 * output, the worst element, got vs oracle, the tolerance — or the error a device threw.
 */
import type * as KitCore from "@weft/tensor/testing/core";
import type { Device } from "@weft/tensor";
import { createCpuDevice, createWebGpuDevice } from "../device/backends.js";
import { BROWSER_CATALOGUE, DEVICE_TEST, RELEASE_TEST } from "./suite.js";

/** The part of the harness's in-page registry this page uses. */
interface PageHarness {
  test(name: string, fn: () => unknown): void;
  check(condition: boolean, message: string): asserts condition;
  runRegisteredTests(): Promise<unknown>;
}

/** Empty: makes the specifiers below esbuild glob patterns that match exactly one file each. */
const exact = "";
const kit = (await import(`../../../tensor/src/testing/core${exact}.ts`)) as typeof KitCore;
const harness = (await import(`../../../backend-webgpu/src/browser/harness${exact}.ts`)) as PageHarness;
const check: PageHarness["check"] = harness.check;

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

harness.test(DEVICE_TEST, () => {
  const { device } = deviceUnderTest();
  check(device.backend === "webgpu", `the device under test is ${device.label}, not a WebGPU device`);
});

for (const c of kit.conformanceCases(BROWSER_CATALOGUE)) {
  harness.test(c.name, async () => {
    const result = await kit.runConformanceCase(c, deviceUnderTest().device, oracle);
    check(result.ok, result.message ?? "");
  });
}

harness.test(RELEASE_TEST, async () => {
  const { device, baseline } = deviceUnderTest();
  const result = await kit.checkReleased(device, baseline);
  check(result.ok, result.message ?? "");
});

await harness.runRegisteredTests();
