/**
 * A browser client computing through TWO `weft serve` processes: starts two servers on 127.0.0.1
 * (CPU backend), opens `remote.entry.ts` in headless Chromium with their URLs, and requires every
 * conformance case to equal the page's CPU oracle and nothing to be left on either side.
 *
 * @remarks
 * Skipped, with the reason printed, only off CI when Debian's Chromium is not installed; under
 * `CI=true` a missing browser fails the test. The servers are always stopped.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { conformanceCases } from "@weft/tensor/testing";
import { browserAvailable, CHROMIUM_PATH, runInBrowser } from "@weft/browser-harness";
import { SERVE_TOKEN, startServe } from "../remote/serve-process.js";
import { REMOTE_BROWSER_CATALOGUE, REMOTE_CONNECT_TEST, REMOTE_RELEASE_TEST } from "./remote-suite.js";

const available = browserAvailable();
const required = process.env["CI"] === "true";
if (!available && !required) console.warn(`remote: browser skipped — Chromium is not installed at ${CHROMIUM_PATH}`);

describe("remote: a Chromium client through two weft serve processes", () => {
  it.skipIf(!available && !required)("every conformance case equals the oracle, and nothing is left on either side", async () => {
    if (!available) throw new Error(`CI must run the browser suite, but Chromium is not installed at ${CHROMIUM_PATH}`);
    const servers = await Promise.all([startServe(), startServe()]);
    try {
      const expected = [REMOTE_CONNECT_TEST, ...conformanceCases(REMOTE_BROWSER_CATALOGUE).map((c) => c.name), REMOTE_RELEASE_TEST];
      const results = await runInBrowser(fileURLToPath(new URL("./remote.entry.ts", import.meta.url)), {
        timeoutMs: 280_000,
        query: { urls: servers.map((s) => s.url).join(","), token: SERVE_TOKEN },
      });
      expect(results.failures, "every case must match the oracle through the servers").toEqual([]);
      expect(results.names, "the page ran the connect check, every case and the release check").toEqual(expected);
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
    }
  }, 300_000);
});
