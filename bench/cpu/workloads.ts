/**
 * The CPU section's workloads (issue "The CPU backend at speed"), each run by Weft's CPU backend,
 * TF.js CPU and TF.js WebAssembly with its read inside the timed region:
 *
 * | name | what one sample does |
 * |---|---|
 * | `chain` | the 8-op chain `relu(exp(-(sin(x*0.5+1))^2) + x)` on 2^20 f32 (Weft fuses it), then `data()` |
 * | `small` | the same chain on 64 inputs of 16K f32, then every output's `data()` |
 * | `matmul` | `a @ b`, 512×512 f32, then `data()` |
 * | `sum` | the sum of 2^22 f32, then `data()` |
 * | `dependent` | 10,000 dependent `add(1)` on a 1-element tensor, then `data()` |
 * | `serving` | the demo's MLP (64→128→128→10, gelu, softmax) on batch 8: 64 requests, 8 in flight, each reading its result |
 *
 * Every result is checked against a float64 reference before its time counts.
 *
 * @module
 */
import type * as tfTypes from "@tensorflow/tfjs-core";
import { type Tensor, tensor } from "@weft/tensor";
import { chainRef, checkIndices, compare, hostData, matmulRef, sumRef } from "../harness/data.js";
import { readLoop, type VariantRun } from "../harness/variant.js";
import { tfChain } from "../peers/tfjs.js";
import { mlpInputs, mlpRef, mlpWeights, perTaskStreams, tfMlpWeights, tfRequest, weftMlpWeights, weftRequest } from "../harness/mlp.js";
import { weftChain } from "../workloads/chain.js";
import { dependentTf, dependentWeft } from "../workloads/dependent.js";
import type { CpuBenchContext, CpuWorkloadName } from "./cpu-context.js";
import { sideBySide } from "./side-by-side.js";

/** Sizes of the CPU section (the same in quick and full mode). */
export const CPU_SIZES = {
  chain: 1 << 20,
  small: [64, 16_384] as const,
  matmul: 512,
  sum: 1 << 22,
  dependent: 10_000,
  serving: { requests: 64, inFlight: 8, batch: 8 },
} as const;

const weftRead = (t: Tensor): Promise<ArrayLike<number>> => t.data() as Promise<ArrayLike<number>>;
const tfRead = (t: tfTypes.Tensor): Promise<ArrayLike<number>> => t.data() as Promise<ArrayLike<number>>;

async function chain(ctx: CpuBenchContext): Promise<void> {
  const n = CPU_SIZES.chain;
  const host = hostData(n, 11);
  const indices = checkIndices(n);
  const check = (v: ArrayLike<number>): string => compare(v, (i) => chainRef(host[i] as number), indices);
  await sideBySide(ctx, {
    workload: "chain",
    size: "2^20 f32",
    id: "chain-1M",
    floor: { text: "≥ 2", min: 2 },
    goal: { text: "≥ 1", min: 1 },
    weft: (w) => {
      const x = tensor(host, { device: w.device, shape: [n] });
      return readLoop(() => weftChain(x), weftRead, check, () => x.dispose());
    },
    tf: (p) => {
      const x = p.tf.tensor1d(host);
      return readLoop(() => tfChain(x), tfRead, check, () => x.dispose());
    },
  });
}

async function small(ctx: CpuBenchContext): Promise<void> {
  const [count, n] = CPU_SIZES.small;
  const hosts = Array.from({ length: count }, (_, k) => hostData(n, 600 + k));
  const indices = [0, 1, n >> 1, n - 1];
  const check = (outs: readonly ArrayLike<number>[]): string => {
    for (let k = 0; k < count; k++) {
      const c = compare(outs[k] as ArrayLike<number>, (i) => chainRef((hosts[k] as Float32Array)[i] as number), indices);
      if (!c.startsWith("ok")) return `chain ${k}: ${c}`;
    }
    return `ok (all ${count} chains)`;
  };
  const run = <T extends { dispose(): void }>(xs: T[], f: (x: T) => T, read: (t: T) => Promise<ArrayLike<number>>): VariantRun => {
    let outs: T[] = [];
    let last: ArrayLike<number>[] = [];
    return {
      timed: {
        step: () => {
          outs = xs.map(f);
        },
        wait: async () => {
          last = await Promise.all(outs.map(read));
        },
        release: () => {
          for (const o of outs) o.dispose();
          outs = [];
        },
      },
      check: async () => check(last),
      dispose: () => {
        for (const x of xs) x.dispose();
      },
    };
  };
  await sideBySide(ctx, {
    workload: "small",
    size: `${count} × 16K f32`,
    id: "small-64x16K",
    floor: { text: "≥ 2", min: 2 },
    goal: { text: "≥ 1", min: 1 },
    weft: (w) => run(hosts.map((h) => tensor(h, { device: w.device, shape: [n] })), weftChain, weftRead),
    tf: (p) => run(hosts.map((h) => p.tf.tensor1d(h)), tfChain, tfRead),
  });
}

async function matmul(ctx: CpuBenchContext): Promise<void> {
  const n = CPU_SIZES.matmul;
  const a = hostData(n * n, 41);
  const b = hostData(n * n, 42);
  const probes = [[0, 0], [1, n - 1], [n - 1, 0], [n >> 1, n >> 2], [n - 1, n - 1]] as const;
  const check = (v: ArrayLike<number>): string => compare(probes.map(([i, j]) => v[i * n + j] as number), (k) => matmulRef(a, b, n, probes[k]![0], probes[k]![1]), probes.map((_, k) => k));
  await sideBySide(ctx, {
    workload: "matmul",
    size: `${n}² f32`,
    id: `matmul-${n}`,
    floor: { text: "≥ 1.5", min: 1.5 },
    goal: { text: "≥ 0.5", min: 0.5 },
    figure: (ms) => ({ value: (2 * n * n * n) / (ms / 1000) / 1e9, unit: "GFLOP/s" }),
    weft: (w) => {
      const ta = tensor(a, { device: w.device, shape: [n, n] });
      const tb = tensor(b, { device: w.device, shape: [n, n] });
      return readLoop(() => ta.matmul(tb), weftRead, check, () => { ta.dispose(); tb.dispose(); });
    },
    tf: (p) => {
      const ta = p.tf.tensor2d(a, [n, n]);
      const tb = p.tf.tensor2d(b, [n, n]);
      return readLoop(() => p.tf.matMul(ta, tb), tfRead, check, () => { ta.dispose(); tb.dispose(); });
    },
  });
}

async function sum(ctx: CpuBenchContext): Promise<void> {
  const n = CPU_SIZES.sum;
  const host = hostData(n, 31, 0, 1);
  const want = sumRef(host);
  // f32 accumulation (TF.js WebAssembly) may lose ~1e-4 relative at 4M elements; Weft sums in f64.
  const check = (v: ArrayLike<number>): string => compare(v, () => want, [0], 1e-3);
  await sideBySide(ctx, {
    workload: "sum",
    size: "2^22 f32",
    id: "sum-4M",
    floor: { text: "≥ 1", min: 1 },
    goal: { text: "≥ 1", min: 1 },
    figure: (ms) => ({ value: (4 * n) / (ms / 1000) / 1e9, unit: "GB/s" }),
    weft: (w) => {
      const x = tensor(host, { device: w.device, shape: [n] });
      return readLoop(() => x.sum(), weftRead, check, () => x.dispose());
    },
    tf: (p) => {
      const x = p.tf.tensor1d(host);
      return readLoop(() => p.tf.sum(x), tfRead, check, () => x.dispose());
    },
  });
}

async function dependent(ctx: CpuBenchContext): Promise<void> {
  const ops = CPU_SIZES.dependent;
  await sideBySide(ctx, {
    workload: "dependent",
    size: `${ops} adds on 1 f32`,
    id: "dependent-10k",
    floor: { text: "≥ 1", min: 1 },
    goal: undefined,
    weft: (w) => dependentWeft(w.device, ops),
    tf: (p) => dependentTf(p.tf, ops),
  });
}

async function serving(ctx: CpuBenchContext): Promise<void> {
  const { requests, inFlight, batch } = CPU_SIZES.serving;
  const weights = mlpWeights();
  const inputs = mlpInputs(requests, batch);
  const want = mlpRef(inputs[0]!, weights, batch);
  const check = (v: ArrayLike<number>): string => compare(v, (i) => want[i]!, [...want.keys()], 1e-4);
  /** Serves every request with at most `inFlight` at once; resolves with request 0's values. */
  const serve = async (one: (i: number) => Promise<ArrayLike<number>>): Promise<ArrayLike<number>> => {
    let next = 0;
    let first: ArrayLike<number> = [];
    const lane = async (): Promise<void> => {
      while (next < requests) {
        const i = next++;
        const v = await one(i);
        if (i === 0) first = v;
      }
    };
    await Promise.all(Array.from({ length: inFlight }, lane));
    return first;
  };
  const run = (one: (i: number) => Promise<ArrayLike<number>>, dispose: () => void, around?: <T>(f: () => Promise<T>) => Promise<T>): VariantRun => {
    let pending: Promise<ArrayLike<number>> | undefined;
    let last: ArrayLike<number> | undefined;
    return {
      timed: {
        step: () => {
          pending = around === undefined ? serve(one) : around(() => serve(one));
        },
        wait: async () => {
          last = await pending;
        },
      },
      check: async () => (last === undefined ? "WRONG: nothing served" : check(last)),
      dispose,
    };
  };
  await sideBySide(ctx, {
    workload: "serving",
    size: `MLP 64→128→128→10, batch ${batch}, ${requests} requests, ${inFlight} in flight`,
    id: "serving",
    floor: { text: "≥ 1.5", min: 1.5 },
    goal: { text: "≥ 1", min: 1 },
    figure: (ms) => ({ value: requests / (ms / 1000), unit: "req/s" }),
    // 7,680 requests (120 samples) before timing, for each library: steady state, as the GPU
    // serving workload measures it. V8 keeps optimising a library's host path for thousands of
    // requests: on the 2-core machine (2026-11-30) Weft went 3,040 → 5,280 → 6,640 req/s after
    // 1,024, 6,400 and 19,200 warm-up requests, and TF.js's WebAssembly backend 5,460 → 9,310 →
    // 8,480 (docs/performance.md, "Serving on the CPU: warm-up and gelu").
    warmup: ctx.quick ? 3 : 120,
    weft: (w) => {
      const ws = weftMlpWeights(w.device, weights);
      // Each request on its own stream, as `weft demo` serves them.
      return run((i) => weftRequest(w.device, ws, inputs[i]!, batch), () => { for (const t of ws) t.dispose(); }, perTaskStreams);
    },
    tf: (p) => {
      const ws = tfMlpWeights(p.tf, weights);
      return run((i) => tfRequest(p.tf, ws, inputs[i]!, batch), () => p.tf.dispose(ws));
    },
  });
}

/** The CPU workloads by name. */
export const CPU_RUNNERS: Record<CpuWorkloadName, (ctx: CpuBenchContext) => Promise<void>> = { chain, small, matmul, sum, dependent, serving };
