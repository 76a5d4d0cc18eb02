/**
 * The API reference builds in every test run: `npm run docs` (scripts/docs/build.mjs) generates
 * docs/api/ with TypeDoc from the public packages' doc comments and fails on a `{@link}` that
 * resolves to nothing or to an undocumented symbol, and on any local href or anchor of the
 * generated HTML that does not exist.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { brokenLinks } from "../docs/build.mjs";
import { publicPackages, root } from "./manifests.mjs";

describe("API reference", () => {
  it("the link check finds a missing file and a missing anchor", () => {
    const site = mkdtempSync(join(tmpdir(), "weft-docs-"));
    try {
      mkdirSync(join(site, "classes"));
      writeFileSync(join(site, "index.html"), '<a href="classes/A.html#run">ok</a><a href="classes/B.html">gone</a><a id="top" href="#nowhere">bad anchor</a><a href="https://typedoc.org">ext</a>');
      writeFileSync(join(site, "classes", "A.html"), '<h3 id="run">run</h3><a href="../index.html#top">up</a>');
      expect(brokenLinks(site).sort()).toEqual(["index.html → #nowhere (no such anchor)", "index.html → classes/B.html (no such file)"]);
    } finally {
      rmSync(site, { recursive: true, force: true });
    }
  });

  it("typedoc.json documents every published package, and nothing private", () => {
    const config = JSON.parse(readFileSync(join(root, "typedoc.json"), "utf8")) as { entryPoints: string[] };
    const published = publicPackages().map((p) => `packages/${p.dir}`);
    expect([...config.entryPoints].sort(), "add a new package's folder to typedoc.json's entryPoints").toEqual([...published].sort());
  });

  it("npm run docs writes docs/api/index.html with every link resolved", () => {
    const run = spawnSync(process.execPath, [join(root, "scripts", "docs", "build.mjs")], { cwd: root, encoding: "utf8", timeout: 590_000 });
    expect(run.status, `${run.stdout}${run.stderr}`).toBe(0);
    expect(existsSync(join(root, "docs", "api", "index.html"))).toBe(true);
  }, 600_000);
});
