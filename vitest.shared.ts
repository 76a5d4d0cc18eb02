/**
 * Shared Vitest settings for every package: `@weft/*` imports resolve to the sibling packages'
 * *sources*, so a package's tests always run against the current code of the layers below it
 * without waiting for their builds. The build (`tsc -b`) and typecheck still go through `dist`.
 */
import { fileURLToPath } from "node:url";
import type { ViteUserConfig } from "vitest/config";

const packages = fileURLToPath(new URL("./packages/", import.meta.url));

export const sharedConfig: ViteUserConfig = {
  resolve: {
    alias: [
      { find: /^@weft\/([a-z-]+)\/testing\/core$/, replacement: `${packages}$1/src/testing/core.ts` },
      { find: /^@weft\/([a-z-]+)\/testing$/, replacement: `${packages}$1/src/testing/index.ts` },
      { find: /^@weft\/([a-z-]+)\/internal$/, replacement: `${packages}$1/src/internal.ts` },
      { find: /^@weft\/([a-z-]+)$/, replacement: `${packages}$1/src/index.ts` },
    ],
  },
  // Hooks get the tests' budget: a suite's `beforeAll` may start devices or `weft serve` processes,
  // which take more than vitest's default 10 s on a loaded 2-core machine.
  test: { include: ["src/**/*.test.ts"], environment: "node", testTimeout: 60_000, hookTimeout: 60_000 },
};
