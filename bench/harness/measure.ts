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

/** Latency: each sample is one iteration followed by its own wait. */
export async function latency(t: Timed, r: Repeats): Promise<Timing> {
  for (let i = 0; i < r.warmup; i++) {
    await t.prepare?.(1);
    t.step(0);
    await t.wait();
    await t.release?.();
  }
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

/** Throughput: each sample is `iterations` steps back to back and one wait, divided by `iterations`. */
export async function throughput(t: Timed, r: Repeats): Promise<Timing> {
  for (let i = 0; i < Math.max(1, r.warmup); i++) {
    await t.prepare?.(1);
    t.step(0);
    await t.wait();
    await t.release?.();
  }
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

/** A message for a caught error, on one line. */
export function errorText(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.replace(/\s+/g, " ").slice(0, 300);
}
