import { defineConfig } from "vitest/config";

/**
 * The release checks as tests (`cd scripts/release && npx vitest run`): the manifest rules, the npm
 * names, Changesets' fixed group, and the fresh-project install of the packed tarballs. Run by
 * `scripts/test.mjs` after the build, so their counts are in the closing line.
 */
export default defineConfig({
  test: { include: ["*.test.ts"], environment: "node", testTimeout: 120_000, hookTimeout: 600_000 },
});
