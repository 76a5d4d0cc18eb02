/**
 * Timing by the two methods of docs/performance.md, with `performance.now()` and medians.
 *
 * @remarks
 * **Why two methods.** One wait (`onSubmittedWorkDone`, a read) costs tens of microseconds to a
 * millisecond and hides kernel time: *throughput* runs many iterations back to back and waits
 * once, *latency* waits after every iteration. Both warm up first (pipelines compile on the first
 * launch) and report the median of repeated runs, never the mean (one GC pause or page-pool
 * growth would move a mean).
 *
 * @module
 */

/** The median of `values` (the mean of the middle two for even counts). */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error("median of no samples");
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** What one variant needs to be timed. */
export interface Timed {
  /** Records or submits iteration `index` of the sample (0-based); must not wait for the device. */
  readonly step: (index: number) => unknown;
  /** Waits until every submitted iteration has finished on the device. */
  readonly wait: () => Promise<unknown>;
  /** Releases what the iterations produced (untimed); runs after each wait. */
  readonly release?: () => void | Promise<void>;
  /** Prepares the inputs of the next `steps` iterations (untimed); runs before each sample. */
  readonly prepare?: (steps: number) => void | Promise<void>;
}

/** How many samples to take. */
export interface Repeats {
  /** Untimed iterations first (compile pipelines, grow pools). */
  readonly warmup: number;
  /**
   * Keep warming up until this many milliseconds have passed (after at least `warmup`
   * iterations, at most {@link WARMUP_MAX_ITERATIONS}): the steady state, for every library
   * alike. Default 0 (`warmup` iterations only).
   */
  readonly warmupMs?: number;
  /** Timed samples; the figure is their median. */
  readonly samples: number;
  /** Iterations per throughput sample (ignored by latency). */
  readonly iterations: number;
}

/** A time figure: the median and every sample, in milliseconds per iteration. */
export interface Timing {
  readonly ms: number;
  readonly samples: number[];
}

/**
 * Most warm-up iterations {@link Repeats.warmupMs} may add (a variant whose iteration takes
 * microseconds reaches its time in fewer).
 */
export const WARMUP_MAX_ITERATIONS = 5000;

/**
 * Runs `one` (one untimed iteration, waited) at least `minimum` times (1 at least when `atLeastOne`),
 * then until `r.warmupMs` have passed or {@link WARMUP_MAX_ITERATIONS} iterations ran.
 *
 * Why time: V8 optimises a library's host path only after hundreds to thousands of calls. The
 * bench's first workload measured Weft's 2^24 chain at 352–665 µs per chain after 3 warm-up
 * iterations, and at 115 µs after 2,000 (H200 host, 2026-11-30). The cold figure measured the JIT,
 * not the library. A time budget gives a slow peer as much warm-up as a fast one, without making
 * a 30 ms iteration run a thousand times.
 */
async function warmUp(one: () => Promise<void>, r: Repeats, atLeastOne: boolean): Promise<void> {
  const minimum = atLeastOne ? Math.max(1, r.warmup) : r.warmup;
  const start = performance.now();
  for (let i = 0; i < WARMUP_MAX_ITERATIONS; i++) {
    if (i >= minimum && performance.now() - start >= (r.warmupMs ?? 0)) return;
    await one();
  }
}

/** Latency: each sample is one iteration followed by its own wait. */
export async function latency(t: Timed, r: Repeats): Promise<Timing> {
  await warmUp(async () => {
    await t.prepare?.(1);
    t.step(0);
    await t.wait();
    await t.release?.();
  }, r, false);
  const samples: number[] = [];
  for (let i = 0; i < r.samples; i++) {
    await t.prepare?.(1);
    const start = performance.now();
    t.step(0);
    await t.wait();
    samples.push(performance.now() - start);
    await t.release?.();
  }
  return { ms: median(samples), samples };
}

/**
 * Throughput: each sample is `iterations` steps back to back and one wait, divided by `iterations`.
 *
 * The warm-up runs the same shape (`iterations` steps, one wait: `r.warmup` batches at least, then
 * batches until the time budget is spent), so the samples start in the steady state of that loop.
 * Warmed up one waited step at a time, Weft's 2^26 sum on the H200 (2026-11-30, run ba) took
 * 1,029 µs per sum in its first timed batch and 214, 183, 168 µs in the next ones before it
 * settled at 111–123: the first batches paid, inside the timed samples, for the memory and the
 * code paths that batches hold and single steps never did.
 */
export async function throughput(t: Timed, r: Repeats): Promise<Timing> {
  await warmUp(async () => {
    await t.prepare?.(r.iterations);
    for (let i = 0; i < r.iterations; i++) t.step(i);
    await t.wait();
    await t.release?.();
  }, r, true);
  const samples: number[] = [];
  for (let s = 0; s < r.samples; s++) {
    await t.prepare?.(r.iterations);
    const start = performance.now();
    for (let i = 0; i < r.iterations; i++) t.step(i);
    await t.wait();
    samples.push((performance.now() - start) / r.iterations);
    await t.release?.();
  }
  return { ms: median(samples), samples };
}

/** Host time of `fn` (no device wait inside), median over `samples` runs after `warmup` runs. */
export async function hostTime(fn: () => unknown, after: () => Promise<unknown>, r: { warmup: number; samples: number }): Promise<Timing> {
  for (let i = 0; i < r.warmup; i++) {
    fn();
    await after();
  }
  const samples: number[] = [];
  for (let i = 0; i < r.samples; i++) {
    const start = performance.now();
    fn();
    samples.push(performance.now() - start);
    await after();
  }
  return { ms: median(samples), samples };
}

/** Objects the calibration loop reads (see {@link jsCalibration}), built once. */
let calibrationObjects: { readonly v: number; readonly k: string }[] | undefined;
/** The calibration loop's last hash (written, never read). */
export let calibrationSink = 0;

/**
 * Milliseconds of a fixed pure-JS loop (60 passes of 65,536 reads of small objects in a scattered
 * order, no allocation), so that a host-bound figure can be read against the speed the machine
 * ran plain JavaScript at in that process. Why: on the H200 machine (16 vCPUs) the same bundle's
 * recording loop reads 0.85 or 1.7 µs per op depending on the phase the machine is in, and this
 * loop moves with it (docs/performance.md#slow-phases). Its absolute figure depends on the process
 * (the bench's reads ~55 ms where `profile-host.mjs`'s copy read ~40 in the same phase): compare it
 * across runs of one bundle. Median of `runs`.
 */
export function jsCalibration(runs = 5): Timing {
  const objects = (calibrationObjects ??= Array.from({ length: 1 << 16 }, (_, i) => ({ v: i, k: `k${i % 97}` })));
  const samples: number[] = [];
  let h = 0;
  for (let r = 0; r < runs; r++) {
    const start = performance.now();
    for (let pass = 0; pass < 60; pass++) {
      for (let i = 0; i < objects.length; i++) {
        const o = objects[(i * 7919) & 0xffff] as { v: number; k: string };
        h = (h * 31 + o.v + o.k.length) | 0;
      }
    }
    samples.push(performance.now() - start);
  }
  calibrationSink = h; // keeps the loop's work observable, so it cannot be optimized away
  return { ms: median(samples), samples };
}

/** A message for a caught error, on one line. */
export function errorText(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.replace(/\s+/g, " ").slice(0, 300);
}
