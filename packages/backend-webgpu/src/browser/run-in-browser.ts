import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { UnsupportedError } from "@weft/environment";
import type { BrowserResults } from "./harness.js";

/** Where Debian's Chromium lives; never a downloaded browser. */
export const CHROMIUM_PATH = "/usr/bin/chromium";

/** The Chromium flags of DESIGN.md §5 (a fresh `--user-data-dir` is added per run). */
export const CHROMIUM_FLAGS = [
  "--headless=new",
  "--no-sandbox",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-quic",
  "--enable-unsafe-webgpu",
] as const;

/** Options of {@link runInBrowser}. */
export interface RunInBrowserOptions {
  /** Milliseconds to wait for the page's results. Default 120 000. */
  readonly timeoutMs?: number;
  /** Receives the page's console lines (default: dropped). */
  readonly onConsole?: (line: string) => void;
}

/** Whether {@link runInBrowser} can run here (Chromium installed). */
export function browserAvailable(): boolean {
  return existsSync(CHROMIUM_PATH);
}

/** `@weft/<name>` → its sources, so the page runs the current code like vitest does. */
function weftAliases(): Record<string, string> {
  const packages = fileURLToPath(new URL("../../../", import.meta.url));
  const out: Record<string, string> = {};
  for (const name of ["environment", "server", "runtime", "fusion", "backend-webgpu", "backend-cpu", "tensor"]) {
    out[`@weft/${name}`] = join(packages, name, "src", "index.ts");
  }
  return out;
}

/**
 * Bundles `entryFile` (a module that registers tests with `harness.test` and calls
 * `runRegisteredTests()`) with esbuild, serves it from a loopback HTTP server, opens it in
 * headless Chromium (SwiftShader WebGPU) through playwright-core, and returns its results.
 *
 * @remarks
 * The `webgpu` package is external to the bundle (the page uses `navigator.gpu`). `@weft/*`
 * resolve to sibling sources. The profile directory and the server are removed on return.
 * @throws UnsupportedError when Chromium is not installed at {@link CHROMIUM_PATH}.
 */
export async function runInBrowser(entryFile: string, options: RunInBrowserOptions = {}): Promise<BrowserResults> {
  if (!browserAvailable()) {
    throw new UnsupportedError("a browser for the WebGPU harness", `install Debian's chromium at ${CHROMIUM_PATH}`);
  }
  const esbuild = (await import(/* @vite-ignore */ "esbuild")) as typeof import("esbuild");
  const built = await esbuild.build({
    entryPoints: [entryFile],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    external: ["webgpu", "node:*"],
    alias: weftAliases(),
    logLevel: "silent",
  });
  const bundle = built.outputFiles[0]?.text ?? "";
  const page = `<!doctype html><meta charset="utf-8"><title>weft</title><script type="module" src="/bundle.js"></script>`;
  const server = createServer((req, res) => {
    if (req.url === "/bundle.js") {
      res.writeHead(200, { "content-type": "text/javascript" }).end(bundle);
    } else {
      res.writeHead(200, { "content-type": "text/html" }).end(page);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const profile = await mkdtemp(join(tmpdir(), "weft-chromium-"));
  const { chromium } = (await import(/* @vite-ignore */ "playwright-core")) as typeof import("playwright-core");
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: false, // --headless=new is in the flags
    args: [...CHROMIUM_FLAGS],
  });
  try {
    const tab = context.pages()[0] ?? (await context.newPage());
    const errors: string[] = [];
    tab.on("pageerror", (error) => errors.push(String(error)));
    if (options.onConsole) tab.on("console", (msg) => options.onConsole?.(msg.text()));
    await tab.goto(`http://127.0.0.1:${port}/`);
    try {
      await tab.waitForFunction(() => (globalThis as { __weftResults?: unknown }).__weftResults !== undefined, undefined, {
        timeout: options.timeoutMs ?? 120_000,
      });
    } catch (error) {
      throw new Error(`the page published no results: ${errors.join("; ") || String(error)}`, { cause: error });
    }
    return (await tab.evaluate(() => (globalThis as { __weftResults?: unknown }).__weftResults)) as BrowserResults;
  } finally {
    await context.close();
    server.close();
    await rm(profile, { recursive: true, force: true });
  }
}
