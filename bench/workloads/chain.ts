/**
 * Workload 1: the fused 8-op elementwise chain `relu(exp(-(sin(x*0.5+1))^2) + x)` on one input.
 *
 * Variants: the *limit* (the hand-written WGSL kernel the way the fastest hand-written code runs
 * it: input, output and bind group reused, {@link LIMIT_DISPATCHES} dispatches per submit; figure
 * per dispatch), the same kernel one dispatch per submit with a fresh bind group, Weft fused, Weft
 * unfused, TensorFlow.js, jax-js (`jit`). Figure: effective bandwidth (one read and one write per
 * element, 8 bytes). The targets (`chain-2^24-fused-vs-limit`, …) are in `../targets.ts`.
 *
 * @module
 */
import type * as jaxTypes from "@jax-js/jax";
import type * as tfTypes from "@tensorflow/tfjs-core";
import { type Tensor, tensor, tidy } from "@weft/tensor";
import type { BenchContext } from "../context.js";
import { chainRef, checkIndices, compare, hostData } from "../harness/data.js";
import type { Measurement } from "../harness/report.js";
import { gbps, measureVariant, type VariantRun } from "../harness/variant.js";
import { LIMIT_DISPATCHES, type RawGpu, type RawWork } from "../peers/raw-webgpu.js";
import type { Repeats } from "../harness/measure.js";
import { LABEL, VARIANT } from "../targets.js";
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

/**
 * The limit yardstick of `work` (chain or sum) over `host`: one step submits
 * {@link LIMIT_DISPATCHES} repetitions at once; buffers and bind groups are made once.
 * `check(values)` judges the work's output after the timed runs.
 */
export function rawLimitRun(raw: RawGpu, host: Float32Array, make: (x: GPUBuffer) => RawWork, check: (values: Float32Array) => string): VariantRun {
  const x = raw.upload(host);
  const work = make(x);
  return {
    timed: { step: () => raw.submit(work, LIMIT_DISPATCHES), wait: () => raw.wait() },
    check: async () => check(await raw.read(work.output, work.outputBytes)),
    dispose: () => raw.release(x),
  };
}

/** Repeats of a limit yardstick: a few submits per sample (each {@link LIMIT_DISPATCHES} kernels). */
export function limitRepeats(ctx: BenchContext): Repeats {
  const r = ctx.repeats(0);
  return { ...r, iterations: ctx.options.quick ? 2 : 4 };
}

/** Times the chain on a Weft device (fused or not). */
async function weftVariant(ctx: BenchContext, name: string, peer: BenchContext["weft"], host: Float32Array, n: number): Promise<Measurement[]> {
  const indices = checkIndices(n);
  return measureVariant(ctx, {
    workload: "chain",
    variant: name,
    size: LABEL.chain(n),
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
    const size = LABEL.chain(n);
    const repeats = ctx.repeats(n * 4);

    await measureVariant(ctx, {
      workload: "chain",
      variant: VARIANT.limitChain,
      size,
      peer: ctx.raw,
      repeats: limitRepeats(ctx),
      methods: ["throughput"],
      unitsPerStep: LIMIT_DISPATCHES,
      figure: gbps(8 * n),
      setup: (raw) => {
        const y = raw.empty(n * 4);
        const run = rawLimitRun(raw, host, (x) => raw.chainWork(x, y, n), (v) => compare(v, (i) => chainRef(host[i] as number), indices));
        return { ...run, dispose: () => { run.dispose?.(); raw.release(y); } };
      },
    });

    await measureVariant(ctx, {
      workload: "chain",
      variant: VARIANT.handwritten,
      size,
      peer: ctx.raw,
      repeats,
      figure: gbps(8 * n),
      setup: (raw) => rawChainRun(raw, host, n),
    });

    await weftVariant(ctx, VARIANT.fused, ctx.weft, host, n);
    await weftVariant(ctx, VARIANT.unfused, ctx.weftUnfused, host, n);

    await measureVariant(ctx, {
      workload: "chain",
      variant: VARIANT.tfjs,
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

    await measureVariant(ctx, {
      workload: "chain",
      variant: VARIANT.jax,
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
  }
}
