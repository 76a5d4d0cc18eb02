/**
 * Workload 6: many small tensors — 64 independent 8-op chains on 16K elements each, every output
 * read at the end. Per-op dispatch and submit costs dominate here, so batching many dispatches per
 * submit is what wins.
 *
 * One iteration records the 64 chains; the wait reads every output recorded since the last wait.
 * Latency: one iteration per wait; throughput: several iterations, then one wait reading them all.
 * Target `small-64-vs-tfjs` (≥ 15× by latency) is in `../targets.ts`.
 *
 * @module
 */
import type * as tfTypes from "@tensorflow/tfjs-core";
import { type Tensor, tensor } from "@weft/tensor";
import type { BenchContext } from "../context.js";
import { chainRef, compare, hostData } from "../harness/data.js";
import { measureVariant } from "../harness/variant.js";
import { LABEL, VARIANT } from "../targets.js";
import { tfChain } from "../peers/tfjs.js";
import { weftChain } from "./chain.js";

/** Runs workload 6. */
export async function runSmallTensors(ctx: BenchContext): Promise<void> {
  const [count, n] = ctx.sizes.small;
  const hosts = Array.from({ length: count }, (_, k) => hostData(n, 600 + k));
  const size = LABEL.small(ctx.sizes.small);
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

  await measureVariant(ctx, {
    workload: "small",
    variant: VARIANT.weft,
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

  await measureVariant(ctx, {
    workload: "small",
    variant: VARIANT.tfjs,
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

}
