/**
 * `weft`'s own properties: the device choice (with an injected adapter probe), the demo's oracle
 * check on the CPU, `doctor`'s report, the CLI's argument handling, and the re-exported API.
 */
import { describe, expect, it } from "vitest";
import { BackendUnavailableError, chooseDevice, init } from "./device/init.js";
import { createCpuDevice } from "./device/backends.js";
import { runDemo } from "./cli/demo.js";
import { runDoctor } from "./cli/doctor.js";
import { runBench } from "./cli/bench.js";
import { UsageError, main, parseArgs } from "./cli/main.js";
import { ProgressBar } from "./cli/progress.js";
import * as weft from "./index.js";

function collector(isTTY = false): { out: { write(t: string): void; isTTY: boolean }; text: () => string } {
  let text = "";
  return { out: { write: (t: string) => void (text += t), isTTY }, text: () => text };
}

const noAdapter = () => Promise.resolve({ available: false, reason: "navigator.gpu is undefined" });

describe("init", () => {
  it("picks the cpu when the probe finds no adapter, and says why", async () => {
    const lines: string[] = [];
    const device = await init({ probe: noAdapter, log: (l) => lines.push(l) });
    expect(device.backend, "auto must fall back to the CPU without an adapter").toBe("cpu");
    expect(weft.device(), "init makes its device the current one").toBe(device);
    expect(lines, "init prints exactly one line naming the backend and the reason").toEqual(["weft: using cpu (no WebGPU adapter: navigator.gpu is undefined)"]);
  });

  it("an explicit webgpu request without an adapter throws a typed error instead of falling back", async () => {
    await expect(chooseDevice({ backend: "webgpu", probe: noAdapter })).rejects.toBeInstanceOf(BackendUnavailableError);
  });

  it("an explicit cpu request never probes", async () => {
    const choice = await chooseDevice({ backend: "cpu", probe: () => Promise.reject(new Error("must not probe")) });
    expect(choice.backend).toBe("cpu");
  });
});

describe("the re-exported API", () => {
  it("computes through the current device, and memory() returns to zero live tensors", async () => {
    await init({ backend: "cpu", log: null });
    const before = weft.memory().liveTensors;
    const a = weft.tensor([[1, 2], [3, 4]]);
    const b = weft.tidy(() => weft.ones([2, 2]).add(a).mul(3));
    expect(await b.array(), "(1 + a) * 3").toEqual([[6, 9], [12, 15]]);
    const s = weft.tidy(() => b.exp().sum());
    expect(await s.item(), "tidy keeps its result").toBeCloseTo(Math.exp(6) + Math.exp(9) + Math.exp(12) + Math.exp(15), -2);
    a.dispose();
    b.dispose();
    s.dispose();
    await weft.syncAll();
    expect(weft.memory().liveTensors, "every tensor created here was disposed").toBe(before);
  });

  it.each(["single", "per-task"] as const)("runs requests on their own streams under Stream.spawn (policy %s)", async (policy) => {
    await init({ backend: "cpu", log: null });
    const saved = weft.getStreamPolicy();
    weft.setStreamPolicy(policy);
    try {
      const ids = await Promise.all([0, 1, 2].map(() => weft.Stream.spawn(async () => weft.StreamId.current())));
      expect(new Set(ids).size, "each spawned task gets its own stream, whatever the policy").toBe(3);
      expect(ids.includes(weft.StreamId.DEFAULT), "never the root stream").toBe(false);
    } finally {
      weft.setStreamPolicy(saved);
    }
  });

  it("warmup runs the function and restores execution afterwards", async () => {
    await init({ backend: "cpu", log: null });
    let ran = false;
    await weft.warmup(() => {
      ran = true;
      weft.ones([4]).mul(2).dispose();
    });
    expect(ran, "warmup calls the function").toBe(true);
    const t = weft.ones([2]).mul(2);
    expect(Array.from(await t.data()), "launches after warmup execute again").toEqual([2, 2]);
    t.dispose();
  });
});

describe("weft demo", () => {
  it("serves concurrent requests on the cpu and every result matches the unfused oracle", async () => {
    const { out, text } = collector();
    const report = await runDemo({ device: createCpuDevice(), requests: 4, batch: 2, out });
    expect(report.mismatches, text()).toBe(0);
    expect(report.fusedBlocks, "the fused CPU backend must fuse part of the MLP").toBeGreaterThan(0);
    expect(text(), "the report prints latency percentiles").toMatch(/p50 .* ms, p95 .* ms/);
    expect(text(), "non-TTY progress prints whole lines, no carriage returns").not.toContain("\r");
  });
});

describe("weft doctor and bench", () => {
  it("doctor reports the missing adapter and the cpu choice", async () => {
    const { out, text } = collector();
    const chosen = await runDoctor({ out, probe: noAdapter });
    expect(chosen.backend).toBe("cpu");
    expect(text()).toContain("webgpu adapter: none (navigator.gpu is undefined)");
    expect(text()).toContain("chosen backend: cpu");
    expect(text(), "which kernel path the CPU backend takes").toContain("cpu backend kernels: elementwise: generated JavaScript (new Function is allowed); matmul: WebAssembly SIMD");
  });

  it("a CPU device's label names its kernel paths (what `weft demo --backend cpu` prints)", () => {
    expect(createCpuDevice().label).toBe("cpu (generated kernels, WebAssembly SIMD matmul)");
    expect(createCpuDevice({ fusion: false, kernels: "interpreted" }).label).toBe("cpu unfused (interpreted kernels, WebAssembly SIMD matmul)");
  });

  it("bench reports fused and unfused times, their spread and which is faster", async () => {
    const { out, text } = collector();
    const report = await runBench({ fused: createCpuDevice(), unfused: createCpuDevice({ fusion: false }), out, size: 4096, iterations: 2, runs: 3 });
    expect(Number.isFinite(report.speedup) && report.speedup > 0, "the ratio is a positive number").toBe(true);
    expect(report.fused.runsMs.length, "one figure per run").toBe(3);
    expect(text()).toMatch(/fused is [0-9.]+× (faster|slower) than unfused/);
    expect(text(), "the spread between runs is printed").toMatch(/spread [0-9.]+–[0-9.]+ over 3 runs/);
  });
});

describe("the CLI", () => {
  it("parses --backend and --requests and rejects bad values", () => {
    expect(parseArgs(["demo", "--backend", "cpu", "--requests", "3"])).toMatchObject({ command: "demo", backend: "cpu", requests: 3 });
    expect(() => parseArgs(["demo", "--backend", "tpu"])).toThrow(UsageError);
    expect(() => parseArgs(["demo", "--requests", "0"])).toThrow(/positive integer/);
  });

  it("exits 2 with the usage on an unknown command", async () => {
    const out = collector();
    const err = collector();
    expect(await main(["frobnicate"], out.out, err.out)).toBe(2);
    expect(err.text()).toContain("usage: weft");
  });

  it("a TTY progress bar redraws in place", () => {
    const { out, text } = collector(true);
    const bar = new ProgressBar(out, "x", 2);
    bar.tick();
    bar.tick();
    bar.finish();
    expect(text().split("\r").length, "each tick rewrites the line").toBeGreaterThan(2);
    expect(text().endsWith("2/2\n"), "finish ends the line").toBe(true);
  });
});
