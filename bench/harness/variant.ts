/**
 * Running one variant of a workload by one or both methods and recording the result, with
 * unavailable libraries and thrown errors turned into rows instead of aborting the run.
 *
 * @module
 */
import type { BenchContext, Peer } from "../context.js";
import { errorText, latency, type Repeats, throughput, type Timed, type Timing } from "./measure.js";
import type { Measurement, Method } from "./report.js";

/** What {@link measureVariant} needs. */
export interface VariantSpec<T> {
  readonly workload: string;
  readonly variant: string;
  readonly size: string;
  /** The library this variant runs on. */
  readonly peer: Peer<T>;
  /** Builds the timed steps (allocating inputs); called once. */
  readonly setup: (peer: T) => Promise<VariantRun> | VariantRun;
  /** The methods to run (default both). */
  readonly methods?: readonly ("throughput" | "latency")[];
  /** Repeat counts. */
  readonly repeats: Repeats;
  /** The derived figure for a time in ms (`GB/s`, `TFLOP/s`). */
  readonly figure?: (ms: number) => { value: number; unit: string };
  /**
   * Units of work one step performs (default 1): a step that submits 30 kernels reports the time
   * of one kernel. Times and samples are divided by it before they are recorded.
   */
  readonly unitsPerStep?: number;
}

/** A variant ready to time: its steps, its correctness check and its cleanup. */
export interface VariantRun {
  readonly timed: Timed;
  /** Runs once after warm-up, untimed; answers `"ok (…)"` or `"WRONG: …"`. */
  readonly check?: () => Promise<string>;
  /** Frees the variant's inputs. */
  readonly dispose?: () => void | Promise<void>;
}

/** Measures one variant; returns the measurements recorded (one per method, or one failure row). */
export async function measureVariant<T>(ctx: Pick<BenchContext, "report">, spec: VariantSpec<T>): Promise<Measurement[]> {
  const base = { workload: spec.workload, variant: spec.variant, size: spec.size };
  const methods = spec.methods ?? ["throughput", "latency"];
  if (!spec.peer.ok) {
    return methods.map((method) => ctx.report.add({ ...base, method, status: `unavailable: ${spec.peer.ok ? "" : spec.peer.reason}` }));
  }
  let run: VariantRun | undefined;
  const out: Measurement[] = [];
  try {
    run = await spec.setup(spec.peer.value);
    let check: string | undefined;
    for (const method of methods) {
      let timing: Timing;
      try {
        timing = method === "throughput" ? await throughput(run.timed, spec.repeats) : await latency(run.timed, spec.repeats);
      } catch (error) {
        out.push(ctx.report.add({ ...base, method, status: `failed: ${errorText(error)}` }));
        continue;
      }
      if (check === undefined && run.check !== undefined) {
        try {
          check = await run.check();
        } catch (error) {
          check = `WRONG: the check threw ${errorText(error)}`;
        }
      }
      const per = spec.unitsPerStep ?? 1;
      if (per !== 1) timing = { ms: timing.ms / per, samples: timing.samples.map((v) => v / per) };
      const fig = spec.figure?.(timing.ms);
      out.push(
        ctx.report.add({
          ...base,
          method,
          status: "ok",
          ms: timing.ms,
          samples: timing.samples,
          ...(fig === undefined ? {} : { value: fig.value, unit: fig.unit }),
          ...(check === undefined ? {} : { check }),
        }),
      );
    }
  } catch (error) {
    const done = new Set(out.map((m) => m.method));
    for (const method of methods) if (!done.has(method)) out.push(ctx.report.add({ ...base, method, status: `failed: ${errorText(error)}` }));
  } finally {
    try {
      await run?.dispose?.();
    } catch {
      // A failed cleanup must not hide the figures; the next workload allocates afresh.
    }
  }
  return out;
}

/** The measurement of `method` among `ms`, when it has a figure. */
export function pick(ms: readonly Measurement[], method: Method): Measurement | undefined {
  return ms.find((m) => m.method === method && m.status === "ok");
}

/** Bytes per second as GB/s for `bytes` moved in `ms`. */
export function gbps(bytes: number): (ms: number) => { value: number; unit: string } {
  return (ms) => ({ value: bytes / (ms / 1000) / 1e9, unit: "GB/s" });
}

/** A run whose one step produces a result that the wait reads (the read is timed). */
export function readLoop<T extends { dispose(): void }>(produce: () => T, read: (t: T) => Promise<ArrayLike<number>>, check: (values: ArrayLike<number>) => string, dispose: () => void): VariantRun {
  let out: T | undefined;
  let last: ArrayLike<number> | undefined;
  return {
    timed: {
      step: () => {
        out = produce();
      },
      wait: async () => {
        if (out !== undefined) last = await read(out);
      },
      release: () => {
        out?.dispose();
        out = undefined;
      },
    },
    check: async () => (last === undefined ? "WRONG: nothing was read" : check(last)),
    dispose,
  };
}
