/**
 * The browser test harness: bundle an entry, run it in headless Chromium, collect its results.
 * `run-in-browser.ts` is the Node side (published as `@weft/backend-webgpu/testing`); `harness.ts`
 * is the in-page registry (published as `@weft/backend-webgpu/testing/core`, no `node:` imports).
 *
 * @module
 */
export { runInBrowser, browserAvailable, weftSourceAlias, CHROMIUM_PATH, CHROMIUM_FLAGS } from "./run-in-browser.js";
export type { RunInBrowserOptions } from "./run-in-browser.js";
export { test, check, runRegisteredTests } from "./harness.js";
export type { BrowserResults } from "./harness.js";
