/**
 * Workload 1: the fused 8-op elementwise chain `relu(exp(-(sin(x*0.5+1))^2) + x)` on one input.
 *
 * Variants: Weft fused, the hand-written WGSL kernel (raw WebGPU), Weft unfused, TensorFlow.js,
 * jax-js (`jit`). Figure: effective bandwidth (one read and one write per element, 8 bytes).
 * Ratios: fused/hand-written by throughput (≥ 0.95), fused/unfused by throughput (≥ 5× at 2^24),
 * fused vs TF.js (≥ 4×) and jax-js (≥ 1.5×) by latency.
 *
 * @module
 */
import type * as jaxTypes from "@jax-js/jax";
import type * as tfTypes from "@tensorflow/tfjs-core";
import { type Tensor, tensor, tidy } from "@weft/tensor";
import type { BenchContext } from "../context.js";
import { chainRef, checkIndices, compare, hostData, sizeText } from "../harness/data.js";
import type { Measurement } from "../harness/report.js";
import { gbps, measureVariant, pick, type VariantRun } from "../harness/variant.js";
import type { RawGpu } from "../peers/raw-webgpu.js";
import { newestOutputLoop, type WeftVariant } from "../peers/weft.js";
import { tfChain } from "../peers/tfjs.js";

/** The chain in Weft: eight recorded ops, one input. */
export function weftChain(x: Tensor): Tensor {
  return tidy(() => x.mul(0.5).add(1).sin().square().neg().exp().add(x).relu());
}

/**
 * The hand-written WGSL chain over `host` (`n` elements) as a timed variant: uploads the input,
 * times `chain` into one output buffer, checks it against {@link chainRef} at the sampled
 * indices, and frees both buffers. Shared by workload 1 and workload 3's bandwidth yardstick.
 */
export function rawChainRun(raw: RawGpu, host: Float32Array, n: number): VariantRun {
  const indices = checkIndices(n);
  const x = raw.upload(host);
  const y = raw.empty(n * 4);
  return {
    timed: { step: () => raw.chain(x, y, n), wait: () => raw.wait() },
    check: async () => {
      raw.chain(x, y, n);
      return compare(await raw.read(y, n * 4), (i) => chainRef(host[i] as number), indices);
    },
    dispose: () => {
      raw.release(x);
      raw.release(y);
    },
  };
}

/** Times the chain on a Weft device (fused or not). */
async function weftVariant(ctx: BenchContext, name: string, peer: BenchContext["weft"], host: Float32Array, n: number): Promise<Measurement[]> {
  const indices = checkIndices(n);
  return measureVariant(ctx, {
    workload: "chain",
    variant: name,
    size: sizeText(n),
    peer,
    repeats: ctx.repeats(n * 4),
    figure: gbps(8 * n),
    setup: async (w: WeftVariant) => {
      const x = tensor(host, { device: w.device, shape: [n] });
      await w.device.sync();
      return {
        timed: newestOutputLoop(w, () => weftChain(x)),
        check: async () => {
          const y = weftChain(x);
          try {
            return compare(await y.data() as Float32Array, (i) => chainRef(host[i] as number), indices);
          } finally {
            y.dispose();
          }
        },
        dispose: () => x.dispose(),
      };
    },
  });
}

/** Runs workload 1 at every chain size. */
export async function runChain(ctx: BenchContext): Promise<void> {
  for (const n of ctx.sizes.chain) {
    const host = hostData(n, 11);
    const indices = checkIndices(n);
    const size = sizeText(n);
    const repeats = ctx.repeats(n * 4);

    const raw = await measureVariant(ctx, {
      workload: "chain",
      variant: "handwritten WGSL",
      size,
      peer: { ok: true, value: ctx.raw },
      repeats,
      figure: gbps(8 * n),
      setup: (raw) => rawChainRun(raw, host, n),
    });

    const fused = await weftVariant(ctx, "weft fused", ctx.weft, host, n);
    const unfused = await weftVariant(ctx, "weft unfused", ctx.weftUnfused, host, n);

    const tf = await measureVariant(ctx, {
      workload: "chain",
      variant: "tfjs",
      size,
      peer: ctx.tf,
      repeats,
      figure: gbps(8 * n),
      setup: (p) => {
        const x = p.tf.tensor1d(host);
        let outs: tfTypes.Tensor[] = [];
        return {
          timed: {
            step: () => {
              outs.push(tfChain(x));
              if (outs.length > 1) outs.shift()?.dispose();
            },
            wait: () => p.wait(),
            release: () => {
              p.tf.dispose(outs);
              outs = [];
            },
          },
          check: async () => {
            const y = tfChain(x);
            try {
              return compare((await y.data()) as Float32Array, (i) => chainRef(host[i] as number), indices);
            } finally {
              y.dispose();
            }
          },
          dispose: () => x.dispose(),
        };
      },
    });

    const jax = await measureVariant(ctx, {
      workload: "chain",
      variant: "jax-js jit",
      size,
      peer: ctx.jax,
      repeats,
      figure: gbps(8 * n),
      setup: (p) => {
        const x = p.jax.numpy.array(host, { shape: [n] });
        let outs: jaxTypes.Array[] = [];
        return {
          timed: {
            // jax-js keeps every output until the wait: its arrays are lazy too, and one disposed
            // before it was computed would not measure the chain.
            step: () => outs.push(p.chain(x.ref)),
            wait: () => Promise.all(outs.map((o) => o.blockUntilReady())),
            release: () => {
              for (const o of outs) o.dispose();
              outs = [];
            },
          },
          check: async () => {
            const y = p.chain(x.ref);
            return compare((await y.data()) as Float32Array, (i) => chainRef(host[i] as number), indices);
          },
          dispose: () => x.dispose(),
        };
      },
    });

    const r = ctx.report;
    const big = n >= 1 << 24;
    const scale = big ? undefined : "below 2^24 the targets are indicative only";
    r.ratio("chain", `fused / handwritten WGSL, throughput, ${size}`, pick(fused, "throughput"), pick(raw, "throughput"), { text: "≥ 0.95", min: 0.95 }, { time: true });
    r.ratio("chain", `fused vs unfused, throughput, ${size}`, pick(fused, "throughput"), pick(unfused, "throughput"), { text: "≥ 5", min: 5 }, { time: true, ...(scale === undefined ? {} : { note: scale }) });
    r.ratio("chain", `fused vs tfjs, latency, ${size}`, pick(fused, "latency"), pick(tf, "latency"), { text: "≥ 4", min: 4 }, { time: true });
    r.ratio("chain", `fused vs jax-js jit, latency, ${size}`, pick(fused, "latency"), pick(jax, "latency"), { text: "≥ 1.5", min: 1.5 }, { time: true });
  }
}
