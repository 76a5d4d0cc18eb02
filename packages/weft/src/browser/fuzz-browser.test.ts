/**
 * The seeded random-program differential test on WebGPU in headless Chromium (SwiftShader):
 * bundles `fuzz.entry.ts` with the harness of `@weft/backend-webgpu` (`runInBrowser`), runs it,
 * and requires both of its tests (fused, unfused) to pass.
 *
 * @remarks
 * Skipped, with the reason printed, only off CI when Debian's Chromium is not installed at
 * `/usr/bin/chromium`; under `CI=true` a missing browser fails the test.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { browserAvailable, CHROMIUM_PATH, runInBrowser } from "@weft/browser-harness";
import { FUZZ_TESTS } from "./suite.js";

const available = browserAvailable();
const required = process.env["CI"] === "true";
if (!available && !required) console.warn(`random programs: browser skipped — Chromium is not installed at ${CHROMIUM_PATH}`);

describe("random programs: webgpu in Chromium", () => {
  it.skipIf(!available && !required)("the fixed-seed random programs agree with the CPU oracle on SwiftShader WebGPU", async () => {
    if (!available) throw new Error(`CI must run the browser random programs, but Chromium is not installed at ${CHROMIUM_PATH}`);
    const results = await runInBrowser(fileURLToPath(new URL("./fuzz.entry.ts", import.meta.url)), { timeoutMs: 880_000 });
    expect(results.failures, "every program must agree with the oracle in the browser too (each entry names the seed and the difference)").toEqual([]);
    expect(results.names, "the page ran both targets").toEqual([...FUZZ_TESTS]);
  }, 900_000);
});
