/**
 * Runs the server-level smoke suite (`smoke.entry.ts`) in headless Chromium with SwiftShader
 * WebGPU, through the harness the conformance kit will use.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { browserAvailable, CHROMIUM_PATH, runInBrowser } from "@weft/browser-harness";

/** Skipped only off CI when Chromium is missing; under CI=true a missing browser fails the test. */
const available = browserAvailable();
const required = process.env["CI"] === "true";

describe("browser harness", () => {
  it.skipIf(!available && !required)("the WebGPU server passes its smoke suite in Chromium", async () => {
    if (!available) throw new Error(`CI must run the browser suite, but Chromium is not installed at ${CHROMIUM_PATH} (scripts/setup-system.sh installs it)`);
    const results = await runInBrowser(fileURLToPath(new URL("./smoke.entry.ts", import.meta.url)));
    expect(results.failures, "no smoke case may fail in the browser").toEqual([]);
    expect(results.passed, "all four smoke cases ran").toBe(4);
  }, 180_000);
});
