/**
 * Workload "dependent": `ops` (10,000) dependent `add(1)` on a one-element tensor, then its read —
 * the shape of a tiny sequential loop (a counter, a scalar recurrence), where the host does all
 * the work and TF.js forwards small tensors to its CPU. Weft vs TF.js by latency (each sample
 * ends with its read); target `dependent-10k-vs-tfjs` in `../targets.ts`. Shared with the CPU
 * section, which runs the same loop on Weft's CPU backend.
 *
 * @module
 */
import type * as tfTypes from "@tensorflow/tfjs-core";
import { type Device, type Tensor, tensor, tidy } from "@weft/tensor";
import type { BenchContext } from "../context.js";
import { compare } from "../harness/data.js";
import { measureVariant, readLoop, type VariantRun } from "../harness/variant.js";
import { LABEL, VARIANT } from "../targets.js";

/** The check: every add is exact in f32 (0.5 + ops). */
const check = (ops: number) => (v: ArrayLike<number>): string => compare(v, () => 0.5 + ops, [0], 0);

/** One sample's work in Weft: `ops` dependent adds on `x`, all alive until the `tidy` ends. */
export function weftDependentAdds(x: Tensor, ops: number): Tensor {
  return tidy(() => {
    let y = x;
    for (let i = 0; i < ops; i++) y = y.add(1);
    return y;
  });
}

/** The loop in Weft on `device`, read with `data()`. */
export function dependentWeft(device: Device, ops: number): VariantRun {
  const x = tensor([0.5], { device, shape: [1] });
  return readLoop(() => weftDependentAdds(x, ops), (t) => t.data() as Promise<ArrayLike<number>>, check(ops), () => x.dispose());
}

/** The loop in TF.js on its active backend, read with `data()`. */
export function dependentTf(tf: typeof tfTypes, ops: number): VariantRun {
  const x = tf.tensor1d([0.5]);
  const adds = (): tfTypes.Tensor =>
    tf.tidy(() => {
      let y = x;
      for (let i = 0; i < ops; i++) y = tf.add(y, 1);
      return y;
    });
  return readLoop(adds, (t) => t.data() as Promise<ArrayLike<number>>, check(ops), () => x.dispose());
}

/** Runs the workload on the GPU section's Weft and TF.js. */
export async function runDependent(ctx: BenchContext): Promise<void> {
  const ops = ctx.sizes.dependent;
  const base = ctx.repeats(4);
  const common = { workload: "dependent", size: LABEL.dependent(ops), methods: ["latency"] as const, repeats: { ...base, warmup: Math.max(2, base.warmup) } };
  await measureVariant(ctx, { ...common, variant: VARIANT.weft, peer: ctx.weft, setup: (w) => dependentWeft(w.device, ops) });
  await measureVariant(ctx, { ...common, variant: VARIANT.tfjs, peer: ctx.tf, setup: (p) => dependentTf(p.tf, ops) });
}
