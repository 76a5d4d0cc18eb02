/**
 * `@weft/backend-webgpu/testing` — the Node side of the browser test harness: bundle a page entry,
 * open it in headless Chromium (SwiftShader WebGPU), and collect its results. Node-only (it starts
 * a loopback HTTP server and drives Chromium through playwright-core); the page itself imports the
 * in-page registry from `@weft/backend-webgpu/testing/core`, which has no `node:` imports.
 *
 * @module
 */
export { runInBrowser, browserAvailable, weftSourceAlias, CHROMIUM_PATH, CHROMIUM_FLAGS } from "../browser/run-in-browser.js";
export type { RunInBrowserOptions } from "../browser/run-in-browser.js";
export type { BrowserResults } from "../browser/harness.js";
