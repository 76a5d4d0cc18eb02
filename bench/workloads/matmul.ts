/**
 * Workload 4: square f32 matrix products, Weft vs TensorFlow.js (and jax-js, for reference).
 *
 * Figure: TFLOP/s (2·n³ flops). Targets (`matmul-1024-vs-tfjs`, …: ≥ 1.5× by throughput, latency
 * informative) are in `../targets.ts`. Every result is checked at sampled entries against a
 * float64 product.
 *
 * @module
 */
import type * as jaxTypes from "@jax-js/jax";
import type * as tfTypes from "@tensorflow/tfjs-core";
import { tensor } from "@weft/tensor";
import { newestOutputLoop } from "../peers/weft.js";
import type { BenchContext } from "../context.js";
import { compare, hostData, matmulRef } from "../harness/data.js";
import { measureVariant } from "../harness/variant.js";
import { LABEL, VARIANT } from "../targets.js";

/** Entries of an `n × n` product to check: corners, diagonal and a spread of others. */
function entries(n: number): [number, number][] {
  const out: [number, number][] = [[0, 0], [0, n - 1], [n - 1, 0], [n - 1, n - 1]];
  for (let k = 0; k < 60; k++) out.push([(k * 7919) % n, (k * 104729 + 13) % n]);
  return out;
}

/** Checks `c` (row-major `n × n`) at {@link entries}. */
function checkProduct(c: ArrayLike<number>, a: Float32Array, b: Float32Array, n: number): string {
  const picks = entries(n);
  const flat = picks.map(([i, j]) => i * n + j);
  const expected = new Map(picks.map(([i, j]) => [i * n + j, matmulRef(a, b, n, i, j)]));
  return compare(c, (idx) => expected.get(idx) as number, flat, 1e-3);
}

/** Runs workload 4 at every matmul size. */
export async function runMatmul(ctx: BenchContext): Promise<void> {
  for (const n of ctx.sizes.matmul) {
    const a = hostData(n * n, 41, -1, 1);
    const b = hostData(n * n, 42, -1, 1);
    const size = LABEL.matmul(n);
    const repeats = ctx.repeats(n * n * 4);
    const tflops = (ms: number) => ({ value: (2 * n * n * n) / (ms / 1000) / 1e12, unit: "TFLOP/s" });

    await measureVariant(ctx, {
      workload: "matmul",
      variant: VARIANT.weft,
      size,
      peer: ctx.weft,
      repeats,
      figure: tflops,
      setup: async (w) => {
        const ta = tensor(a, { device: w.device, shape: [n, n] });
        const tb = tensor(b, { device: w.device, shape: [n, n] });
        // One product starts the autotuning of its tile configuration; wait for it to finish so
        // the timed runs use the winner and no measurement of the tuner shares the GPU with them.
        const first = ta.matmul(tb);
        await w.device.sync();
        await w.settle();
        first.dispose();
        return {
          timed: newestOutputLoop(w, () => ta.matmul(tb)),
          check: async () => {
            const c = ta.matmul(tb);
            try {
              return checkProduct((await c.data()) as Float32Array, a, b, n);
            } finally {
              c.dispose();
            }
          },
          dispose: () => {
            ta.dispose();
            tb.dispose();
          },
        };
      },
    });

    await measureVariant(ctx, {
      workload: "matmul",
      variant: VARIANT.tfjs,
      size,
      peer: ctx.tf,
      repeats,
      figure: tflops,
      setup: (p) => {
        const ta = p.tf.tensor2d(a, [n, n]);
        const tb = p.tf.tensor2d(b, [n, n]);
        let outs: tfTypes.Tensor[] = [];
        return {
          timed: {
            step: () => {
              outs.push(p.tf.matMul(ta, tb));
              if (outs.length > 1) outs.shift()?.dispose();
            },
            wait: () => p.wait(),
            release: () => {
              p.tf.dispose(outs);
              outs = [];
            },
          },
          check: async () => {
            const c = p.tf.matMul(ta, tb);
            try {
              return checkProduct((await c.data()) as Float32Array, a, b, n);
            } finally {
              c.dispose();
            }
          },
          dispose: () => p.tf.dispose([ta, tb]),
        };
      },
    });

    await measureVariant(ctx, {
      workload: "matmul",
      variant: "jax-js",
      size,
      peer: ctx.jax,
      repeats,
      figure: tflops,
      setup: (p) => {
        const np = p.jax.numpy;
        const ja = np.array(a, { shape: [n, n] });
        const jb = np.array(b, { shape: [n, n] });
        let outs: jaxTypes.Array[] = [];
        return {
          timed: {
            step: () => outs.push(np.matmul(ja.ref, jb.ref)),
            wait: () => Promise.all(outs.map((o) => o.blockUntilReady())),
            release: () => {
              for (const o of outs) o.dispose();
              outs = [];
            },
          },
          check: async () => checkProduct((await np.matmul(ja.ref, jb.ref).data()) as Float32Array, a, b, n),
          dispose: () => {
            ja.dispose();
            jb.dispose();
          },
        };
      },
    });

  }
}
