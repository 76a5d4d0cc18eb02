import { defineConfig } from "vitest/config";

/**
 * The examples as tests (`cd examples && npx vitest run`): each example runs as a user would run it,
 * against the built packages (`@weft/weft` resolves to `packages/weft/dist` through the workspace
 * link). Run by `scripts/test.mjs` after the build, so their counts are in the closing line.
 */
export default defineConfig({
  test: { include: ["*.test.ts"], environment: "node", testTimeout: 300_000 },
});
