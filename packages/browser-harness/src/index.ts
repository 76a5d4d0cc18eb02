/**
 * `@weft/browser-harness`: the monorepo's browser test harness (private, never published). The
 * Node side bundles a page entry from the packages' sources (or serves a folder a bundler built),
 * opens it in headless Chromium with SwiftShader WebGPU through playwright-core, and collects its
 * results; the page side (`@weft/browser-harness/page`) is the in-page test registry.
 *
 * @remarks
 * **Why a private package.** It resolves `@weft/*` imports to `packages/<pkg>/src` and needs esbuild
 * and playwright-core, so it only works inside this repository; published as a subpath of a backend
 * it would break for every user who imported it. See `docs/RELEASING.md`.
 *
 * @module
 */
export { runInBrowser, withBrowserPage, browserAvailable, weftSourceAlias, CHROMIUM_PATH, CHROMIUM_FLAGS } from "./node/run-in-browser.js";
export type { RunInBrowserOptions, PageSource } from "./node/run-in-browser.js";
export type { BrowserResults } from "./page/registry.js";
