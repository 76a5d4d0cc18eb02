import { defineConfig } from "vitest/config";
import { sharedConfig } from "../vitest.shared.js";

/** The bench's own unit tests (the harness, options, peak meter): `cd bench && npx vitest run`. */
export default defineConfig({
  ...sharedConfig,
  test: { include: ["**/*.test.ts"], exclude: ["node_modules/**"], environment: "node", testTimeout: 30_000 },
});
