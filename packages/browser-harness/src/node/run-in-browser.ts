/**
 * The Node side of the browser harness: bundle a page entry from the monorepo's sources, or serve a
 * folder some bundler built, open it in headless Chromium (SwiftShader WebGPU) and collect what
 * the page reports.
 *
 * @module
 */
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { UnsupportedError } from "@weft/environment";
import type { BrowserResults } from "../page/registry.js";

/**
 * Where Debian's Chromium lives; never a downloaded browser. `WEFT_CHROMIUM` names another
 * installed Chromium-based browser (CI runners that ship Google Chrome).
 */
export const CHROMIUM_PATH = process.env["WEFT_CHROMIUM"] || "/usr/bin/chromium";

/** The Chromium flags of docs/design.md#where-webgpu-runs (a fresh `--user-data-dir` is added per run). */
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
  /** Query parameters of the page's URL (the page reads them from `location.search`). */
  readonly query?: Readonly<Record<string, string>>;
}

/** Whether {@link runInBrowser} can run here (Chromium installed). */
export function browserAvailable(): boolean {
  return existsSync(CHROMIUM_PATH);
}

/** The monorepo's `packages/` folder (this file is `packages/browser-harness/src/node/…`). */
const PACKAGES = fileURLToPath(new URL("../../../", import.meta.url));

/** The `import` target of a package.json `exports` entry (a string, or its `import`/`default`). */
function exportTarget(entry: unknown): string | undefined {
  if (typeof entry === "string") return entry;
  if (typeof entry !== "object" || entry === null) return undefined;
  const conditions = entry as Record<string, unknown>;
  return exportTarget(conditions["import"] ?? conditions["default"]);
}

/**
 * The source file a `@weft/*` specifier stands for, so a page bundle runs the current sources like
 * vitest does (no build needed); `undefined` for a specifier that is not a sibling package's.
 *
 * @remarks
 * Resolution order for `@weft/<pkg>/<sub>`:
 * 1. `@weft/<pkg>` (no subpath) → `packages/<pkg>/src/index.ts`;
 * 2. the package's `exports["./<sub>"]` target `./dist/<path>.js` → `src/<path>.ts`, when that file
 *    exists (so `@weft/tensor/testing/core` → `src/testing/core.ts`);
 * 3. `src/<sub>/index.ts`, then `src/<sub>.ts`, the first that exists.
 * A subpath none of these finds is `undefined`: the bundler then reports it unresolved, naming it.
 */
export function weftSourceAlias(specifier: string): string | undefined {
  const match = /^@weft\/([a-z0-9-]+)(?:\/(.+))?$/.exec(specifier);
  if (match === null) return undefined;
  const [, name = "", sub] = match;
  const root = join(PACKAGES, name);
  const manifest = join(root, "package.json");
  if (!existsSync(manifest)) return undefined;
  if (sub === undefined) return join(root, "src", "index.ts");
  const candidates: string[] = [];
  const exportsField = (JSON.parse(readFileSync(manifest, "utf8")) as { exports?: Record<string, unknown> }).exports;
  const target = exportTarget(exportsField?.[`./${sub}`]);
  const dist = target === undefined ? null : /^\.\/dist\/(.+)\.js$/.exec(target);
  if (dist?.[1] !== undefined) candidates.push(join(root, "src", `${dist[1]}.ts`));
  candidates.push(join(root, "src", sub, "index.ts"), join(root, "src", `${sub}.ts`));
  return candidates.find((path) => existsSync(path));
}

/** The esbuild plugin that resolves every `@weft/*` import with {@link weftSourceAlias}. */
function weftSources(): import("esbuild").Plugin {
  return {
    name: "weft-sources",
    setup(build) {
      build.onResolve({ filter: /^@weft\// }, (args) => {
        const path = weftSourceAlias(args.path);
        if (path !== undefined) return { path };
        return {
          errors: [
            {
              text:
                `cannot resolve '${args.path}' to a sibling package's source: no packages/<pkg>/package.json, ` +
                "or neither its exports entry nor src/<sub>/index.ts nor src/<sub>.ts exists",
            },
          ],
        };
      });
    },
  };
}

/** What a page is served from: a folder on disk (a bundler's output), or files held in memory. */
export type PageSource =
  | { readonly kind: "folder"; readonly root: string }
  | { readonly kind: "files"; readonly files: ReadonlyMap<string, { readonly type: string; readonly body: string }> };

/** Content types of the files a built page serves. */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html",
  ".js": "text/javascript",
  ".mjs": "text/javascript",
  ".css": "text/css",
  ".json": "application/json",
  ".wasm": "application/wasm",
  ".svg": "image/svg+xml",
};

/** The body and content type of `path` (URL path, `/` = `index.html`), or `undefined` for none. */
async function lookup(source: PageSource, path: string): Promise<{ type: string; body: string | Buffer } | undefined> {
  const bare = decodeURIComponent(path.split(/[?#]/)[0] ?? "/");
  const name = bare === "/" ? "/index.html" : bare;
  switch (source.kind) {
    case "files":
      return source.files.get(name);
    case "folder": {
      const file = normalize(join(source.root, name));
      if (!file.startsWith(normalize(source.root) + sep)) return undefined;
      try {
        return { type: CONTENT_TYPES[extname(file)] ?? "application/octet-stream", body: await readFile(file) };
      } catch {
        return undefined;
      }
    }
  }
}

/**
 * Serves `source` from a loopback HTTP server, opens it in headless Chromium with the flags of
 * {@link CHROMIUM_FLAGS}, and resolves with what `use` returns for the page. Page errors are
 * collected (live) into the list passed to `use`; console lines go to `options.onConsole`. The tab
 * opens `options.path` (default `/`, e.g. `/?backend=webgpu`). The browser, its profile folder and the server are gone on return.
 *
 * @throws UnsupportedError when Chromium is not installed at {@link CHROMIUM_PATH}.
 */
export async function withBrowserPage<T>(
  source: PageSource,
  options: { readonly onConsole?: (line: string) => void; readonly path?: string },
  use: (tab: Page, pageErrors: readonly string[]) => Promise<T>,
): Promise<T> {
  if (!browserAvailable()) {
    throw new UnsupportedError("a browser for the WebGPU harness", `install Debian's chromium at ${CHROMIUM_PATH}`);
  }
  const server = createServer((req, res) => {
    lookup(source, req.url ?? "/").then(
      (found) => {
        if (found === undefined) res.writeHead(404, { "content-type": "text/plain" }).end(`not found: ${req.url ?? ""}`);
        else res.writeHead(200, { "content-type": found.type }).end(found.body);
      },
      (error: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(String(error)),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const profile = await mkdtemp(join(tmpdir(), "weft-chromium-"));
  try {
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
      await tab.goto(`http://127.0.0.1:${port}${options.path ?? "/"}`);
      return await use(tab, errors);
    } finally {
      await context.close();
    }
  } finally {
    server.close();
    await rm(profile, { recursive: true, force: true });
  }
}

/**
 * Bundles `entryFile` (a module that registers tests with `harness.test` and calls
 * `runRegisteredTests()`) with esbuild, serves it from a loopback HTTP server, opens it in
 * headless Chromium (SwiftShader WebGPU) through playwright-core, and returns its results.
 *
 * @remarks
 * The `webgpu` package is external to the bundle (the page uses `navigator.gpu`). `@weft/*`
 * specifiers, subpaths included, resolve to sibling sources ({@link weftSourceAlias}). A bundle
 * error (an unresolved import, a syntax error) rejects with esbuild's messages. Served and opened by
 * {@link withBrowserPage}.
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
    plugins: [weftSources()],
    logLevel: "silent",
  });
  const bundle = built.outputFiles[0]?.text ?? "";
  const page = `<!doctype html><meta charset="utf-8"><title>weft</title><script type="module" src="/bundle.js"></script>`;
  const files = new Map([
    ["/index.html", { type: "text/html", body: page }],
    ["/bundle.js", { type: "text/javascript", body: bundle }],
  ]);
  const search = options.query === undefined ? "" : `?${new URLSearchParams(options.query).toString()}`;
  return withBrowserPage({ kind: "files", files }, { ...options, path: `/${search}` }, async (tab, errors) => {
    try {
      await tab.waitForFunction(() => (globalThis as { __weftResults?: unknown }).__weftResults !== undefined, undefined, {
        timeout: options.timeoutMs ?? 120_000,
      });
    } catch (error) {
      throw new Error(`the page published no results: ${errors.join("; ") || String(error)}`, { cause: error });
    }
    return (await tab.evaluate(() => (globalThis as { __weftResults?: unknown }).__weftResults)) as BrowserResults;
  });
}
