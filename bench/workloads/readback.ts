/**
 * Workload 2: reading a 64 MB f32 tensor back to the host.
 *
 * Variants: Weft `await t.data()`, raw `copyBufferToBuffer` + `mapAsync` (a reused staging buffer
 * per concurrent read), TensorFlow.js `data()`. Each read gets a *fresh*, already computed tensor
 * (`x * 1`, synced before the clock starts), so no library can answer from a host cache.
 * Throughput starts several reads at once and awaits them together; latency awaits each.
 * Ratios: Weft vs TF.js (≥ 20×), Weft vs raw (≥ 0.5: within 2×), by latency.
 *
 * @module
 */
import type * as tfTypes from "@tensorflow/tfjs-core";
import type { Tensor } from "@weft/tensor";
import { tensor } from "@weft/tensor";
import type { BenchContext } from "../context.js";
import { checkIndices, compare, hostData, sizeText } from "../harness/data.js";
import { gbps, measureVariant, pick } from "../harness/variant.js";

/** Runs workload 2. */
export async function runReadback(ctx: BenchContext): Promise<void> {
  const n = ctx.sizes.readback;
  const bytes = n * 4;
  const host = hostData(n, 21);
  const indices = checkIndices(n);
  const size = `${sizeText(n)} (${bytes >> 20} MB)`;
  const base = ctx.repeats(bytes);
  const repeats = { ...base, iterations: Math.min(base.iterations, 8) };

  const raw = await measureVariant(ctx, {
    workload: "readback",
    variant: "raw mapAsync",
    size,
    peer: { ok: true, value: ctx.raw },
    repeats,
    figure: gbps(bytes),
    setup: (raw) => {
      const src = raw.upload(host);
      let pending: Promise<Float32Array>[] = [];
      let last: Float32Array | undefined;
      return {
        timed: {
          step: (i) => pending.push(raw.read(src, bytes, i)),
          wait: async () => {
            const all = await Promise.all(pending);
            last = all[all.length - 1];
          },
          release: () => {
            pending = [];
          },
        },
        check: async () => (last === undefined ? "WRONG: nothing was read" : compare(last, (i) => host[i] as number, indices, 0)),
        dispose: () => raw.release(src),
      };
    },
  });

  const weft = await measureVariant(ctx, {
    workload: "readback",
    variant: "weft data()",
    size,
    peer: ctx.weft,
    repeats,
    figure: gbps(bytes),
    setup: async (w) => {
      const x = tensor(host, { device: w.device, shape: [n] });
      let ready: Tensor[] = [];
      let pending: Promise<unknown>[] = [];
      let last: ArrayLike<number> | undefined;
      return {
        timed: {
          prepare: async (steps) => {
            for (let i = 0; i < steps; i++) ready.push(x.mul(1));
            await w.device.sync();
          },
          step: (i) => pending.push((ready[i] as Tensor).data()),
          wait: async () => {
            const all = await Promise.all(pending);
            last = all[all.length - 1] as ArrayLike<number>;
          },
          release: () => {
            for (const t of ready) t.dispose();
            ready = [];
            pending = [];
          },
        },
        check: async () => (last === undefined ? "WRONG: nothing was read" : compare(last, (i) => host[i] as number, indices, 0)),
        dispose: () => x.dispose(),
      };
    },
  });

  const tf = await measureVariant(ctx, {
    workload: "readback",
    variant: "tfjs data()",
    size,
    peer: ctx.tf,
    repeats,
    figure: gbps(bytes),
    setup: (p) => {
      const x = p.tf.tensor1d(host);
      let ready: tfTypes.Tensor[] = [];
      let pending: Promise<unknown>[] = [];
      let last: ArrayLike<number> | undefined;
      return {
        timed: {
          prepare: async (steps) => {
            for (let i = 0; i < steps; i++) ready.push(p.tf.mul(x, 1));
            await p.wait();
          },
          step: (i) => pending.push((ready[i] as tfTypes.Tensor).data()),
          wait: async () => {
            const all = await Promise.all(pending);
            last = all[all.length - 1] as ArrayLike<number>;
          },
          release: () => {
            p.tf.dispose(ready);
            ready = [];
            pending = [];
          },
        },
        check: async () => (last === undefined ? "WRONG: nothing was read" : compare(last, (i) => host[i] as number, indices, 0)),
        dispose: () => x.dispose(),
      };
    },
  });

  ctx.report.ratio("readback", `weft vs tfjs, latency, ${size}`, pick(weft, "latency"), pick(tf, "latency"), { text: "≥ 20", min: 20 }, { time: true });
  ctx.report.ratio("readback", `weft / raw mapAsync (speed), latency, ${size}`, pick(weft, "latency"), pick(raw, "latency"), { text: "≥ 0.5", min: 0.5 }, { time: true });
}
