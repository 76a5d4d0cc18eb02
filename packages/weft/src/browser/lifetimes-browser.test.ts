/**
 * Lifetime scopes without async context, in headless Chromium: bundles `lifetimes.entry.ts`
 * (CPU backend only, so it needs no WebGPU adapter) and requires every check of the page to pass.
 * Skipped like the conformance page when Chromium is absent off CI.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { browserAvailable, CHROMIUM_PATH, runInBrowser } from "@weft/browser-harness";
import { LIFETIME_TESTS } from "./suite.js";

const available = browserAvailable();
const required = process.env["CI"] === "true";

describe("lifetimes in Chromium (no async context)", () => {
  it.skipIf(!available && !required)("the documented fallback holds: synchronous segments and tracked tensors are disposed, other tasks untouched", async () => {
    if (!available) throw new Error(`CI must run the browser suites, but Chromium is not installed at ${CHROMIUM_PATH}`);
    const results = await runInBrowser(fileURLToPath(new URL("./lifetimes.entry.ts", import.meta.url)), { timeoutMs: 60_000 });
    expect(results.failures, "every check of the page").toEqual([]);
    expect(results.names).toEqual([...LIFETIME_TESTS]);
    expect(results.passed).toBe(LIFETIME_TESTS.length);
  }, 90_000);
});
