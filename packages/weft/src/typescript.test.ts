/**
 * The published types work for consumers under the compiler settings the README documents:
 * `typescript-consumer/consumer.mts` imports `@weft/weft` by name (its built `dist`, through the
 * package's `exports`) and is typechecked with `moduleResolution` `node16` and `bundler`, with
 * `skipLibCheck` off so the declarations themselves are checked. Without the `esnext.disposable`
 * lib the check must fail on `Symbol.dispose`: that is why the README asks for it.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";

const consumer = fileURLToPath(new URL("../typescript-consumer/", import.meta.url));
const tsc = fileURLToPath(new URL("../../../node_modules/typescript/bin/tsc", import.meta.url));

interface Outcome {
  readonly status: number;
  readonly output: string;
}

function typecheck(config: string): Promise<Outcome> {
  return new Promise((resolve) => {
    execFile(process.execPath, [tsc, "-p", `${consumer}${config}`], (error, stdout, stderr) => {
      const code = (error as { code?: unknown } | null)?.code;
      resolve({ status: error === null ? 0 : typeof code === "number" ? code : 1, output: `${stdout}${stderr}` });
    });
  });
}

const CONFIGS = ["tsconfig.node16.json", "tsconfig.bundler.json", "tsconfig.no-disposable.json"] as const;
const outcomes = new Map<string, Outcome>();

describe("the published types", () => {
  // The three compilations run side by side (each takes seconds).
  beforeAll(async () => {
    const results = await Promise.all(CONFIGS.map((c) => typecheck(c)));
    CONFIGS.forEach((c, i) => outcomes.set(c, results[i] as Outcome));
  }, 180_000);

  it.each(["tsconfig.node16.json", "tsconfig.bundler.json"])("typecheck a consumer under %s", (config) => {
    const r = outcomes.get(config) as Outcome;
    expect(r.output, "no type error in the consumer or in the declarations").toBe("");
    expect(r.status).toBe(0);
  });

  it("need the esnext.disposable lib (the README says so)", () => {
    const r = outcomes.get("tsconfig.no-disposable.json") as Outcome;
    expect(r.status, "without it the declarations do not typecheck").not.toBe(0);
    expect(r.output).toMatch(/Symbol\.dispose|Disposable/);
  });
});
