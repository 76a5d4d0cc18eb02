/**
 * `npm run bench`: Weft's benchmark suite (docs/performance.md), one process, every library on one
 * `GPUDevice`, each workload reported by throughput and latency, and the targets as ratios
 * measured side by side. See BENCHMARKS.md for the workloads, the targets and how to run it on
 * the GPU machine.
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import { requestWebGpuDevice } from "@weft/backend-webgpu";
import { setDevice } from "@weft/tensor";
import { type BenchContext, type Peer, repeatsFor, sizesFor, WORKLOADS, type WorkloadName } from "./context.js";
import { OptionsError, parseOptions, USAGE } from "./options.js";
import { runCpuBench } from "./cpu/run-cpu.js";
import { errorText } from "./harness/measure.js";
import { printReport, Report } from "./harness/report.js";
import { createJaxPeer, type JaxPeer } from "./peers/jax.js";
import { installNavigatorShim } from "./peers/navigator.js";
import { RawGpu } from "./peers/raw-webgpu.js";
import { createTfPeer, type TfPeer } from "./peers/tfjs.js";
import { createWeftVariant, type WeftVariant } from "./peers/weft.js";
import { runChain } from "./workloads/chain.js";
import { runHostOverhead } from "./workloads/host-overhead.js";
import { runMatmul } from "./workloads/matmul.js";
import { runMemory } from "./workloads/memory.js";
import { runReadback } from "./workloads/readback.js";
import { runReduction } from "./workloads/reduction.js";
import { runSmallTensors } from "./workloads/small-tensors.js";
import { runRemoteServing } from "./workloads/remote-serving.js";

async function peer<T>(what: string, make: () => Promise<T>): Promise<Peer<T>> {
  try {
    return { ok: true, value: await make() };
  } catch (error) {
    const reason = errorText(error);
    console.log(`  ${what}: unavailable (${reason})`);
    return { ok: false, reason };
  }
}

const RUNNERS: Record<WorkloadName, (ctx: BenchContext) => Promise<void>> = {
  chain: runChain,
  readback: runReadback,
  reduction: runReduction,
  matmul: runMatmul,
  host: runHostOverhead,
  small: runSmallTensors,
  memory: runMemory,
  remote: runRemoteServing,
};

async function main(): Promise<void> {
  let options;
  try {
    options = parseOptions(process.argv.slice(2));
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
  const gpu = await requestWebGpuDevice({ backend: options.backend });
  gpu.device.addEventListener?.("uncapturederror", (event) => {
    console.log(`  GPU validation error: ${errorText((event as GPUUncapturedErrorEvent).error.message)}`);
  });
  const info = gpu.info;
  console.log(`bench: ${options.quick ? "quick" : "full"} mode on ${info.description} (${info.backend}${info.software ? ", software" : ""}), node ${process.version}`);
  const sizes = sizesFor(options.quick, gpu);
  const weft = await peer<WeftVariant>("weft fused", () => createWeftVariant(gpu, true));
  const weftUnfused = await peer<WeftVariant>("weft unfused", () => createWeftVariant(gpu, false));
  if (weft.ok) setDevice(weft.value.device);
  installNavigatorShim(gpu.device, gpu.adapter);
  const tf = await peer<TfPeer>("tfjs", () => createTfPeer(gpu.device, gpu.adapter.info));
  const jax = await peer<JaxPeer>("jax-js", () => createJaxPeer());
  const report = new Report();
  const ctx: BenchContext = {
    options,
    report,
    gpu,
    raw: new RawGpu(gpu.device),
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
    console.log(`workload ${name}`);
    try {
      await RUNNERS[name](ctx);
    } catch (error) {
      report.add({ workload: name, variant: "(workload)", method: "count", size: "", status: `failed: ${errorText(error)}` });
    }
  }
  const header = `Weft benchmarks — ${info.description} (${info.backend}${info.software ? ", software adapter: absolute figures are not GPU figures" : ""}), ${options.quick ? "quick" : "full"} mode, ${started.toISOString()}`;
  printReport(report, header);
  if (options.json !== undefined) {
    const json = {
      date: started.toISOString(),
      mode: options.quick ? "quick" : "full",
      adapter: info,
      node: process.version,
      sizes,
      peers: { weft: weft.ok ? "ok" : weft.reason, weftUnfused: weftUnfused.ok ? "ok" : weftUnfused.reason, tfjs: tf.ok ? "ok" : tf.reason, jax: jax.ok ? "ok" : jax.reason },
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
