/**
 * Workload 3: reductions — the sum of every element, and a row-wise sum — Weft vs TensorFlow.js,
 * next to the *limit*: a hand-written two-pass WGSL sum of the same elements run the way the
 * fastest hand-written code runs (buffers and bind groups reused, 30 sums per submit).
 *
 * Figure: GB/s of input read (4 bytes per element; the outputs are negligible). Targets
 * (`sum-2^26-vs-limit`, `rowsum-vs-tfjs`, …) are in `../targets.ts`. Inputs are uniform in [0, 1),
 * so the reference sum is far from zero and a relative error means something.
 *
 * @module
 */
import type * as tfTypes from "@tensorflow/tfjs-core";
import { type Tensor, tensor } from "@weft/tensor";
import type { BenchContext } from "../context.js";
import { checkIndices, compare, hostData } from "../harness/data.js";
import { gbps, measureVariant } from "../harness/variant.js";
import { LIMIT_DISPATCHES } from "../peers/raw-webgpu.js";
import { LABEL, VARIANT } from "../targets.js";
import { limitRepeats, rawLimitRun } from "./chain.js";

/** Float64 row sums of a row-major `rows × cols` matrix. */
function rowSums(x: Float32Array, rows: number, cols: number): Float64Array {
  const out = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = 0;
    for (let c = 0; c < cols; c++) s += x[r * cols + c] as number;
    out[r] = s;
  }
  return out;
}

/** One reduction shape: how Weft and TF.js compute it and what the answer must be. */
interface Case {
  /** The variant names of Weft and TF.js. */
  readonly weftName: string;
  readonly tfName: string;
  /** The size label. */
  readonly size: string;
  readonly shape: readonly number[];
  readonly weft: (x: Tensor) => Tensor;
  readonly tf: (tf: typeof tfTypes, x: tfTypes.Tensor) => tfTypes.Tensor;
  readonly expected: (i: number) => number;
  readonly outputs: number;
}

async function measureCase(ctx: BenchContext, c: Case, host: Float32Array): Promise<void> {
  const n = host.length;
  const size = c.size;
  const repeats = ctx.repeats(c.outputs * 4);
  const indices = checkIndices(c.outputs);
  await measureVariant(ctx, {
    workload: "reduction",
    variant: c.weftName,
    size,
    peer: ctx.weft,
    repeats,
    figure: gbps(4 * n),
    setup: async (w) => {
      const x = tensor(host, { device: w.device, shape: c.shape });
      await w.device.sync();
      let outs: Tensor[] = [];
      return {
        timed: {
          step: () => outs.push(c.weft(x)),
          wait: () => w.device.sync(),
          release: () => {
            for (const o of outs) o.dispose();
            outs = [];
          },
        },
        check: async () => {
          const y = c.weft(x);
          try {
            return compare((await y.data()) as Float32Array, c.expected, indices, 1e-4);
          } finally {
            y.dispose();
          }
        },
        dispose: () => x.dispose(),
      };
    },
  });
  await measureVariant(ctx, {
    workload: "reduction",
    variant: c.tfName,
    size,
    peer: ctx.tf,
    repeats,
    figure: gbps(4 * n),
    setup: (p) => {
      const x = p.tf.tensor(host, [...c.shape]);
      let outs: tfTypes.Tensor[] = [];
      return {
        timed: {
          step: () => outs.push(c.tf(p.tf, x)),
          wait: () => p.wait(),
          release: () => {
            p.tf.dispose(outs);
            outs = [];
          },
        },
        check: async () => {
          const y = c.tf(p.tf, x);
          try {
            return compare((await y.data()) as Float32Array, c.expected, indices, 1e-4);
          } finally {
            y.dispose();
          }
        },
        dispose: () => x.dispose(),
      };
    },
  });
}

/** Runs workload 3. */
export async function runReduction(ctx: BenchContext): Promise<void> {
  const n = ctx.sizes.sum;
  const host = hostData(n, 31, 0, 1);
  const size = LABEL.sum(n);
  let total = 0;
  for (let i = 0; i < n; i++) total += host[i] as number;

  await measureVariant(ctx, {
    workload: "reduction",
    variant: VARIANT.limitSum,
    size,
    peer: ctx.raw,
    repeats: limitRepeats(ctx),
    methods: ["throughput"],
    unitsPerStep: LIMIT_DISPATCHES,
    figure: gbps(4 * n),
    setup: (raw) => rawLimitRun(raw, host, (x) => raw.sumWork(x, n), (v) => compare(v, () => total, [0], 1e-4)),
  });

  await measureCase(ctx, { weftName: VARIANT.weftSum, tfName: VARIANT.tfjsSum, size, shape: [n], weft: (x) => x.sum(), tf: (tf, x) => tf.sum(x), expected: () => total, outputs: 1 }, host);

  const [rows, cols] = ctx.sizes.rows;
  const rowHost = rows * cols === n ? host : hostData(rows * cols, 32, 0, 1);
  const sums = rowSums(rowHost, rows, cols);
  await measureCase(
    ctx,
    { weftName: VARIANT.weftRowSum, tfName: VARIANT.tfjsRowSum, size: LABEL.rows(ctx.sizes.rows), shape: [rows, cols], weft: (x) => x.sum(1), tf: (tf, x) => tf.sum(x, 1), expected: (i) => sums[i] as number, outputs: rows },
    rowHost,
  );
}
