/**
 * Workload 3: reductions — the sum of every element, and a row-wise sum — Weft vs TensorFlow.js,
 * next to the hand-written elementwise kernel at the same element count as the bandwidth yardstick.
 *
 * Figure: GB/s of input read (4 bytes per element; the outputs are negligible). Ratios: Weft's
 * sum bandwidth / the elementwise kernel's (≥ 0.5, throughput), Weft vs TF.js (≥ 100× on the H200,
 * latency). Inputs are uniform in [0, 1), so the reference sum is far from zero and a relative
 * error means something.
 *
 * @module
 */
import type * as tfTypes from "@tensorflow/tfjs-core";
import { type Tensor, tensor } from "@weft/tensor";
import type { BenchContext } from "../context.js";
import { checkIndices, compare, hostData, sizeText } from "../harness/data.js";
import type { Measurement } from "../harness/report.js";
import { gbps, measureVariant, pick } from "../harness/variant.js";
import { rawChainRun } from "./chain.js";

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
  readonly name: string;
  readonly shape: readonly number[];
  readonly weft: (x: Tensor) => Tensor;
  readonly tf: (tf: typeof tfTypes, x: tfTypes.Tensor) => tfTypes.Tensor;
  readonly expected: (i: number) => number;
  readonly outputs: number;
}

async function measureCase(ctx: BenchContext, c: Case, host: Float32Array): Promise<{ weft: Measurement[]; tf: Measurement[] }> {
  const n = host.length;
  const size = c.shape.length === 1 ? sizeText(n) : `${c.shape.join("×")} f32`;
  const repeats = ctx.repeats(c.outputs * 4);
  const indices = checkIndices(c.outputs);
  const weft = await measureVariant(ctx, {
    workload: "reduction",
    variant: `weft ${c.name}`,
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
  const tf = await measureVariant(ctx, {
    workload: "reduction",
    variant: `tfjs ${c.name}`,
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
  return { weft, tf };
}

/** Runs workload 3. */
export async function runReduction(ctx: BenchContext): Promise<void> {
  const n = ctx.sizes.sum;
  const host = hostData(n, 31, 0, 1);
  const size = sizeText(n);

  // The yardstick: the hand-written elementwise kernel streaming the same number of elements.
  const elementwise = await measureVariant(ctx, {
    workload: "reduction",
    variant: "handwritten elementwise (yardstick)",
    size,
    peer: { ok: true, value: ctx.raw },
    repeats: ctx.repeats(n * 4),
    methods: ["throughput"],
    figure: gbps(8 * n),
    setup: (raw) => rawChainRun(raw, host, n),
  });

  let total = 0;
  for (let i = 0; i < n; i++) total += host[i] as number;
  const all = await measureCase(ctx, { name: "sum", shape: [n], weft: (x) => x.sum(), tf: (tf, x) => tf.sum(x), expected: () => total, outputs: 1 }, host);

  const [rows, cols] = ctx.sizes.rows;
  const rowHost = rows * cols === n ? host : hostData(rows * cols, 32, 0, 1);
  const sums = rowSums(rowHost, rows, cols);
  const rowwise = await measureCase(
    ctx,
    { name: "row sum", shape: [rows, cols], weft: (x) => x.sum(1), tf: (tf, x) => tf.sum(x, 1), expected: (i) => sums[i] as number, outputs: rows },
    rowHost,
  );

  const r = ctx.report;
  const yard = pick(elementwise, "throughput");
  r.ratio("reduction", `weft sum / elementwise bandwidth, throughput, ${size}`, pick(all.weft, "throughput"), yard, { text: "≥ 0.5", min: 0.5 });
  r.ratio("reduction", `weft row sum / elementwise bandwidth, throughput, ${rows}×${cols}`, pick(rowwise.weft, "throughput"), yard, { text: "≥ 0.5", min: 0.5 });
  r.ratio("reduction", `weft sum vs tfjs, latency, ${size}`, pick(all.weft, "latency"), pick(all.tf, "latency"), { text: "≥ 100", min: 100 }, { time: true, note: "the ≥ 100× target is the H200's" });
  r.ratio("reduction", `weft row sum vs tfjs, latency, ${rows}×${cols}`, pick(rowwise.weft, "latency"), pick(rowwise.tf, "latency"), { text: "≥ 100", min: 100 }, { time: true, note: "the ≥ 100× target is the H200's" });
}
