/**
 * The conformance kit on WebGPU in headless Chromium (SwiftShader): bundles
 * `conformance.entry.ts` with the monorepo's private harness `@weft/browser-harness` (`runInBrowser`), runs it, and
 * requires every case to pass.
 *
 * @remarks
 * Skipped, with the reason printed, only off CI when Debian's Chromium is not installed at
 * `/usr/bin/chromium`; under `CI=true` a missing browser fails the test (CI installs it in
 * `scripts/setup-system.sh`).
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { conformanceCases } from "@weft/tensor/testing";
import { browserAvailable, CHROMIUM_PATH, runInBrowser } from "@weft/browser-harness";
import { BROWSER_CATALOGUE, DEVICE_TEST, RELEASE_TEST, browserExactCases, exactTestName } from "./suite.js";

const available = browserAvailable();
const required = process.env["CI"] === "true";
if (!available && !required) console.warn(`conformance: browser skipped — Chromium is not installed at ${CHROMIUM_PATH}`);

describe("conformance: webgpu in Chromium", () => {
  it.skipIf(!available && !required)("every conformance case passes on SwiftShader WebGPU against the CPU oracle, and every exact case gives its answer", async () => {
    if (!available) throw new Error(`CI must run the browser conformance suite, but Chromium is not installed at ${CHROMIUM_PATH}`);
    const expected = [DEVICE_TEST, ...conformanceCases(BROWSER_CATALOGUE).map((c) => c.name), ...browserExactCases().map(exactTestName), RELEASE_TEST];
    const results = await runInBrowser(fileURLToPath(new URL("./conformance.entry.ts", import.meta.url)), { timeoutMs: 880_000 });
    expect(results.failures, "every case must match the oracle in the browser too (each entry names the case and the mismatch)").toEqual([]);
    expect(results.failed, "no test of the page may fail").toBe(0);
    expect(results.passed, "the page must run the device check, every case of the catalogue and the release check").toBe(expected.length);
    expect(results.names, "the page ran exactly the catalogue's cases, in order").toEqual(expected);
  }, 900_000);
});
