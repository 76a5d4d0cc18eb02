/**
 * Every example runs as a user would run it: the Node example and the serving example with `node`,
 * the browser example bundled by Vite and opened in headless Chromium (SwiftShader WebGPU), and all
 * of them type-checked against the shipped declarations (`tsc -p examples`).
 *
 * Under `CI=true` a missing Chromium fails the browser test; elsewhere it is skipped with the reason.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { browserAvailable, CHROMIUM_PATH, withBrowserPage } from "@weft/browser-harness";

const here = fileURLToPath(new URL(".", import.meta.url));
const root = join(here, "..");
const scratch = mkdtempSync(join(tmpdir(), "weft-examples-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Runs `node file args` in the example's folder; resolves status and output. */
function runExample(file: string, args: string[] = []): { status: number; out: string } {
  const run = spawnSync(process.execPath, [join(here, file), ...args], { cwd: join(here, file, ".."), encoding: "utf8", timeout: 280_000 });
  return { status: run.status ?? 1, out: `${run.stdout}${run.stderr}` };
}

describe("examples", () => {
  it("the examples type-check against the shipped declarations", () => {
    const run = spawnSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(here, "tsconfig.json")], { encoding: "utf8" });
    expect(run.status, `${run.stdout}${run.stderr}`).toBe(0);
  });

  it("node/main.mjs runs: fused chain, matmul, reductions, tidy, streams, nothing left alive", () => {
    const { status, out } = runExample("node/main.mjs");
    expect(status, out).toBe(0);
    expect(out).toMatch(/^weft: using (webgpu|cpu) /m);
    expect(out).toContain("x @ w: [ [ -2 ], [ -2 ] ]");
    expect(out).toContain("row sums: [ 3, 12 ]");
    expect(out).toContain("softmax: [ 0.25, 0.25, 0.25, 0.25 ]");
    expect(out, "three tasks on three distinct streams").toMatch(/task 1 on stream (\d+)[\s\S]*task 2 on stream (?!\1)\d+/);
    expect(out).toMatch(/live tensors at the end: 0 /);
  });

  it("serving/server.mjs --self-test: concurrent requests on their own streams match plain JavaScript, nothing leaks", () => {
    const { status, out } = runExample("serving/server.mjs", ["--self-test", "24", "--concurrency", "8"]);
    expect(status, out).toBe(0);
    expect(out).toMatch(/served 24 requests \(8 in flight\)/);
    expect(out).toContain("requests ran on 24 distinct streams");
    expect(out).toContain("a malformed request gets HTTP 400");
    expect(out).toMatch(/tensors left by the requests: 0; after disposing the model: 0/);
  });

  const required = process.env["CI"] === "true";
  it.skipIf(!browserAvailable() && !required)("browser/: bundled by Vite, runs on WebGPU in headless Chromium", async () => {
    if (!browserAvailable()) throw new Error(`CI must run the browser example, but Chromium is not installed at ${CHROMIUM_PATH}`);
    const { build } = await import("vite");
    const outDir = join(scratch, "browser-dist");
    await build({ root: join(here, "browser"), logLevel: "warn", build: { outDir, emptyOutDir: true } });
    // SwiftShader is a software adapter, which `auto` passes over for the CPU: ask for WebGPU.
    const page = await withBrowserPage({ kind: "folder", root: outDir }, { path: "/?backend=webgpu" }, async (tab, errors) => {
      await tab.waitForSelector('#status:not([data-state="running"])', { timeout: 240_000 });
      return {
        state: await tab.getAttribute("#status", "data-state"),
        device: await tab.textContent("#device"),
        log: await tab.textContent("#log"),
        errors: [...errors],
      };
    });
    expect(page.errors, "no uncaught page error").toEqual([]);
    expect(page.state, page.log ?? "").toBe("done");
    expect(page.device, "Chromium's SwiftShader adapter is WebGPU").toMatch(/^webgpu: /);
    expect(page.log).toContain("matmul: [[3,3],[12,12]]");
    expect(page.log).toContain("live tensors: 0");
  });
});
