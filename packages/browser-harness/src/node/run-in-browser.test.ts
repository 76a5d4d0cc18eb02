/**
 * How `runInBrowser` bundles `@weft/*` imports: every specifier, subpaths included, resolves to the
 * sibling package's source (what vitest does), and the page-side entry carries no `node:` import.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { weftSourceAlias } from "./run-in-browser.js";

const packages = fileURLToPath(new URL("../../../", import.meta.url));

describe("weftSourceAlias", () => {
  it("maps a bare package to its src/index.ts", () => {
    expect(weftSourceAlias("@weft/tensor"), "the package's source barrel").toBe(`${packages}tensor/src/index.ts`);
  });

  it("maps a subpath through the package's exports (dist/x.js → src/x.ts)", () => {
    expect(weftSourceAlias("@weft/tensor/testing/core"), "tensor exports ./testing/core as dist/testing/core.js").toBe(`${packages}tensor/src/testing/core.ts`);
    expect(weftSourceAlias("@weft/browser-harness/page"), "the harness's page-side entry").toBe(`${packages}browser-harness/src/page/index.ts`);
    expect(weftSourceAlias("@weft/browser-harness"), "the harness's Node-side entry").toBe(`${packages}browser-harness/src/index.ts`);
  });

  it("falls back to src/<sub>/index.ts for a folder the exports do not name", () => {
    expect(weftSourceAlias("@weft/backend-webgpu/codegen"), "a folder with an index.ts").toBe(`${packages}backend-webgpu/src/codegen/index.ts`);
  });

  it("answers undefined for what is not a sibling package's source", () => {
    expect(weftSourceAlias("@weft/no-such-package"), "no packages/<pkg>/package.json").toBeUndefined();
    expect(weftSourceAlias("@weft/tensor/no/such/sub"), "no file for the subpath").toBeUndefined();
    expect(weftSourceAlias("webgpu"), "not a @weft specifier").toBeUndefined();
  });

  it("the page-side entry and the registry it re-exports import nothing from node:", () => {
    for (const file of ["../page/index.ts", "../page/registry.ts"]) {
      const source = readFileSync(fileURLToPath(new URL(file, import.meta.url)), "utf8");
      expect(source, `${file} must bundle for a browser`).not.toMatch(/from\s+["']node:/);
    }
  });
});
