/**
 * Workload 6: many small tensors — 64 independent 8-op chains on 16K elements each, every output
 * read at the end. Per-op dispatch and submit costs dominate here, so batching many dispatches per
 * submit is what wins.
 *
 * One iteration records the 64 chains; the wait reads every output recorded since the last wait.
 * Latency: one iteration per wait; throughput: several iterations, then one wait reading them all.
 * Ratio: Weft vs TF.js ≥ 10× by latency.
 *
 * @module
 */
import type * as tfTypes from "@tensorflow/tfjs-core";
import { type Tensor, tensor } from "@weft/tensor";
import type { BenchContext } from "../context.js";
import { chainRef, compare, hostData } from "../harness/data.js";
import { measureVariant, pick } from "../harness/variant.js";
import { tfChain } from "../peers/tfjs.js";
import { weftChain } from "./chain.js";

/** Runs workload 6. */
export async function runSmallTensors(ctx: BenchContext): Promise<void> {
  const [count, n] = ctx.sizes.small;
  const hosts = Array.from({ length: count }, (_, k) => hostData(n, 600 + k));
  const size = `${count} × ${n} f32`;
  const base = ctx.repeats(count * n * 4);
  const repeats = { ...base, iterations: Math.min(base.iterations, 4) };
  const indices = [0, 1, n >> 1, n - 1];
  const checkAll = (outs: readonly ArrayLike<number>[]): string => {
    if (outs.length < count) return `WRONG: ${outs.length} outputs read, expected ${count}`;
    for (let k = 0; k < count; k++) {
      const host = hosts[k] as Float32Array;
      const c = compare(outs[outs.length - count + k] as ArrayLike<number>, (i) => chainRef(host[i] as number), indices);
      if (!c.startsWith("ok")) return `chain ${k}: ${c}`;
    }
    return "ok (all 64 chains)";
  };

  const weft = await measureVariant(ctx, {
    workload: "small",
    variant: "weft",
    size,
    peer: ctx.weft,
    repeats,
    setup: async (w) => {
      const xs = hosts.map((h) => tensor(h, { device: w.device, shape: [n] }));
      await w.device.sync();
      let outs: Tensor[] = [];
      let last: ArrayLike<number>[] = [];
      return {
        timed: {
          step: () => {
            for (const x of xs) outs.push(weftChain(x));
          },
          wait: async () => {
            last = (await Promise.all(outs.map((o) => o.data()))) as ArrayLike<number>[];
          },
          release: () => {
            for (const o of outs) o.dispose();
            outs = [];
          },
        },
        check: async () => checkAll(last),
        dispose: () => {
          for (const x of xs) x.dispose();
        },
      };
    },
  });

  const tf = await measureVariant(ctx, {
    workload: "small",
    variant: "tfjs",
    size,
    peer: ctx.tf,
    repeats,
    setup: (p) => {
      const xs = hosts.map((h) => p.tf.tensor1d(h));
      let outs: tfTypes.Tensor[] = [];
      let last: ArrayLike<number>[] = [];
      return {
        timed: {
          step: () => {
            for (const x of xs) outs.push(tfChain(x));
          },
          wait: async () => {
            last = (await Promise.all(outs.map((o) => o.data()))) as ArrayLike<number>[];
          },
          release: () => {
            p.tf.dispose(outs);
            outs = [];
          },
        },
        check: async () => checkAll(last),
        dispose: () => p.tf.dispose(xs),
      };
    },
  });

  ctx.report.ratio("small", `weft vs tfjs, latency, ${size}`, pick(weft, "latency"), pick(tf, "latency"), { text: "≥ 10", min: 10 }, { time: true });
  ctx.report.ratio("small", `weft vs tfjs, throughput, ${size}`, pick(weft, "throughput"), pick(tf, "throughput"), { text: "≥ 10", min: 10 }, { time: true });
}
