/**
 * Workload "serving": the demo's model (MLP 64→128→128→10, gelu, softmax; batch 8; weights shared
 * by every request) serving `requests` (256) requests with `inFlight` (32) in flight, each reading
 * its result — Weft with each request on its own stream (`Stream.spawn` under the `per-task`
 * policy), TF.js with the same requests in flight on the same device — and again with 1 in flight.
 *
 * Steady state: {@link SERVING_WARMUP_ROUNDS} untimed rounds of every request first, and more
 * until {@link SERVING_WARMUP_MS} have passed (pipelines compile, pools grow, V8 optimises the
 * host path; Weft's background autotuning is awaited after them, then one more round compiles its
 * winners, so no tuning or compile runs in a timed round), then `rounds` timed rounds. Figures: requests/s (the median round), p50 and p99 latency of a request
 * (start of its `Stream.spawn` to its values in hand, over every timed request). Request 0's
 * output is checked against the float64 model. Targets `serving-vs-tfjs` and `serving-p99-ms` are
 * in `../targets.ts`.
 *
 * @module
 */
import type { BenchContext, Peer } from "../context.js";
import { compare } from "../harness/data.js";
import { errorText, median } from "../harness/measure.js";
import { mlpInputs, mlpRef, mlpWeights, perTaskStreams, tfMlpWeights, tfRequest, weftMlpWeights, weftRequest } from "../harness/mlp.js";
import { LABEL, VARIANT } from "../targets.js";

/** What the timed rounds of one variant measured. */
interface Served {
  /** Requests per second of each timed round. */
  readonly rates: number[];
  /** Every timed request's latency, in ms. */
  readonly latencies: number[];
  /** Request 0's values in the last round. */
  readonly first: ArrayLike<number>;
}

/** The latency at quantile `q` of ascending `sorted`. */
export function percentile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

/**
 * One round: `requests` requests, at most `inFlight` at once; each latency pushed to `latencies`
 * (also the serving probes of `bench/profile-host.ts`).
 */
export async function round(one: (i: number) => Promise<ArrayLike<number>>, requests: number, inFlight: number, latencies: number[] | undefined): Promise<{ ms: number; first: ArrayLike<number> }> {
  let next = 0;
  let first: ArrayLike<number> = [];
  const lane = async (): Promise<void> => {
    while (next < requests) {
      const i = next++;
      const t0 = performance.now();
      const v = await one(i);
      latencies?.push(performance.now() - t0);
      if (i === 0) first = v;
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: Math.min(inFlight, requests) }, lane));
  return { ms: performance.now() - start, first };
}

/**
 * Untimed rounds before the timed ones (full mode; 1 in quick mode): V8 optimises a library's
 * host path only after several hundred calls — on the H200 (2026-11-30 06:00 UTC) Weft's rounds
 * of 256 went 1,066 → 2,505 → 3,611 → 3,857 req/s and then stayed — so one warm round measured
 * the warm-up, not the steady state the target asks for. Both libraries get the same rounds.
 */
export const SERVING_WARMUP_ROUNDS = 4;

/**
 * The least time the untimed rounds take (full mode): after {@link SERVING_WARMUP_ROUNDS}, rounds
 * go on until it has passed. Four rounds were not enough for Weft: in run ba (H200, 2026-11-30
 * 13:58 UTC) its five timed rounds took 502, 323, 245, 250 and 221 µs per request, so the median
 * and the p99 (over every timed request) measured the end of the warm-up. Three seconds are
 * ~45 rounds of 256 for Weft and 5 for TF.js; both libraries get the same budget.
 */
export const SERVING_WARMUP_MS = 3000;

/**
 * One round and `settle` (the tunings its products started run on the idle device and finish),
 * `warmups` warm-up rounds (and more until `warmupMs` have passed), `settle`, one more untimed
 * round and `settle` again, then `rounds` timed rounds.
 *
 * Why tune first: on a cold tuning cache (a fresh machine) the MLP's two tunable products are
 * tuned in the first `settle` — 19 candidates each, ~8.5 s on the H200 — and while their pipeline
 * compiles are pending Dawn's node binding ticks the device from a `setImmediate` loop, ~100 MB/s
 * of garbage: a mark-compact every ~0.5 s with 20–55 ms pauses (run ff, BENCHMARKS.md). With that
 * `settle` right before the timed rounds, they took its last collections: run fd (a fresh machine)
 * measured 3,140 req/s and a p99 of 250 ms, run fe 4,440 req/s and 90.6 ms with `--only serving`,
 * and 9,390 req/s and 4.78 ms with the cache warm. Tuning in the first round's `settle` leaves the
 * warm-up rounds to run after it, as a server's steady state does; TF.js gets the same rounds.
 *
 * Why the round after `settle`: Weft's background tuning measures its candidates only while the
 * device is idle, so it finishes in `settle`, and the next round is the first to launch the
 * winners' fused kernels (compiled then; docs/performance.md, "Compiles and autotuning off the
 * request path"). In run bf (H200, 2026-11-30 14:21 UTC) that round was the first timed one: it
 * took 1,556 µs per request against 324–383 in the others, and the p99 over the timed requests
 * was 235 ms. With the extra round (run bg, 14:27 UTC) the timed rounds took 231–354 µs per
 * request and the p99 was 14.8 ms. Tuning is finished in the warm-up, as the target asks; TF.js
 * gets the same rounds.
 */
async function serve(
  one: (i: number) => Promise<ArrayLike<number>>,
  requests: number,
  inFlight: number,
  rounds: number,
  warmups: number,
  warmupMs: number,
  settle: () => Promise<void>,
  mark: (phase: string) => void,
): Promise<Served> {
  await round(one, requests, inFlight, undefined);
  await settle();
  mark("tuned");
  const start = performance.now();
  for (let w = 0; w < warmups || performance.now() - start < warmupMs; w++) await round(one, requests, inFlight, undefined);
  await settle();
  await round(one, requests, inFlight, undefined);
  await settle();
  mark("warm");
  const rates: number[] = [];
  const latencies: number[] = [];
  let first: ArrayLike<number> = [];
  for (let r = 0; r < rounds; r++) {
    const done = await round(one, requests, inFlight, latencies);
    rates.push((requests * 1000) / done.ms);
    first = done.first;
  }
  mark("timed");
  return { rates, latencies, first };
}

/**
 * `WEFT_BENCH_PHASES=1`: print when each variant's tunings ended, its warm-up ended and its timed
 * rounds ended (ms since the process started: the clock of `node --trace-gc`'s lines, so a
 * collection can be placed in a phase).
 */
const PHASES = process.env["WEFT_BENCH_PHASES"] === "1";

/** Runs the serving workload. */
export async function runServing(ctx: BenchContext): Promise<void> {
  const { requests, batch } = ctx.sizes.serving;
  const size = LABEL.serving(ctx.sizes.serving);
  const rounds = ctx.options.quick ? 2 : 5;
  const weights = mlpWeights();
  const inputs = mlpInputs(requests, batch);
  const want = mlpRef(inputs[0] as Float32Array, weights, batch);
  const r = ctx.report;

  const variant = async <T>(name: string, peer: Peer<T>, inFlight: number, start: (p: T) => { one: (i: number) => Promise<ArrayLike<number>>; settle: () => Promise<void>; dispose: () => void; around: <R>(f: () => Promise<R>) => Promise<R> }): Promise<void> => {
    const label = VARIANT.inFlight(name, inFlight);
    if (!peer.ok) {
      r.add({ workload: "serving", variant: label, method: "throughput", size, status: `unavailable: ${peer.reason}` });
      return;
    }
    let run: ReturnType<typeof start> | undefined;
    try {
      run = start(peer.value);
      const { one, settle, around } = run;
      const mark = PHASES ? (phase: string) => console.log(`  serving ${label}: ${phase} at ${performance.now().toFixed(0)} ms`) : () => {};
      const served = await around(() => serve(one, requests, inFlight, rounds, ctx.options.quick ? 1 : SERVING_WARMUP_ROUNDS, ctx.options.quick ? 0 : SERVING_WARMUP_MS, settle, mark));
      const check = compare(served.first, (i) => want[i] as number, [...want.keys()], 1e-4);
      const rate = median(served.rates);
      const sorted = [...served.latencies].sort((a, b) => a - b);
      r.add({ workload: "serving", variant: label, method: "throughput", size, status: "ok", ms: 1000 / rate, samples: served.rates.map((q) => 1000 / q), value: rate, unit: "req/s", check });
      r.add({ workload: "serving", variant: VARIANT.p50(label), method: "latency", size, status: "ok", ms: percentile(sorted, 0.5), check });
      r.add({ workload: "serving", variant: VARIANT.p99(label), method: "latency", size, status: "ok", ms: percentile(sorted, 0.99), check });
    } catch (error) {
      r.add({ workload: "serving", variant: label, method: "throughput", size, status: `failed: ${errorText(error)}` });
    } finally {
      run?.dispose();
    }
  };

  for (const inFlight of [ctx.sizes.serving.inFlight, 1]) {
    await variant(VARIANT.weft, ctx.weft, inFlight, (w) => {
      const ws = weftMlpWeights(w.device, weights);
      return {
        one: (i) => weftRequest(w.device, ws, inputs[i] as Float32Array, batch),
        settle: async () => {
          await w.device.syncAll();
          await w.settle();
        },
        dispose: () => {
          for (const t of ws) t.dispose();
        },
        around: perTaskStreams,
      };
    });
    await variant(VARIANT.tfjs, ctx.tf, inFlight, (p) => {
      const ws = tfMlpWeights(p.tf, weights);
      return {
        one: (i) => tfRequest(p.tf, ws, inputs[i] as Float32Array, batch),
        settle: () => p.wait(),
        dispose: () => p.tf.dispose(ws),
        around: (f) => f(),
      };
    });
  }
}
