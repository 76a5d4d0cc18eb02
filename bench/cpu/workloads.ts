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
import { Stream, getStreamPolicy, setStreamPolicy } from "@weft/environment";
import { type Tensor, tensor, tidy } from "@weft/tensor";
import { chainRef, checkIndices, compare, hostData, matmulRef, sumRef } from "../harness/data.js";
import type { VariantRun } from "../harness/variant.js";
import { tfChain } from "../peers/tfjs.js";
import { tfGelu } from "../peers/tfjs-host.js";
import { weftChain } from "../workloads/chain.js";
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

/** A run whose one step produces a result that the wait reads (the read is timed). */
function readLoop<T extends { dispose(): void }>(produce: () => T, read: (t: T) => Promise<ArrayLike<number>>, check: (values: ArrayLike<number>) => string, dispose: () => void): VariantRun {
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
  const check = (v: ArrayLike<number>): string => compare(v, () => 0.5 + ops, [0], 0);
  await sideBySide(ctx, {
    workload: "dependent",
    size: `${ops} adds on 1 f32`,
    id: "dependent-10k",
    floor: { text: "≥ 1", min: 1 },
    goal: undefined,
    weft: (w) => {
      const x = tensor([0.5], { device: w.device, shape: [1] });
      const adds = (): Tensor => tidy(() => {
        let y = x;
        for (let i = 0; i < ops; i++) y = y.add(1);
        return y;
      });
      return readLoop(adds, weftRead, check, () => x.dispose());
    },
    tf: (p) => {
      const x = p.tf.tensor1d([0.5]);
      const adds = (): tfTypes.Tensor => p.tf.tidy(() => {
        let y = x;
        for (let i = 0; i < ops; i++) y = p.tf.add(y, 1);
        return y;
      });
      return readLoop(adds, tfRead, check, () => x.dispose());
    },
  });
}

/** The demo's MLP on host weights (`hostData`, scaled by 1/√fan_in), in float64, for the check. */
function mlpRef(x: Float32Array, w: readonly Float32Array[], batch: number): Float64Array {
  const dims = [64, 128, 128, 10];
  let act = Float64Array.from(x);
  for (let l = 0; l < 3; l++) {
    const [k, m] = [dims[l]!, dims[l + 1]!];
    const weights = w[2 * l]!;
    const bias = w[2 * l + 1]!;
    const out = new Float64Array(batch * m);
    for (let r = 0; r < batch; r++) {
      for (let j = 0; j < m; j++) {
        let s = bias[j]!;
        for (let p = 0; p < k; p++) s += act[r * k + p]! * weights[p * m + j]!;
        out[r * m + j] = l < 2 ? 0.5 * s * (1 + erf64(s / Math.SQRT2)) : s;
      }
    }
    act = out;
  }
  for (let r = 0; r < batch; r++) {
    let max = -Infinity;
    for (let j = 0; j < 10; j++) max = Math.max(max, act[r * 10 + j]!);
    let z = 0;
    for (let j = 0; j < 10; j++) z += Math.exp(act[r * 10 + j]! - max);
    for (let j = 0; j < 10; j++) act[r * 10 + j] = Math.exp(act[r * 10 + j]! - max) / z;
  }
  return act;
}

/** erf to ~1e-7 (Abramowitz–Stegun 7.1.26 is too coarse for a reference; this is its refinement by series). */
function erf64(x: number): number {
  const ax = Math.abs(x);
  if (ax > 6) return Math.sign(x);
  let term = x;
  let s = x;
  for (let n = 1; n < 200; n++) {
    term *= (-x * x) / n;
    const next = s + term / (2 * n + 1);
    if (next === s) break;
    s = next;
  }
  return (2 / Math.sqrt(Math.PI)) * s;
}

async function serving(ctx: CpuBenchContext): Promise<void> {
  const { requests, inFlight, batch } = CPU_SIZES.serving;
  const dims = [64, 128, 128, 10];
  const weights: Float32Array[] = [];
  for (let l = 0; l < 3; l++) {
    const scale = 1 / Math.sqrt(dims[l]!);
    weights.push(hostData(dims[l]! * dims[l + 1]!, 70 + l, -scale * 1.7, scale * 1.7), hostData(dims[l + 1]!, 80 + l, -0.1, 0.1));
  }
  const inputs = Array.from({ length: requests }, (_, i) => hostData(batch * 64, 1000 + i, 0, 1));
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
    weft: (w) => {
      const ws = weights.map((h, k) => tensor(h, { device: w.device, shape: k % 2 === 0 ? [dims[k / 2]!, dims[k / 2 + 1]!] : [h.length] }));
      const forward = (x: Tensor): Tensor => tidy(() => x.matmul(ws[0]!).add(ws[1]!).gelu().matmul(ws[2]!).add(ws[3]!).gelu().matmul(ws[4]!).add(ws[5]!).softmax(-1));
      const one = (i: number): Promise<ArrayLike<number>> =>
        Stream.spawn(async () => {
          const x = tensor(inputs[i]!, { device: w.device, shape: [batch, 64] });
          const y = forward(x);
          x.dispose();
          try {
            return (await y.data()) as ArrayLike<number>;
          } finally {
            y.dispose();
          }
        });
      // Each request on its own stream, as `weft demo` serves them.
      const around = async <T>(f: () => Promise<T>): Promise<T> => {
        const previous = getStreamPolicy();
        setStreamPolicy("per-task");
        try {
          return await f();
        } finally {
          setStreamPolicy(previous);
        }
      };
      return run(one, () => { for (const t of ws) t.dispose(); }, around);
    },
    tf: (p) => {
      const tf = p.tf;
      const ws = weights.map((h, k) => (k % 2 === 0 ? tf.tensor2d(h, [dims[k / 2]!, dims[k / 2 + 1]!]) : tf.tensor1d(h)));
      const forward = (x: tfTypes.Tensor): tfTypes.Tensor => tf.tidy(() => {
        const h1 = tfGelu(tf.add(tf.matMul(x as tfTypes.Tensor2D, ws[0] as tfTypes.Tensor2D), ws[1]!));
        const h2 = tfGelu(tf.add(tf.matMul(h1 as tfTypes.Tensor2D, ws[2] as tfTypes.Tensor2D), ws[3]!));
        return tf.softmax(tf.add(tf.matMul(h2 as tfTypes.Tensor2D, ws[4] as tfTypes.Tensor2D), ws[5]!));
      });
      const one = async (i: number): Promise<ArrayLike<number>> => {
        const x = tf.tensor2d(inputs[i]!, [batch, 64]);
        const y = forward(x);
        x.dispose();
        try {
          return (await y.data()) as ArrayLike<number>;
        } finally {
          y.dispose();
        }
      };
      return run(one, () => tf.dispose(ws));
    },
  });
}

/** The CPU workloads by name. */
export const CPU_RUNNERS: Record<CpuWorkloadName, (ctx: CpuBenchContext) => Promise<void>> = { chain, small, matmul, sum, dependent, serving };
