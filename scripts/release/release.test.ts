/**
 * What a release needs, checked on every run (docs/RELEASING.md): manifests that follow the rules,
 * names free on npm (or ours), one version for every package after `changeset version`, and a
 * fresh project outside the monorepo that installs the packed entry and uses it from ESM,
 * `require`, TypeScript and the CLI, small without WebGPU.
 *
 * The npm registry must be reachable (CI reaches it): an unreachable registry fails the name test
 * with that reason, never passes it.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshInstallCheck } from "./fresh-install.mjs";
import { checkManifests, FIXED_GROUP, root, workspacePackages } from "./manifests.mjs";
import { checkNames, classify, normalizeRepository } from "./npm-names.mjs";

const OURS = "git+https://github.com/weft-js/weft.git";

describe("manifests", () => {
  it("every package.json, LICENSE and the Changesets config follow the release rules", () => {
    expect(checkManifests(), "node scripts/release/manifests.mjs --write fixes the mechanical ones").toEqual([]);
  });
});

describe("npm names", () => {
  it("a 404 is free, our repository is ours, another repository is taken, anything else is unreachable", () => {
    expect(classify("@weft/x", { status: 1, stdout: JSON.stringify({ error: { code: "E404" } }), stderr: "" }, OURS).state).toBe("free");
    const ours = JSON.stringify({ name: "@weft/x", version: "0.1.0", repository: { type: "git", url: "git+https://github.com/weft-js/weft.git", directory: "packages/x" } });
    expect(classify("@weft/x", { status: 0, stdout: ours, stderr: "" }, OURS).state).toBe("ours");
    const theirs = JSON.stringify({ name: "x", version: "1.2.4", repository: { url: "git+https://github.com/someone/x.git" } });
    expect(classify("x", { status: 0, stdout: theirs, stderr: "" }, OURS)).toMatchObject({ state: "taken", detail: expect.stringContaining("github.com/someone/x") });
    expect(classify("x", { status: 0, stdout: JSON.stringify({ name: "x", version: "1.0.0" }), stderr: "" }, OURS).state, "no repository is not ours").toBe("taken");
    const offline = { status: 1, stdout: "", stderr: "npm error code ENOTFOUND\nnpm error network request to https://registry.npmjs.org/x failed" };
    expect(classify("x", offline, OURS)).toMatchObject({ state: "unreachable", detail: expect.stringContaining("ENOTFOUND") });
    expect(classify("x", { status: 1, stdout: "", stderr: "", timedOut: true }, OURS).state).toBe("unreachable");
  });

  it("repository spellings normalise to one form", () => {
    for (const spelling of ["git+https://github.com/Weft-JS/weft.git", "https://github.com/weft-js/weft", "git://github.com/weft-js/weft.git", "github:weft-js/weft", "git@github.com:weft-js/weft.git", "weft-js/weft"]) {
      expect(normalizeRepository(spelling), spelling).toBe("github.com/weft-js/weft");
    }
  });

  it("the check can fail: `weft` (the entry's old name) is taken on npm by someone else", async () => {
    const [weft] = await checkNames(["weft"]);
    expect(weft?.state, weft?.detail).toBe("taken");
  });

  it("every package we publish is free on npm or already ours", async () => {
    const results = await checkNames();
    const problems = results.filter((r) => r.state !== "free" && r.state !== "ours");
    expect(problems, "a taken name must be renamed; an unreachable registry means the names are unknown").toEqual([]);
  });
});

describe("changeset version", () => {
  const scratch = mkdtempSync(join(tmpdir(), "weft-changeset-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("a change to one package versions every package together and keeps the internal pins exact", () => {
    cpSync(join(root, "package.json"), join(scratch, "package.json"));
    mkdirSync(join(scratch, ".changeset"));
    cpSync(join(root, ".changeset", "config.json"), join(scratch, ".changeset", "config.json"));
    for (const pkg of workspacePackages()) {
      mkdirSync(join(scratch, "packages", pkg.dir), { recursive: true });
      cpSync(join(pkg.path, "package.json"), join(scratch, "packages", pkg.dir, "package.json"));
    }
    symlinkSync(join(root, "node_modules"), join(scratch, "node_modules"));
    writeFileSync(join(scratch, ".changeset", "one-layer.md"), '---\n"@weft/environment": minor\n---\n\nA change to the lowest layer only.\n');
    const before = JSON.parse(readFileSync(join(root, "packages", "environment", "package.json"), "utf8")).version as string;
    const run = spawnSync(process.execPath, [join(root, "node_modules", "@changesets", "cli", "bin.js"), "version"], { cwd: scratch, encoding: "utf8" });
    expect(run.status, run.stderr).toBe(0);
    const [major, minor] = before.split(".").map(Number);
    const next = major === 0 ? `0.${(minor ?? 0) + 1}.0` : `${major}.${(minor ?? 0) + 1}.0`;
    for (const dir of readdirSync(join(scratch, "packages"))) {
      const manifest = JSON.parse(readFileSync(join(scratch, "packages", dir, "package.json"), "utf8")) as { version: string; dependencies?: Record<string, string> };
      expect(manifest.version, `${dir} moves with the fixed group ${FIXED_GROUP}`).toBe(next);
      for (const [dep, range] of Object.entries(manifest.dependencies ?? {})) {
        if (dep.startsWith("@weft/")) expect(range, `${dir} pins ${dep} to the group's version`).toBe(next);
      }
    }
  });
});

describe("a fresh project installs the packed tarballs", () => {
  let result: Awaited<ReturnType<typeof freshInstallCheck>> | undefined;
  beforeAll(async () => {
    result = await freshInstallCheck({ withWebGpu: process.env["WEFT_FRESH_INSTALL_WEBGPU"] !== "0" });
  });

  it("every check of scripts/release/fresh-install.mjs passes", () => {
    const checks = result?.checks ?? [];
    expect(checks.length, "the check ran").toBeGreaterThan(40);
    const failed = checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);
    expect(failed, `figures: ${JSON.stringify(result?.figures)}`).toEqual([]);
  });
});
