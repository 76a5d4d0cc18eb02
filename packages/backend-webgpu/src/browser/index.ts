/**
 * The browser test harness: bundle an entry, run it in headless Chromium, collect its results.
 * Node-only (`runInBrowser`) plus the in-page registry (`test`, `check`, `runRegisteredTests`).
 *
 * @module
 */
export { runInBrowser, browserAvailable, CHROMIUM_PATH, CHROMIUM_FLAGS } from "./run-in-browser.js";
export type { RunInBrowserOptions } from "./run-in-browser.js";
export { test, check, runRegisteredTests } from "./harness.js";
export type { BrowserResults } from "./harness.js";
