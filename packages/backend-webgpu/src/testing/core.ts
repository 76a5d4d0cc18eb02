/**
 * `@weft/backend-webgpu/testing/core` — the page side of the browser test harness: the in-page test
 * registry (`test`, `check`, `runRegisteredTests`) whose results `runInBrowser` collects. Safe to
 * bundle for a browser: nothing here imports `node:` modules, vitest or Dawn.
 *
 * @module
 */
export { test, check, runRegisteredTests } from "../browser/harness.js";
export type { BrowserResults } from "../browser/harness.js";
