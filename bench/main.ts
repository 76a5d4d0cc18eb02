/**
 * `npm run bench`: Weft's benchmark suite (docs/performance.md and issue "Speed at the hardware limit"),
 * every library on one `GPUDevice` in one process (or, with `--isolate`, each in its own process),
 * each workload reported by throughput and latency, and the targets (`./targets.ts`) evaluated from
 * the measurements with their ids, bars, verdicts and spread between runs (`--runs`). See
 * BENCHMARKS.md for the workloads, the targets and how to run it on the GPU machine.
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { requestWebGpuDevice } from "@weft/backend-webgpu";
import { setDevice } from "@weft/tensor";
import { type BenchContext, type BenchOptions, createPeer, NOT_SELECTED, type Peer, PEERS, repeatsFor, type Sizes, sizesFor, WORKLOADS, type WorkloadName } from "./context.js";
import { OptionsError, parseOptions, USAGE } from "./options.js";
import { runCpuBench } from "./cpu/run-cpu.js";
import { errorText } from "./harness/measure.js";
import { type Measurement, printReport, type Ratio, Report } from "./harness/report.js";
import { createJaxPeer, type JaxPeer } from "./peers/jax.js";
import { installNavigatorShim } from "./peers/navigator.js";
import { RawGpu } from "./peers/raw-webgpu.js";
import { createTfPeer, type TfPeer } from "./peers/tfjs.js";
import { createWeftVariant, type WeftVariant } from "./peers/weft.js";
import { aggregate, targetsFor } from "./targets.js";
import { runChain } from "./workloads/chain.js";
import { runDependent } from "./workloads/dependent.js";
import { runHostOverhead } from "./workloads/host-overhead.js";
import { runMatmul } from "./workloads/matmul.js";
import { runMemory } from "./workloads/memory.js";
import { runReadback } from "./workloads/readback.js";
import { runReduction } from "./workloads/reduction.js";
import { runServing } from "./workloads/serving.js";
import { runTraining } from "./workloads/training.js";
import { runSmallTensors } from "./workloads/small-tensors.js";
import { runRemoteServing } from "./workloads/remote-serving.js";

const RUNNERS: Record<WorkloadName, (ctx: BenchContext) => Promise<void>> = {
  chain: runChain,
  readback: runReadback,
  reduction: runReduction,
  matmul: runMatmul,
  host: runHostOverhead,
  dependent: runDependent,
  small: runSmallTensors,
  serving: runServing,
  training: runTraining,
  memory: runMemory,
  remote: runRemoteServing,
};

/** Workloads that measure Weft alone: an isolated process without Weft skips them. */
const WEFT_ONLY: ReadonlySet<WorkloadName> = new Set(["memory", "remote"]);

/** What one process measured: every run's measurements (and the single-library ratios workloads record). */
interface Measured {
  readonly adapter: unknown;
  readonly sizes: Sizes;
  readonly peers: Record<string, string>;
  readonly runs: Measurement[][];
  readonly ratios: Ratio[];
}

/** Runs the selected workloads `options.runs` times in this process, with the libraries of `options.peers`. */
async function measureHere(options: BenchOptions): Promise<Measured> {
  if (options.backend === "cpu") throw new Error("the CPU section has its own runner (bench/cpu/run-cpu.ts)");
  const gpu = await requestWebGpuDevice({ backend: options.backend });
  gpu.device.addEventListener?.("uncapturederror", (event) => {
    console.log(`  GPU validation error: ${errorText((event as GPUUncapturedErrorEvent).error.message)}`);
  });
  const info = gpu.info;
  console.log(`bench: ${options.quick ? "quick" : "full"} mode on ${info.description} (${info.backend}${info.software ? ", software" : ""}), node ${process.version}, libraries: ${[...options.peers].join(", ")}`);
  const sizes = sizesFor(options.quick, gpu);
  const raw = await createPeer<RawGpu>(options, "raw", "raw webgpu", async () => new RawGpu(gpu.device));
  const weft = await createPeer<WeftVariant>(options, "weft", "weft fused", () => createWeftVariant(gpu, true));
  const weftUnfused = await createPeer<WeftVariant>(options, "weft", "weft unfused", () => createWeftVariant(gpu, false));
  if (weft.ok) setDevice(weft.value.device);
  installNavigatorShim(gpu.device, gpu.adapter);
  const tf = await createPeer<TfPeer>(options, "tfjs", "tfjs", () => createTfPeer(gpu.device, gpu.adapter.info));
  const jax = await createPeer<JaxPeer>(options, "jax", "jax-js", () => createJaxPeer());
  const runs: Measurement[][] = [];
  const ratios: Ratio[] = [];
  for (let run = 0; run < options.runs; run++) {
    if (options.runs > 1) console.log(`run ${run + 1} of ${options.runs}`);
    const report = new Report();
    const ctx: BenchContext = {
      options,
      report,
      gpu,
      raw,
      weft,
      weftUnfused,
      tf,
      jax,
      sizes,
      repeats: (bytes) => repeatsFor(options.quick, sizes, bytes),
      freshWeft: (fusion) => createWeftVariant(gpu, fusion),
    };
    for (const name of WORKLOADS) {
      if (!options.only.has(name)) continue;
      if (WEFT_ONLY.has(name) && !options.peers.has("weft")) continue;
      console.log(`workload ${name}`);
      try {
        await RUNNERS[name](ctx);
      } catch (error) {
        report.add({ workload: name, variant: "(workload)", method: "count", size: "", status: `failed: ${errorText(error)}` });
      }
      await betweenWorkloads(ctx);
    }
    runs.push(report.measurements.map((m) => (options.runs > 1 ? { ...m, run } : m)));
    ratios.push(...report.ratios.map((r) => (options.runs > 1 ? { ...r, note: [`run ${run + 1}`, r.note].filter((n) => n !== undefined).join("; ") } : r)));
  }
  const state = (p: Peer<unknown>): string => (p.ok ? "ok" : p.reason);
  return { adapter: info, sizes, peers: { raw: state(raw), weft: state(weft), weftUnfused: state(weftUnfused), tfjs: state(tf), jax: state(jax) }, runs, ratios };
}

/**
 * Ends one workload's memory before the next starts: Weft's devices give their free pages back
 * (`releaseUnused`), then one empty submit and a wait let Dawn run the buffer destructions it
 * defers to a later submit. Without this, the chain workload's 1 GiB pages were destroyed by
 * Dawn inside a submit of a later workload: on the H200 (2026-11-30 06:47 UTC, a logging preload
 * on `--only chain,serving`) such submits took 53–87 ms, and in full runs a serving round held
 * one (p99 174–239 ms with a p50 of 10–20 ms). One workload's teardown is not the next one's time.
 */
async function betweenWorkloads(ctx: BenchContext): Promise<void> {
  for (const peer of [ctx.weft, ctx.weftUnfused]) {
    if (!peer.ok) continue;
    await peer.value.device.syncAll();
    peer.value.device.releaseUnused();
  }
  const queue = ctx.gpu.device.queue;
  queue.submit([]);
  await queue.onSubmittedWorkDone();
}

/**
 * `--isolate`: for each run, each library of `options.peers` in its own child process (this bundle
 * again, with `--peers <one> --runs 1 --json <tmp>`), one after the other; their measurements are
 * merged run by run.
 */
function measureIsolated(options: BenchOptions, argv: readonly string[]): Measured {
  const self = fileURLToPath(import.meta.url);
  const dir = mkdtempSync(join(tmpdir(), "weft-bench-"));
  const passOn: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--isolate") continue;
    if (a === "--json" || a === "--runs" || a === "--peers") {
      i++;
      continue;
    }
    passOn.push(a);
  }
  const runs: Measurement[][] = [];
  const ratios: Ratio[] = [];
  const peers: Record<string, string> = {};
  let adapter: unknown;
  let sizes: Sizes | undefined;
  try {
    for (let run = 0; run < options.runs; run++) {
      const merged: Measurement[] = [];
      for (const name of PEERS.filter((p) => options.peers.has(p))) {
        console.log(`isolated run ${run + 1} of ${options.runs}: ${name} in its own process`);
        const out = join(dir, `${name}-${run}.json`);
        const child = spawnSync(process.execPath, [self, ...passOn, "--peers", name, "--runs", "1", "--json", out], { stdio: "inherit", env: process.env });
        if (child.status !== 0) {
          merged.push({ workload: "(process)", variant: name, method: "count", size: "", status: `failed: its process exited with ${String(child.status ?? child.signal)}` });
          continue;
        }
        const json = JSON.parse(readFileSync(out, "utf8")) as { adapter: unknown; sizes: Sizes; peers: Record<string, string>; measurements: Measurement[]; ratios: Ratio[] };
        adapter = json.adapter;
        sizes = json.sizes;
        for (const [k, v] of Object.entries(json.peers)) if (v !== NOT_SELECTED) peers[k] = v;
        merged.push(...json.measurements.map((m) => (options.runs > 1 ? { ...m, run } : m)));
        // The child evaluated the targets on its own rows too; only the parent's evaluation on the merge counts.
        const targetIds = new Set(targetsFor(json.sizes, options.quick).map((t) => t.id));
        ratios.push(...json.ratios.filter((r) => r.id === undefined || !targetIds.has(r.id)));
      }
      runs.push(merged);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  if (sizes === undefined) throw new Error("no isolated process produced results");
  return { adapter, sizes, peers, runs, ratios };
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  let options;
  try {
    options = parseOptions(argv);
  } catch (error) {
    if (!(error instanceof OptionsError)) throw error;
    console.error(`bench: ${error.message}\n${USAGE}`);
    process.exit(2);
  }
  if (options === "help") {
    console.log(USAGE);
    process.exit(0);
  }
  if (options.backend === "cpu") {
    await runCpuBench(options);
    return;
  }
  const started = new Date();
  const measured = options.placement === "isolated" ? measureIsolated(options, argv) : await measureHere(options);
  const report = new Report();
  for (const ms of measured.runs) report.measurements.push(...ms);
  const targets = targetsFor(measured.sizes, options.quick).filter((t) => options.only.has(t.workload));
  for (const t of targets) report.addRatio(aggregate(t, measured.runs));
  for (const r of measured.ratios) report.addRatio(r);
  const info = measured.adapter as { description?: string; backend?: string; software?: boolean };
  const where = options.placement === "isolated" ? "each library in its own process" : `libraries in one process: ${[...options.peers].join(", ")}`;
  const header = `Weft benchmarks — ${info.description ?? "?"} (${info.backend ?? "?"}${info.software === true ? ", software adapter: absolute figures are not GPU figures" : ""}), ${options.quick ? "quick" : "full"} mode, ${where}, ${options.runs} run${options.runs > 1 ? "s" : ""}, ${started.toISOString()}`;
  printReport(report, header);
  if (options.json !== undefined) {
    const json = {
      date: started.toISOString(),
      mode: options.quick ? "quick" : "full",
      placement: options.placement,
      runs: options.runs,
      adapter: measured.adapter,
      node: process.version,
      sizes: measured.sizes,
      peers: measured.peers,
      measurements: report.measurements,
      ratios: report.ratios,
    };
    writeFileSync(options.json, `${JSON.stringify(json, null, 2)}\n`);
    console.log(`\nbench: wrote ${options.json}`);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
