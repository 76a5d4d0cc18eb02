/**
 * The load-time guard against a second copy of `@weft/environment`: in isolation (a foreign
 * marker), and for real (two built copies with different versions imported by one Node process).
 */
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { claimStreamRegistry, DuplicateEnvironmentError, ENVIRONMENT_VERSION, REGISTRY_MARKER } from "./single-copy.js";

const packageRoot = fileURLToPath(new URL("../../", import.meta.url));
const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

describe("one stream registry per process", () => {
  it("the version is the package.json's", () => {
    const manifest = JSON.parse(readFileSync(join(packageRoot, "package.json"), "utf8")) as { version: string };
    expect(ENVIRONMENT_VERSION, "read through the #manifest import").toBe(manifest.version);
  });

  it("a copy from another URL is refused, naming both copies, and the first keeps the claim", () => {
    const realm = {};
    claimStreamRegistry({ version: "1.0.0", url: "file:///app/node_modules/@weft/environment/dist/stream/stream-id.js" }, realm);
    let thrown: unknown;
    try {
      claimStreamRegistry({ version: "1.1.0", url: "file:///app/node_modules/@weft/fusion/node_modules/@weft/environment/dist/stream/stream-id.js" }, realm);
    } catch (error) {
      thrown = error;
    }
    expect(thrown, "the second copy's load throws the typed error").toBeInstanceOf(DuplicateEnvironmentError);
    const error = thrown as DuplicateEnvironmentError;
    expect(error.kind).toBe("duplicate-environment");
    expect(error.message, "names both versions").toMatch(/1\.0\.0 .* 1\.1\.0/);
    expect(error.message, "names both paths").toContain("@weft/fusion/node_modules/@weft/environment");
    expect(error.message, "says how to fix it").toContain("npm ls @weft/environment");
    expect((realm as Record<symbol, { version: string }>)[REGISTRY_MARKER]?.version, "the first copy keeps the registry").toBe("1.0.0");
  });

  it("the same copy loaded again (same URL) takes the claim over without an error", () => {
    const realm = {};
    const url = "file:///app/node_modules/@weft/environment/dist/stream/stream-id.js";
    claimStreamRegistry({ version: "1.0.0", url }, realm);
    expect(() => claimStreamRegistry({ version: "1.0.0", url }, realm), "a re-evaluation of one file is not a second copy").not.toThrow();
  });

  it("two installed copies of different versions in one Node process: the second import fails with the typed error", () => {
    const dist = join(packageRoot, "dist");
    expect(existsSync(join(dist, "index.js")), "the test runs after the package's build (nx test depends on build)").toBe(true);
    const app = mkdtempSync(join(tmpdir(), "weft-two-copies-"));
    scratch.push(app);
    const copies = [
      { dir: join(app, "node_modules", "@weft", "environment"), version: ENVIRONMENT_VERSION },
      { dir: join(app, "node_modules", "@weft", "fusion", "node_modules", "@weft", "environment"), version: "99.0.0" },
    ];
    for (const copy of copies) {
      cpSync(dist, join(copy.dir, "dist"), { recursive: true });
      const manifest = JSON.parse(readFileSync(join(packageRoot, "package.json"), "utf8")) as Record<string, unknown>;
      writeFileSync(join(copy.dir, "package.json"), JSON.stringify({ ...manifest, version: copy.version }));
    }
    const script = [
      `const first = await import(${JSON.stringify(pathToFileURL(join(copies[0]!.dir, "dist", "index.js")).href)});`,
      "first.StreamId.current();",
      "try {",
      `  await import(${JSON.stringify(pathToFileURL(join(copies[1]!.dir, "dist", "index.js")).href)});`,
      "  console.log('loaded twice');",
      "} catch (error) {",
      // The error is the second copy's class (its own WeftError), so it is recognised by name.
      "  console.log(error.name === 'DuplicateEnvironmentError' ? 'refused' : 'other error', error.kind, error.message);",
      "}",
    ].join("\n");
    const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], { cwd: app, encoding: "utf8" });
    expect(run.stderr, "no crash besides the refusal").toBe("");
    expect(run.stdout, "the second copy is refused with the typed error").toMatch(/^refused duplicate-environment /);
    expect(run.stdout, "the message names the first version").toContain(ENVIRONMENT_VERSION);
    expect(run.stdout, "and the second").toContain("99.0.0");
    expect(run.stdout, "and the second's path").toContain("@weft/fusion/node_modules/@weft/environment");
  });
});
