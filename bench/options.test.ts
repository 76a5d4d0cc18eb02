import { describe, expect, it } from "vitest";
import { PEERS, WORKLOADS } from "./context.js";
import { CPU_WORKLOADS } from "./cpu/cpu-context.js";
import { OptionsError, parseOptions } from "./options.js";

describe("parseOptions", () => {
  it("defaults to every workload, full sizes and the automatic backend", () => {
    const o = parseOptions([]);
    expect(o).not.toBe("help");
    if (o === "help") return;
    expect(o.quick).toBe(false);
    expect(o.backend).toBe("auto");
    expect([...o.only]).toEqual([...WORKLOADS]);
  });

  it("reads --quick, --backend, --json and --only", () => {
    const o = parseOptions(["--quick", "--backend", "vulkan", "--json", "out.json", "--only", "chain,matmul"]);
    if (o === "help") throw new Error("not help");
    expect(o).toMatchObject({ quick: true, backend: "vulkan", json: "out.json" });
    expect([...o.only]).toEqual(["chain", "matmul"]);
  });

  it("rejects an unknown workload, naming the known ones", () => {
    expect(() => parseOptions(["--only", "chian"])).toThrow(OptionsError);
    expect(() => parseOptions(["--only", "chian"])).toThrow(/known: chain/);
  });

  it("--backend cpu selects the CPU section, whose workloads --only checks against", () => {
    const o = parseOptions(["--backend", "cpu"]);
    if (o === "help") throw new Error("not help");
    expect([...o.only]).toEqual([...CPU_WORKLOADS]);
    const some = parseOptions(["--backend", "cpu", "--only", "serving,matmul"]);
    if (some === "help") throw new Error("not help");
    expect([...some.only]).toEqual(["serving", "matmul"]);
    expect(() => parseOptions(["--backend", "cpu", "--only", "readback"]), "a GPU workload is not a CPU one").toThrow(/known with --backend cpu: chain/);
  });

  it("rejects an unknown backend and a missing value", () => {
    expect(() => parseOptions(["--backend", "metal"])).toThrow(/vulkan, opengles, auto or cpu/);
    expect(() => parseOptions(["--json"])).toThrow(/needs a value/);
    expect(() => parseOptions(["--json", "--quick"]), "an option is not a file name").toThrow(/needs a value/);
  });

  it("reads --runs, --isolate and --peers; defaults to one shared run of every library", () => {
    const d = parseOptions([]);
    if (d === "help") throw new Error("not help");
    expect(d).toMatchObject({ runs: 1, placement: "shared" });
    expect([...d.peers]).toEqual([...PEERS]);
    const o = parseOptions(["--runs", "3", "--isolate", "--peers", "weft,tfjs"]);
    if (o === "help") throw new Error("not help");
    expect(o).toMatchObject({ runs: 3, placement: "isolated" });
    expect([...o.peers]).toEqual(["weft", "tfjs"]);
    expect(() => parseOptions(["--runs", "0"])).toThrow(/--runs must be a whole number/);
    expect(() => parseOptions(["--runs", "2.5"])).toThrow(/--runs must be a whole number/);
    expect(() => parseOptions(["--peers", "torch"])).toThrow(/unknown library 'torch'.*known: raw, weft, tfjs, jax/);
    expect(() => parseOptions(["--backend", "cpu", "--isolate"]), "the CPU section runs in one process").toThrow(/--isolate is for the GPU section/);
  });
});
