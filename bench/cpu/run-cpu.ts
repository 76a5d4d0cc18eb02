/**
 * `npm run bench -- --backend cpu`: the CPU section — Weft's CPU backend side by side with
 * TF.js's CPU and WebAssembly backends, in one process, no GPU needed. See BENCHMARKS.md.
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { createCpuDevice } from "@weft/weft";
import { cpuThreads } from "@weft/backend-cpu";
import { type BenchOptions, createPeer } from "../context.js";
import { errorText } from "../harness/measure.js";
import { printReport, Report } from "../harness/report.js";
import { createTfCpuPeer, createTfWasmPeer, type TfHostPeer } from "../peers/tfjs-host.js";
import { type CpuBenchContext, CPU_WORKLOADS, cpuRepeats, type WeftCpu } from "./cpu-context.js";
import { CPU_RUNNERS, CPU_SIZES } from "./workloads.js";

/** Runs the CPU section with `options` (its `only` names CPU workloads). */
export async function runCpuBench(options: BenchOptions): Promise<void> {
  const started = new Date();
  const machine = `${cpus()[0]?.model ?? "unknown CPU"} × ${cpus().length}`;
  console.log(`bench: CPU section, ${options.quick ? "quick" : "full"} mode on ${machine}, node ${process.version}`);
  // `--peers`: the libraries this process creates (`weft`; `tfjs` is both TF.js backends).
  const weft = await createPeer<WeftCpu>(options, "weft", "weft cpu", () => {
    const device = createCpuDevice();
    // The thread count large matmuls use (1 on 2 cores or fewer; WEFT_CPU_THREADS overrides).
    const threads = cpuThreads();
    return { device, kernelPath: `${device.label}, matmul on ${threads} thread${threads === 1 ? "" : "s"} from 2^22 multiply-adds, elementwise from 2^18 estimated cost` };
  });
  const tfCpu = await createPeer<TfHostPeer>(options, "tfjs", "tfjs cpu", createTfCpuPeer);
  const tfWasm = await createPeer<TfHostPeer>(options, "tfjs", "tfjs wasm", createTfWasmPeer);
  if (weft.ok) console.log(`  weft: ${weft.value.kernelPath}`);
  if (tfWasm.ok) console.log(`  tfjs wasm: ${tfWasm.value.flavour}`);
  const report = new Report();
  const ctx: CpuBenchContext = { quick: options.quick, report, weft, tfCpu, tfWasm, repeats: cpuRepeats(options.quick) };
  for (const name of CPU_WORKLOADS) {
    if (!options.only.has(name)) continue;
    console.log(`workload ${name}`);
    try {
      await CPU_RUNNERS[name](ctx);
    } catch (error) {
      report.add({ workload: name, variant: "(workload)", method: "count", size: "", status: `failed: ${errorText(error)}` });
    }
  }
  printReport(report, `Weft CPU benchmarks — ${machine}, node ${process.version}, ${options.quick ? "quick" : "full"} mode, ${started.toISOString()}`);
  if (options.json !== undefined) {
    const json = {
      date: started.toISOString(),
      section: "cpu",
      mode: options.quick ? "quick" : "full",
      machine,
      node: process.version,
      sizes: CPU_SIZES,
      peers: {
        weft: weft.ok ? weft.value.kernelPath : weft.reason,
        tfjsCpu: tfCpu.ok ? tfCpu.value.flavour : tfCpu.reason,
        tfjsWasm: tfWasm.ok ? tfWasm.value.flavour : tfWasm.reason,
      },
      measurements: report.measurements,
      ratios: report.ratios,
    };
    writeFileSync(options.json, `${JSON.stringify(json, null, 2)}\n`);
    console.log(`\nbench: wrote ${options.json}`);
  }
}
