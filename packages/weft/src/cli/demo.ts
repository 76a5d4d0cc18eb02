/**
 * `weft demo`: a real workload — MLP inference serving many concurrent requests, each on its own
 * stream, sharing one set of weights — checked against the unfused CPU oracle.
 *
 * @remarks
 * **Model.** `softmax(gelu(gelu(x·W1 + b1)·W2 + b2)·W3 + b3)` with `x: [batch, 64]`, hidden 128,
 * 10 classes; weights are `randn` scaled by `1/√fan_in` with fixed seeds, so every backend builds
 * the same model. Request `i` uses the input `rand` seed `1000 + i`.
 * **Streams.** Every request runs in `Stream.spawn`, a task with a fresh stream of its own, so its
 * ops queue on its own lazy stream; the task is also a lifetime scope (what it creates is disposed
 * when it settles). The weights live on the root stream and are shared (aliased, never copied) by
 * every request.
 * **Warm-up.** One request runs under `compile-and-autotune` before anything is timed.
 * **Check.** The oracle (a CPU device running every op unfused) computes the same requests; any
 * element differing by more than `1e-3` (absolute, on probabilities) is a mismatch.
 *
 * @module
 */
import { Stream } from "@weft/environment";
import { type Device, type Tensor, randn, rand, tidy } from "@weft/tensor";
import { createCpuDevice } from "../device/backends.js";
import { warmupDevice } from "../device/warmup.js";
import { type Output, ProgressBar } from "./progress.js";

/** Options of {@link runDemo}. */
export interface DemoOptions {
  /** The device to serve on. */
  readonly device: Device;
  /** How many concurrent requests (default 32). */
  readonly requests?: number;
  /** Rows per request (default 8). */
  readonly batch?: number;
  /** Where to print. */
  readonly out: Output;
}

/** What {@link runDemo} measured and checked. */
export interface DemoReport {
  readonly requests: number;
  /** Requests whose result differed from the oracle beyond the tolerance. */
  readonly mismatches: number;
  /** The largest absolute difference seen. */
  readonly maxError: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly requestsPerSecond: number;
  /** Executed blocks that were fused kernels, and all executed blocks, during the serving phase. */
  readonly fusedBlocks: number;
  readonly totalBlocks: number;
}

const INPUT = 64;
const HIDDEN = 128;
const CLASSES = 10;
/** The demo's tolerance on output probabilities. */
export const DEMO_TOLERANCE = 1e-3;

interface Weights {
  readonly w1: Tensor;
  readonly b1: Tensor;
  readonly w2: Tensor;
  readonly b2: Tensor;
  readonly w3: Tensor;
  readonly b3: Tensor;
}

function buildWeights(device: Device): Weights {
  return tidy(() => ({
    w1: randn([INPUT, HIDDEN], { device, seed: 11 }).mul(1 / Math.sqrt(INPUT)),
    b1: randn([HIDDEN], { device, seed: 12 }).mul(0.1),
    w2: randn([HIDDEN, HIDDEN], { device, seed: 13 }).mul(1 / Math.sqrt(HIDDEN)),
    b2: randn([HIDDEN], { device, seed: 14 }).mul(0.1),
    w3: randn([HIDDEN, CLASSES], { device, seed: 15 }).mul(1 / Math.sqrt(HIDDEN)),
    b3: randn([CLASSES], { device, seed: 16 }).mul(0.1),
  }));
}

function forward(w: Weights, x: Tensor): Tensor {
  return tidy(() => x.matmul(w.w1).add(w.b1).gelu().matmul(w.w2).add(w.b2).gelu().matmul(w.w3).add(w.b3).softmax(-1));
}

async function serve(device: Device, w: Weights, index: number, batch: number): Promise<Float32Array> {
  const x = rand([batch, INPUT], { device, seed: 1000 + index });
  const y = forward(w, x);
  x.dispose();
  try {
    return (await y.data()) as Float32Array;
  } finally {
    y.dispose();
  }
}

/** Most executed warm-up rounds (8 × 32 requests: the bench's serving warm-up of 256). */
const WARMUP_ROUNDS = 8;
/** Executed warm-up rounds stop starting after this many milliseconds. */
const WARMUP_BUDGET_MS = 2000;

/**
 * Runs one round of the timed workload — `requests` concurrent requests, each on its own stream —
 * under the `compile-and-autotune` process mode before anything is timed, so the latencies measure
 * serving, not compiling or first use: every kernel of the model compiles, the matmuls are
 * autotuned (a progress bar per tuning) and the fusion plans are explored once; then runs the same
 * round for real, untimed, up to `WARMUP_ROUNDS` times within `WARMUP_BUDGET_MS`, so the
 * memory pages, bind groups, uniform arenas and staging buffers 32 concurrent streams need exist
 * and V8 has optimised the host path (a one-request warm-up left those to the timed round:
 * p50 52 ms instead of the steady state's ~24 ms on the H200; the compile round alone, 165 ms).
 */
async function warmUp(device: Device, weights: Weights, requests: number, batch: number, out: Output): Promise<void> {
  out.write(`warming up: one untimed round of ${requests} concurrent requests (compiling the model's kernels, autotuning)\n`);
  let bar: ProgressBar | undefined;
  const round = (): Promise<unknown> => Promise.all(Array.from({ length: requests }, (_, i) => Stream.spawn(() => serve(device, weights, i, batch))));
  const report = await warmupDevice(device, round, {
    onTuneProgress: (p) => {
      switch (p.kind) {
        case "start":
          bar?.finish();
          bar = new ProgressBar(out, `  autotuning ${p.set}`, p.total);
          break;
        case "candidate":
          bar?.tick();
          break;
        case "done":
        case "failed":
          bar?.finish();
          bar = undefined;
          break;
        default:
          p satisfies never;
      }
    },
  });
  bar?.finish();
  const kernels = report.kernelsCompiled > 0 ? `${report.kernelsCompiled} kernels compiled` : "nothing to compile on this backend";
  // The compile round discards its launches, so the first executed round still pays for first
  // use: memory pages and their zero-fill, bind groups, uniform arenas, staging buffers for 32
  // reads (H200: a timed round right after the compile round took ~165 ms a request). And the
  // host path is JavaScript that V8 optimises only after many calls: after one executed round
  // the timed one still measured 30–44 ms a request on the H200, where the bench's steady serving
  // (a warm-up of 256 requests) measures 22 ms. So executed rounds continue, untimed, up to
  // WARMUP_ROUNDS (the bench's 256 requests) or WARMUP_BUDGET_MS, whichever comes first (on a
  // slow CPU backend the budget ends it after a round or two).
  const executed = performance.now();
  let rounds = 0;
  while (rounds < WARMUP_ROUNDS && (rounds === 0 || performance.now() - executed < WARMUP_BUDGET_MS)) {
    await round();
    rounds++;
  }
  await device.syncAll();
  out.write(`warm-up: ${kernels} in ${report.ms.toFixed(0)} ms, then ${rounds} executed round${rounds === 1 ? "" : "s"} in ${(performance.now() - executed).toFixed(0)} ms\n`);
}


function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
}

function disposeWeights(w: Weights): void {
  for (const t of Object.values(w)) t.dispose();
}

/** Serves the requests concurrently, checks them against the oracle, prints the report. */
export async function runDemo(options: DemoOptions): Promise<DemoReport> {
  const { device, out } = options;
  const requests = options.requests ?? 32;
  const batch = options.batch ?? 8;
  out.write(`weft demo: MLP ${INPUT}→${HIDDEN}→${HIDDEN}→${CLASSES}, batch ${batch}, ${requests} concurrent requests on ${device.label}\n`);
  const weights = buildWeights(device);
  await device.syncAll();
  await warmUp(device, weights, requests, batch, out);
  device.fusion.inspector?.clearLog();

  const bar = new ProgressBar(out, "serving", requests);
  const latencies: number[] = new Array<number>(requests).fill(0);
  const start = performance.now();
  const results = await Promise.all(
    Array.from({ length: requests }, (_, i) =>
      Stream.spawn(async () => {
        const t0 = performance.now();
        const r = await serve(device, weights, i, batch);
        latencies[i] = performance.now() - t0;
        bar.tick();
        return r;
      }),
    ),
  );
  const elapsed = (performance.now() - start) / 1000;
  bar.finish();
  const inspector = device.fusion.inspector;
  const blocks = inspector?.executedBlocks ?? [];
  const fusedBlocks = blocks.filter((b) => b.fused).length;
  const totalBlocks = inspector?.executedCount ?? blocks.length;
  disposeWeights(weights);

  // The oracle: the same model and inputs on a CPU device that runs every op alone.
  const oracle = createCpuDevice({ fusion: false });
  const oracleWeights = buildWeights(oracle);
  let mismatches = 0;
  let maxError = 0;
  for (let i = 0; i < requests; i++) {
    const want = await serve(oracle, oracleWeights, i, batch);
    const got = results[i] ?? new Float32Array();
    let bad = got.length !== want.length;
    for (let j = 0; j < want.length && !bad; j++) {
      const err = Math.abs((got[j] ?? Number.NaN) - (want[j] ?? 0));
      if (!(err <= DEMO_TOLERANCE)) bad = true;
      if (err > maxError || Number.isNaN(err)) maxError = Number.isNaN(err) ? Infinity : err;
    }
    if (bad) mismatches++;
  }
  disposeWeights(oracleWeights);
  await oracle.syncAll();

  const sorted = [...latencies].sort((a, b) => a - b);
  const report: DemoReport = {
    requests,
    mismatches,
    maxError,
    p50Ms: percentile(sorted, 0.5),
    p95Ms: percentile(sorted, 0.95),
    requestsPerSecond: requests / Math.max(elapsed, 1e-9),
    fusedBlocks,
    totalBlocks,
  };
  out.write(`latency per request: p50 ${report.p50Ms.toFixed(2)} ms, p95 ${report.p95Ms.toFixed(2)} ms\n`);
  out.write(`throughput: ${report.requestsPerSecond.toFixed(1)} requests/s (${(report.requestsPerSecond * batch).toFixed(0)} rows/s)\n`);
  out.write(`kernels: ${fusedBlocks} fused of ${totalBlocks} executed blocks\n`);
  out.write(
    mismatches === 0
      ? `check: all ${requests} results match the unfused CPU oracle (max error ${maxError.toExponential(2)} ≤ ${DEMO_TOLERANCE})\n`
      : `check: ${mismatches} of ${requests} results differ from the unfused CPU oracle (max error ${maxError.toExponential(2)} > ${DEMO_TOLERANCE})\n`,
  );
  return report;
}
