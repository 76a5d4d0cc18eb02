/**
 * `@weft/browser-harness/page` — the page side of the browser harness: the in-page test registry
 * (`test`, `check`, `runRegisteredTests`) whose results `runInBrowser` collects. Safe to bundle for
 * a browser: nothing here imports `node:` modules, vitest or Dawn.
 *
 * @module
 */
export { test, check, runRegisteredTests } from "./registry.js";
export type { BrowserResults } from "./registry.js";
