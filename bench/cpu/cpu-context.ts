/**
 * What every workload of the bench's CPU section (`--backend cpu`) receives: the report, Weft's
 * CPU device and TF.js's CPU and WebAssembly backends (or why one is unavailable), and the repeat
 * counts of this mode.
 *
 * @module
 */
import type { Device } from "@weft/tensor";
import type { Peer } from "../context.js";
import type { Repeats } from "../harness/measure.js";
import type { Report } from "../harness/report.js";
import type { TfHostPeer } from "../peers/tfjs-host.js";

/** The CPU section's workloads, in the order they run (the names `--only` accepts with `--backend cpu`). */
export const CPU_WORKLOADS = ["chain", "small", "matmul", "sum", "dependent", "serving"] as const;

/** One CPU workload's name. */
export type CpuWorkloadName = (typeof CPU_WORKLOADS)[number];

/** Weft on the CPU backend, as users get it (`createCpuDevice()`). */
export interface WeftCpu {
  readonly device: Device;
  /** Which kernel path runs fused elementwise blocks (`generated`/`interpreted`), for the report. */
  readonly kernelPath: string;
}

/** Everything a CPU workload runs against. */
export interface CpuBenchContext {
  readonly quick: boolean;
  readonly report: Report;
  readonly weft: Peer<WeftCpu>;
  readonly tfCpu: Peer<TfHostPeer>;
  readonly tfWasm: Peer<TfHostPeer>;
  /** Repeat counts: every sample is one iteration followed by its read (latency). */
  readonly repeats: Repeats;
}

/** Repeat counts of the CPU section: the sizes are the same in both modes, quick takes fewer samples. */
export function cpuRepeats(quick: boolean): Repeats {
  // The GPU section's steady-state warm-up (../context.ts, `repeatsFor`): a quarter second.
  return { warmup: quick ? 2 : 3, warmupMs: quick ? 0 : 250, samples: quick ? 7 : 15, iterations: 1 };
}
