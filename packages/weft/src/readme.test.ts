/**
 * The root README's example, run as it stands (on the device `init()` picks, and on WebGPU): its
 * values are right and it leaves no tensor, no handle and no device memory behind.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as weft from "./index.js";

/** The first `ts` code block under "## Using it", without its import line. */
function readmeExample(): string {
  const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");
  const section = readme.slice(readme.indexOf("## Using it"));
  const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error("README.md has no ts block under '## Using it'");
  const importLine = /^import \* as weft from "@weft\/weft";\n/m;
  expect(block, "the example imports the package as users do").toMatch(importLine);
  return block.replace(importLine, "");
}

type Example = (w: typeof weft, console: { log: (...args: unknown[]) => void }) => Promise<void>;
const AsyncFunction = Object.getPrototypeOf(async () => undefined).constructor as new (...args: string[]) => Example;

async function runExample(code: string): Promise<unknown[][]> {
  const logs: unknown[][] = [];
  await new AsyncFunction("weft", "console", code)(weft, { log: (...args: unknown[]) => logs.push(args) });
  return logs;
}

describe("the README example", () => {
  it.each([
    ["the device init() picks", (code: string) => code],
    ["WebGPU", (code: string) => code.replace("weft.init()", 'weft.init({ backend: "webgpu" })')],
  ])("runs leak-free on %s", async (_name, adapt) => {
    const code = adapt(readmeExample());
    const logs = await runExample(code);
    const device = weft.device();
    const [values, sums, live] = logs[logs.length - 1] ?? [];
    const expected = [1, 2, 3, 4].map((v) => Math.fround(Math.exp((1 + v) * 3)));
    expect(Array.from(values as Float32Array).map((v, i) => v / (expected[i] ?? 1)), "exp(3(1 + a)) within f32 rounding").toEqual(expected.map((v) => expect.closeTo(1, 5)));
    expect(sums, "each task's sum of k·a").toEqual([10, 20, 30]);
    expect(live, "the example's own last line reports no live tensor").toBe(0);
    await weft.syncAll();
    const m = device.memory();
    expect({ liveTensors: m.liveTensors, liveHandles: m.liveHandles, bytesInUse: m.bytesInUse }, "nothing left once synced").toEqual({
      liveTensors: 0,
      liveHandles: 0,
      bytesInUse: 0,
    });
  });
});
