import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { sharedConfig } from "../../vitest.shared.js";

const packages = fileURLToPath(new URL("../", import.meta.url));
const shared = sharedConfig.resolve?.alias;

/**
 * The shared settings, plus `@weft/<pkg>/testing/core` → its source (the vitest-free conformance
 * core the browser entry uses), ahead of the shared aliases, which only map `@weft/<pkg>` and
 * `@weft/<pkg>/testing`.
 */
export default defineConfig({
  ...sharedConfig,
  resolve: {
    ...sharedConfig.resolve,
    alias: [
      { find: /^@weft\/([a-z-]+)\/testing\/core$/, replacement: `${packages}$1/src/testing/core.ts` },
      ...(Array.isArray(shared) ? (shared as { find: RegExp; replacement: string }[]) : []),
    ],
  },
});
