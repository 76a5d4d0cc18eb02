/// <reference types="@webgpu/types" />
/**
 * What every workload receives: the options, the report, the shared `GPUDevice` and each
 * library on it (or why that library is unavailable), and the sizes and repeat counts of this mode.
 *
 * @module
 */
import type { WebGpuDevice } from "@weft/backend-webgpu";
import { errorText, type Repeats } from "./harness/measure.js";
import type { Report } from "./harness/report.js";
import type { JaxPeer } from "./peers/jax.js";
import type { RawGpu } from "./peers/raw-webgpu.js";
import type { TfPeer } from "./peers/tfjs.js";
import type { WeftVariant } from "./peers/weft.js";

/** The workloads, in the order they run (the names `--only` accepts). */
export const WORKLOADS = ["chain", "readback", "reduction", "matmul", "host", "dependent", "small", "serving", "training", "memory", "remote"] as const;

/** One workload's name. */
export type WorkloadName = (typeof WORKLOADS)[number];

/**
 * The libraries a run can measure (`--peers`): the hand-written WebGPU baselines, Weft (fused and
 * unfused), TensorFlow.js and jax-js.
 */
export const PEERS = ["raw", "weft", "tfjs", "jax"] as const;

/** One library of {@link PEERS}. */
export type PeerName = (typeof PEERS)[number];

/**
 * Where the libraries run: all in this one process on one `GPUDevice` (`shared`, the default), or
 * each in its own child process, one after the other (`isolated`: no library's pools, caches or
 * queue work share the process with another's; the figures are merged and compared afterwards).
 */
export type Placement = "shared" | "isolated";

/** Command-line options. */
export interface BenchOptions {
  /** Small sizes for the software adapter. */
  readonly quick: boolean;
  /** Dawn's backend in Node, or `cpu`: the CPU section (Weft's CPU backend vs TF.js CPU and WebAssembly). */
  readonly backend: "vulkan" | "opengles" | "auto" | "cpu";
  /** Where to write the JSON results, if anywhere. */
  readonly json: string | undefined;
  /** The workloads to run: names of {@link WORKLOADS}, or of the CPU section's with `backend: "cpu"`. */
  readonly only: ReadonlySet<string>;
  /** The libraries created in this process (default: all of {@link PEERS}). */
  readonly peers: ReadonlySet<PeerName>;
  /** Whole runs of the selected workloads; each target's spread is taken between them. */
  readonly runs: number;
  /** Where the libraries run. */
  readonly placement: Placement;
}

/** A library on the shared device, or why it is not there. */
export type Peer<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string };

/**
 * The reason of a library left out by `--peers` (another process measures it): its rows are not
 * recorded at all, so merging the processes' results never mixes an "unavailable" row with a figure.
 */
export const NOT_SELECTED = "not selected in this process (--peers)";

/**
 * Creates library `name` (`what` in messages) when `--peers` selects it for this process; else a
 * peer that says it is another process's. A library that fails to start is reported unavailable,
 * with the reason, instead of failing the run. Both sections create their libraries through it.
 */
export async function createPeer<T>(options: BenchOptions, name: PeerName, what: string, make: () => Promise<T> | T): Promise<Peer<T>> {
  if (!options.peers.has(name)) return { ok: false, reason: NOT_SELECTED };
  try {
    return { ok: true, value: await make() };
  } catch (error) {
    const reason = errorText(error);
    console.log(`  ${what}: unavailable (${reason})`);
    return { ok: false, reason };
  }
}

/** The problem sizes of one mode. */
export interface Sizes {
  /** Element counts of the 8-op chain: 2^24 and 2^28 (2^28 only when the device can bind 1 GiB); quick: 2^18, 2^20. */
  readonly chain: readonly number[];
  /** Elements read back (f32). */
  readonly readback: number;
  /** Elements summed. */
  readonly sum: number;
  /** Rows and columns of the row-wise sum. */
  readonly rows: readonly [number, number];
  /** Square matmul sizes: 1024, 2048, 4096 (quick: 64, 128, 256). */
  readonly matmul: readonly number[];
  /** Dependent `add(1)` ops on a one-element tensor before its read. */
  readonly dependent: number;
  /** The serving workload: requests per round, requests in flight, rows per request. */
  readonly serving: { readonly requests: number; readonly inFlight: number; readonly batch: number };
  /** The training workload: rows per batch and training steps per timed run (issue 10: batch 256). */
  readonly training: { readonly batch: number; readonly steps: number };
  /** Small ops recorded per host-overhead sample. */
  readonly hostOps: number;
  /** Ops in the repeated graph. */
  readonly graphOps: number;
  /** Chains and elements per chain of the many-small-tensors workload. */
  readonly small: readonly [number, number];
  /** Elements of the memory workload's chain. */
  readonly memory: number;
  /** Bytes the outputs of one throughput sample may hold at once. */
  readonly throughputBytes: number;
}

/** Everything a workload runs against. */
export interface BenchContext {
  readonly options: BenchOptions;
  readonly report: Report;
  readonly gpu: WebGpuDevice;
  readonly raw: Peer<RawGpu>;
  readonly weft: Peer<WeftVariant>;
  readonly weftUnfused: Peer<WeftVariant>;
  readonly tf: Peer<TfPeer>;
  readonly jax: Peer<JaxPeer>;
  readonly sizes: Sizes;
  /** Repeat counts for a variant whose outputs take `outputBytes` per iteration. */
  repeats(outputBytes: number): Repeats;
  /** Creates a fresh Weft device on the shared GPU device (fresh pools, for memory figures). */
  freshWeft(fusion: boolean): Promise<WeftVariant>;
}

/** The sizes of full and quick mode (see BENCHMARKS.md). */
export function sizesFor(quick: boolean, gpu: WebGpuDevice): Sizes {
  if (quick) {
    return {
      chain: [1 << 18, 1 << 20],
      readback: 1 << 20,
      sum: 1 << 20,
      rows: [256, 4096],
      matmul: [64, 128, 256],
      dependent: 1000,
      serving: { requests: 64, inFlight: 32, batch: 8 },
      training: { batch: 64, steps: 5 },
      hostOps: 10_000,
      graphOps: 1000,
      small: [64, 16_384],
      memory: 1 << 18,
      throughputBytes: 64 << 20,
    };
  }
  const big = 1 << 28;
  const fits = gpu.limits.maxStorageBufferBindingSize >= big * 4 && gpu.limits.maxBufferSize >= big * 4;
  return {
    chain: fits ? [1 << 24, big] : [1 << 24],
    readback: 1 << 24,
    sum: 1 << 26,
    rows: [4096, 16_384],
    matmul: [1024, 2048, 4096],
    dependent: 10_000,
    serving: { requests: 256, inFlight: 32, batch: 8 },
    training: { batch: 256, steps: 20 },
    hostOps: 20_000,
    graphOps: 1000,
    small: [64, 16_384],
    memory: 1 << 24,
    // 4 GiB. Not `4 << 30`: JavaScript shifts are 32-bit, and `4 << 30` is 0, which sized every
    // full-mode throughput sample to 2 iterations from 2026-11-29 to 2026-11-30 (BENCHMARKS.md,
    // eleventh run).
    throughputBytes: 4 * 1024 ** 3,
  };
}

/** Repeat counts: `quick` keeps the software adapter's run short. */
export function repeatsFor(quick: boolean, sizes: Sizes, outputBytes: number): Repeats {
  const maxIterations = quick ? 8 : 50;
  const byMemory = Math.floor(sizes.throughputBytes / Math.max(outputBytes, 1));
  return {
    warmup: quick ? 1 : 3,
    // Steady state for every library (measure.ts, `warmUp`): a second of untimed iterations (at
    // most 5,000), so a host path is measured after V8 optimised it, not while it does. A
    // quarter second was not enough for a reduction: on the H200 host (2026-11-30) Weft's 2^26
    // sum took 144 µs per iteration over its first 1,000 and 69 µs over 30,000 (the limit
    // kernel's 72 µs).
    warmupMs: quick ? 0 : 1000,
    samples: quick ? 7 : 15,
    iterations: Math.max(2, Math.min(maxIterations, byMemory)),
  };
}
