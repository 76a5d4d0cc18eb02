/**
 * Runs the server-level smoke suite (`smoke.entry.ts`) in headless Chromium with SwiftShader
 * WebGPU, through the harness the conformance kit will use.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { browserAvailable, runInBrowser } from "./run-in-browser.js";

describe("browser harness", () => {
  it.skipIf(!browserAvailable())("the WebGPU server passes its smoke suite in Chromium", async () => {
    const results = await runInBrowser(fileURLToPath(new URL("./smoke.entry.ts", import.meta.url)));
    expect(results.failures, "no smoke case may fail in the browser").toEqual([]);
    expect(results.passed, "all four smoke cases ran").toBe(4);
  }, 180_000);
});
