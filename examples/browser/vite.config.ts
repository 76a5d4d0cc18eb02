import { defineConfig } from "vite";

/**
 * Nothing Weft-specific is needed: `@weft/weft` is ESM with `sideEffects: false`, and its Node-only
 * `webgpu` import is computed (never followed by a bundler). `es2022` keeps top-level await.
 */
export default defineConfig({
  build: { target: "es2022" },
});
