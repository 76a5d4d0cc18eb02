/**
 * `weft soak`: the serving pattern run for a long time, to show that nothing grows with the number
 * of requests, scalars, seeds, shapes or streams (docs/resource-bounds.md).
 *
 * @remarks
 * **Workload.** Steps of about a dozen ops each: most on the root stream (a decaying scalar per
 * step, a shape from a rotating set of `shapes` sizes, a fresh `rand` seed, a reduction), every
 * fourth step as a short task on its own stream (`Stream.spawn`, policy `per-task`) that borrows
 * the long-lived weights in a matmul. Deterministic: shapes, scalars and seeds come from the step
 * number.
 * **Samples.** Every `sampleEvery` steps: RSS, `memory()` (live tensors and handles, bytes
 * reserved) and `stats()` (pipelines held, plans, every cache's size). The report compares the
 * first sample after the warm-up (`warmup` of the steps) with the last and the largest, and
 * checks the bounds a user can rely on: live handles back to the baseline, every cache within its
 * capacity, no borrowed view left, and reserved bytes and pipelines no larger at the end than
 * after warm-up plus the slack of one cache-full (what LRU caches may still take).
 *
 * @module
 */
import { Stream, getStreamPolicy, setStreamPolicy } from "@weft/environment";
import { type Device, type Tensor, rand, randn, tidy } from "@weft/tensor";
import type { Output } from "./progress.js";

/** Options of {@link runSoak}. */
export interface SoakOptions {
  /** The device to soak. */
  readonly device: Device;
  /** Operations to record in all (default 1,000,000). */
  readonly ops?: number;
  /** Distinct tensor sizes cycled through (default 64): every one is a new shape. */
  readonly shapes?: number;
  /** Steps between two samples (default: about 20 samples over the run). */
  readonly sampleEvery?: number;
  /** Where the progress and the report go; `undefined` prints nothing. */
  readonly out?: Output;
}

/** One sample of what the device holds. */
export interface SoakSample {
  readonly step: number;
  readonly ops: number;
  /** Resident set size in bytes (`process.memoryUsage().rss`; 0 where there is no `process`). */
  readonly rss: number;
  readonly liveTensors: number;
  readonly liveHandles: number;
  readonly bytesReserved: number;
  readonly pipelines: number;
  readonly plans: number;
  readonly borrowedViews: number;
  /** Sum of the sizes of every cache `stats()` lists. */
  readonly cacheEntries: number;
}

/** What {@link runSoak} measured and checked. */
export interface SoakReport {
  readonly ops: number;
  readonly steps: number;
  readonly tasks: number;
  readonly samples: readonly SoakSample[];
  /** The bounds that did not hold (empty when everything stayed flat). */
  readonly problems: readonly string[];
  readonly seconds: number;
}

/** Ops one root step records (see `rootStep`). */
const ROOT_OPS = 11;
/** Ops one task step records (see `taskStep`). */
const TASK_OPS = 6;

function rss(): number {
  const p = (globalThis as { process?: { memoryUsage?: () => { rss: number } } }).process;
  return p?.memoryUsage?.().rss ?? 0;
}

function sample(device: Device, step: number, ops: number): SoakSample {
  const m = device.memory();
  const s = device.stats();
  let cacheEntries = 0;
  for (const c of Object.values(s.caches)) cacheEntries += c.size;
  return {
    step,
    ops,
    rss: rss(),
    liveTensors: m.liveTensors,
    liveHandles: m.liveHandles,
    bytesReserved: m.bytesReserved,
    pipelines: s.pipelines,
    plans: s.plans,
    borrowedViews: s.borrowedViews,
    cacheEntries,
  };
}

/** A root-stream step: new scalar, rotating shape, fresh seed, a reduction. 11 ops. */
async function rootStep(device: Device, step: number, shapes: number): Promise<void> {
  const n = 1 + ((step * 7919) % shapes);
  const lr = 0.1 * Math.pow(0.999, step);
  const y = tidy(() => {
    const x = rand([n, 4], { device, seed: step }); // 1
    const z = x.mul(lr).add(step % 7).exp().sub(1); // 4
    return z.maximum(x).sum(-1).mul(0.5).neg().abs().add(lr); // 6
  });
  await y.data();
  y.dispose();
}

/** A short task on its own stream, borrowing the weights in a matmul and an add. 6 ops. */
async function taskStep(device: Device, step: number, weights: Tensor, bias: Tensor): Promise<void> {
  await Stream.spawn(async () => {
    const y = tidy(() => rand([2, 16], { device, seed: 10_000 + step }).matmul(weights).add(bias).mul(1 / (1 + step)).relu().sum(-1));
    await y.data();
    y.dispose();
  });
}

function describeSample(s: SoakSample): string {
  const mb = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
  return (
    `step ${s.step} (${s.ops} ops): rss ${mb(s.rss)}, reserved ${mb(s.bytesReserved)}, tensors ${s.liveTensors}, ` +
    `handles ${s.liveHandles}, pipelines ${s.pipelines}, plans ${s.plans}, cache entries ${s.cacheEntries}, views ${s.borrowedViews}`
  );
}

/** Runs the soak (see the module remarks) and reports what stayed flat and what did not. */
export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const { device, out } = options;
  const totalOps = options.ops ?? 1_000_000;
  const shapes = options.shapes ?? 64;
  const perFour = 3 * ROOT_OPS + TASK_OPS;
  const steps = Math.max(4, Math.ceil((totalOps * 4) / perFour));
  const sampleEvery = options.sampleEvery ?? Math.max(1, Math.floor(steps / 20));
  const previousPolicy = getStreamPolicy();
  setStreamPolicy("per-task");
  const started = performance.now();
  const samples: SoakSample[] = [];
  let ops = 0;
  let tasks = 0;
  try {
    out?.write(`weft soak: ${totalOps} ops in ${steps} steps, ${shapes} shapes, a new scalar and seed per step, a task every 4th step, on ${device.label}\n`);
    const weights = tidy(() => randn([16, 8], { device, seed: 7 }).mul(0.25));
    const bias = tidy(() => randn([8], { device, seed: 8 }).mul(0.1));
    await device.syncAll();
    const base = sample(device, 0, 0);
    for (let step = 0; step < steps; step++) {
      if (step % 4 === 3) {
        await taskStep(device, step, weights, bias);
        ops += TASK_OPS;
        tasks++;
      } else {
        await rootStep(device, step, shapes);
        ops += ROOT_OPS;
      }
      if ((step + 1) % sampleEvery === 0 || step === steps - 1) {
        const s = sample(device, step + 1, ops);
        samples.push(s);
        out?.write(`${describeSample(s)}\n`);
      }
    }
    weights.dispose();
    bias.dispose();
    await device.syncAll();
    const problems = check(device, base, samples);
    const seconds = (performance.now() - started) / 1000;
    out?.write(problems.length === 0 ? `soak: flat (${seconds.toFixed(1)} s)\n` : `soak: NOT flat:\n  ${problems.join("\n  ")}\n`);
    return { ops, steps, tasks, samples, problems, seconds };
  } finally {
    setStreamPolicy(previousPolicy);
  }
}

/** The bounds (see the module remarks); one line per bound that did not hold. */
function check(device: Device, base: SoakSample, samples: readonly SoakSample[]): string[] {
  const problems: string[] = [];
  const memory = device.memory();
  const stats = device.stats();
  if (memory.liveTensors !== 0 || memory.liveHandles !== 0) {
    problems.push(`after disposing everything: ${memory.liveTensors} tensors, ${memory.liveHandles} handles still live`);
  }
  if (stats.borrowedViews !== 0) problems.push(`${stats.borrowedViews} borrowed views left`);
  for (const [name, cache] of Object.entries(stats.caches)) {
    if (cache.size > cache.capacity) problems.push(`cache ${name}: ${cache.size} entries over its capacity ${cache.capacity}`);
  }
  const warm = samples[Math.floor(samples.length / 4)] ?? base;
  const last = samples[samples.length - 1] ?? base;
  const pipelineCapacity = stats.caches["pipelines"]?.capacity ?? stats.caches["compiledKernels"]?.capacity ?? 0;
  if (last.pipelines > Math.max(warm.pipelines, pipelineCapacity)) {
    problems.push(`pipelines grew from ${warm.pipelines} to ${last.pipelines} past the capacity ${pipelineCapacity}`);
  }
  const peakHandles = Math.max(...samples.map((s) => s.liveHandles));
  if (peakHandles > base.liveHandles + 64) problems.push(`live handles peaked at ${peakHandles} (baseline ${base.liveHandles})`);
  // Reserved bytes: after warm-up, at most what the warm-up reserved plus one page per slot of slack.
  const slack = 32 * 4 * 2 ** 20;
  if (last.bytesReserved > warm.bytesReserved + slack) {
    problems.push(`reserved bytes grew from ${warm.bytesReserved} to ${last.bytesReserved} after warm-up`);
  }
  return problems;
}
