/**
 * The command line's small things: `--help` for the CLI and each command, `--version` from
 * package.json, the device choice and its reason (software adapters lose to the CPU under
 * `auto`), `doctor`'s reason, `bench`'s verdict and chart, and the native-warning filter.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { AdapterProbe } from "../device/backends.js";
import { decideBackend, describeReason } from "../device/backend-choice.js";
import { chooseDevice, init } from "../device/init.js";
import { benchChart, verdict } from "./bench.js";
import { runDoctor } from "./doctor.js";
import { COMMANDS, USAGE, main, parseArgs } from "./main.js";
import { NativeLogFilter, wantsNativeFilter } from "./native-log.js";

function collector(): { out: { write(t: string): void; isTTY: boolean }; text: () => string } {
  let text = "";
  return { out: { write: (t: string) => void (text += t), isTTY: false }, text: () => text };
}

const software: AdapterProbe = {
  available: true,
  reason: "opengles: OpenGL ES 3.2 Mesa",
  info: { description: "OpenGL ES 3.2 Mesa", vendor: "mesa", backend: "opengles", software: true },
};
const hardware: AdapterProbe = {
  available: true,
  reason: "vulkan: NVIDIA H200",
  info: { description: "NVIDIA H200", vendor: "nvidia", backend: "vulkan", software: false },
};

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out = collector();
  const err = collector();
  const code = await main(argv, out.out, err.out);
  return { code, out: out.text(), err: err.text() };
}

describe("help and version", () => {
  it("weft --help lists every command and exits 0", async () => {
    const r = await run(["--help"]);
    expect(r.code).toBe(0);
    for (const name of Object.keys(COMMANDS)) expect(r.out, `the help names ${name}`).toContain(`  ${name} `);
  });

  it.each(Object.keys(COMMANDS))("weft %s --help prints that command's options and exits 0", async (name) => {
    const r = await run([name, "--help"]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`usage: weft ${name}`);
    expect(r.err, "help is not an error").toBe("");
  });

  it("weft help bench is the same as weft bench --help", async () => {
    expect((await run(["help", "bench"])).out).toBe((await run(["bench", "--help"])).out);
  });

  it("weft --version prints package.json's version", async () => {
    const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
    const r = await run(["--version"]);
    expect(r.code).toBe(0);
    expect(r.out.trim()).toBe(manifest.version);
  });

  it("an unknown option names the command's own options", async () => {
    const r = await run(["bench", "--frobnicate"]);
    expect(r.code).toBe(2);
    expect(r.err).toContain("unknown option --frobnicate");
    expect(r.err, "the bench usage, not the general one").toContain("usage: weft bench");
  });

  it("no command prints the usage and exits 2", async () => {
    const r = await run([]);
    expect(r.code).toBe(2);
    expect(r.out).toBe(`${USAGE}\n`);
  });

  it("parses the bench options", () => {
    expect(parseArgs(["bench", "--runs", "7", "--svg", "out.svg"])).toMatchObject({ runs: 7, svg: "out.svg" });
    expect(parseArgs(["bench", "--no-svg"]).svg).toBeUndefined();
  });
});

describe("the device choice", () => {
  it("auto prefers the CPU when the only adapter is a software one, and says why", () => {
    const d = decideBackend("auto", software);
    expect(d.backend).toBe("cpu");
    if (d.backend !== "cpu") return;
    expect(d.reason.kind).toBe("software-adapter");
    expect(describeReason(d.reason), "one line naming the adapter and how to use it anyway").toMatch(/software one \(OpenGL ES 3\.2 Mesa\).*backend "webgpu"/);
    expect(describeReason(d.reason)).not.toContain("\n");
  });

  it("an explicit webgpu request uses the software adapter", () => {
    expect(decideBackend("webgpu", software)).toMatchObject({ backend: "webgpu", reason: { kind: "requested" } });
  });

  it("auto takes a hardware adapter", () => {
    expect(decideBackend("auto", hardware)).toMatchObject({ backend: "webgpu", reason: { kind: "hardware-adapter", adapter: "NVIDIA H200" } });
  });

  it("an explicit webgpu request without an adapter is unavailable; cpu never needs a probe", () => {
    expect(decideBackend("webgpu", { available: false, reason: "none" }).backend).toBe("unavailable");
    expect(decideBackend("cpu", undefined)).toEqual({ backend: "cpu", reason: { kind: "requested" } });
  });

  it("init with a software-only probe picks the CPU and prints the reason in one line", async () => {
    const lines: string[] = [];
    const device = await init({ probe: () => Promise.resolve(software), log: (l) => lines.push(l) });
    expect(device.backend).toBe("cpu");
    expect(lines.length).toBe(1);
    expect(lines[0]).toMatch(/^weft: using cpu \(the only WebGPU adapter is a software one/);
    const choice = await chooseDevice({ probe: () => Promise.resolve(software) });
    expect(choice.why.kind, "the reason as data").toBe("software-adapter");
  });
});

describe("weft doctor", () => {
  it("says why the CPU was chosen over a software adapter, without creating a device twice", async () => {
    const { out, text } = collector();
    const report = await runDoctor({
      out,
      probe: () => Promise.resolve(software),
      describe: () => Promise.resolve({ description: "OpenGL ES 3.2 Mesa", features: [], limits: { maxBufferSize: 1024 } }),
    });
    expect(report).toMatchObject({ backend: "cpu", why: { kind: "software-adapter" } });
    expect(text()).toContain("webgpu adapter: OpenGL ES 3.2 Mesa (software, vendor mesa, via opengles)");
    expect(text()).toContain("maxBufferSize: 1024");
    expect(text()).toMatch(/chosen backend: cpu \(the only WebGPU adapter is a software one/);
  });

  it("a device that cannot be created makes the choice the CPU, with the error", async () => {
    const { out, text } = collector();
    const report = await runDoctor({ out, probe: () => Promise.resolve(hardware), describe: () => Promise.reject(new Error("lost")) });
    expect(report).toMatchObject({ backend: "cpu", why: { kind: "device-failed", detail: "lost" } });
    expect(text()).toContain("chosen backend: cpu (WebGPU device creation failed: lost)");
  });
});

describe("weft bench's report", () => {
  it("says faster or slower from the medians", () => {
    expect(verdict(1, 2.5)).toBe("fused is 2.50× faster than unfused");
    expect(verdict(2, 1)).toBe("fused is 2.00× slower than unfused");
  });

  it("draws every run and both medians in a well-formed SVG", () => {
    const t = (label: string, runsMs: number[]) => ({
      label,
      runsMs,
      medianMs: [...runsMs].sort((a, b) => a - b)[1] ?? 0,
      minMs: Math.min(...runsMs),
      maxMs: Math.max(...runsMs),
    });
    const svg = benchChart(t("cpu <fused>", [1, 1.2, 1.1]), t("cpu", [3, 2.9, 3.3]), 1024);
    expect(svg.startsWith("<svg xmlns=\"http://www.w3.org/2000/svg\"")).toBe(true);
    expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
    expect(svg.match(/<circle /g)?.length, "one dot per run").toBe(6);
    expect(svg, "labels are escaped").toContain("cpu &lt;fused&gt;");
    expect(svg).toContain("1.10 ms");
    expect(svg).toContain("fused is 2.73× faster than unfused");
  });
});

describe("the native-warning filter", () => {
  it("drops Dawn's limit and Vulkan-loader warnings with their location lines, and nothing else", () => {
    const f = new NativeLogFilter();
    const input = [
      "Warning: maxDynamicUniformBuffersPerPipelineLayout artificially reduced from 90 to 16 to fit dynamic offset allocation limit.",
      "Warning: maxDynamicStorageBuffersPerPipelineLayout artificially reduced from 80 to 16 to fit dynamic offset allocation limit.",
      "Warning: Couldn't load Vulkan: libvulkan.so.1: cannot open shared object file: No such file or directory",
      "    at operator() (/dawn/src/dawn/native/vulkan/BackendVk.cpp:368)",
      "weft demo: a real error",
      "Warning: something the user should see",
      "    at here",
      "",
    ].join("\n");
    // Delivered in awkward chunks, as a pipe does.
    let out = "";
    for (let i = 0; i < input.length; i += 7) out += f.push(input.slice(i, i + 7));
    out += f.end();
    expect(out).toBe("weft demo: a real error\nWarning: something the user should see\n    at here\n");
  });

  it("filters only commands that may load Dawn, and can be turned off", () => {
    expect(wantsNativeFilter(["demo"], {})).toBe(true);
    expect(wantsNativeFilter(["demo", "--backend", "cpu"], {})).toBe(false);
    expect(wantsNativeFilter(["bench", "--help"], {})).toBe(false);
    expect(wantsNativeFilter(["--version"], {})).toBe(false);
    expect(wantsNativeFilter(["doctor"], { WEFT_NATIVE_LOG: "all" })).toBe(false);
    expect(wantsNativeFilter(["doctor"], { WEFT_NATIVE_LOG_FILTERED: "1" })).toBe(false);
  });
});
