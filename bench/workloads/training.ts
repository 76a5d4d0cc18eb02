/**
 * Workload "training": one training step of the serving MLP (64→128→128→10, gelu, softmax
 * cross-entropy; the weights of `../harness/mlp.ts`) on a batch of 256 — forward, backward and an
 * Adam update — in Weft (`valueAndGrad` + `optim.adam`, every step recorded and fused like any
 * other work) and in TF.js (`tf.variableGrads` + `tf.train.adam`, issue 10's yardstick), on the
 * same device.
 *
 * Steady state: `warmup` untimed steps (kernels compile, pools grow; Weft's background autotuning
 * is awaited after them), then `samples` timed runs of `steps` steps each, each ending with a wait
 * on the device (no read: a training loop reads its loss only now and then). Figure: steps/s (the
 * median run), with every run as a sample. Check: both libraries start from the same weights and
 * data with the same Adam settings; after the timed runs each reads its loss on a fixed batch and
 * the two must agree to 1% of the loss's fall (they took the same number of identical steps), and the loss must have fallen
 * from its value before training. Target `train-mlp-vs-tfjs` is in `../targets.ts`.
 *
 * @module
 */
import type * as tfTypes from "@tensorflow/tfjs-core";
// TF.js core registers no gradients by itself (the tfjs umbrella package imports these).
import "@tensorflow/tfjs-core/dist/register_all_gradients";
import { optim, valueAndGrad } from "@weft/autodiff";
import { type Device, type Tensor, tensor, tidy } from "@weft/tensor";
import type { BenchContext, Peer } from "../context.js";
import { hostData } from "../harness/data.js";
import { errorText, median } from "../harness/measure.js";
import { MLP_DIMS, mlpShape, mlpWeights, readScalar, tfMlpLogits, weftMlpLogits } from "../harness/mlp.js";
import { LABEL, VARIANT } from "../targets.js";

/** Adam's settings, the same for both libraries (TF.js's default epsilon is 1e-7, Weft's 1e-8: both get 1e-7). */
const ADAM = { lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-7 } as const;

/** The training batch: inputs in [0, 1) and one-hot labels from a fixed seed. */
export function trainingBatch(batch: number): { x: Float32Array; y: Float32Array } {
  const x = hostData(batch * MLP_DIMS[0], 4242, 0, 1);
  const classes = MLP_DIMS[3];
  const y = new Float32Array(batch * classes);
  const pick = hostData(batch, 4343, 0, classes);
  for (let r = 0; r < batch; r++) y[r * classes + Math.min(classes - 1, Math.floor(pick[r]!))] = 1;
  return { x, y };
}

/** One library's training loop, ready to time. */
export interface Trainer {
  /** Records (and, for TF.js, encodes) one training step. */
  step(): void;
  /** Waits until every recorded step has run on the device. */
  wait(): Promise<void>;
  /** The loss on the training batch with the current weights. */
  loss(): Promise<number>;
  dispose(): void;
}

/** Mean softmax cross-entropy of one-hot `y` (`p`: w1, b1, w2, b2, w3, b3). */
function weftLoss(p: readonly Tensor[], x: Tensor, y: Tensor): Tensor {
  return weftMlpLogits(x, p).logSoftmax(-1).mul(y).sum(-1).neg().mean();
}

/** Weft's training loop of the workload (also `bench/profile-host.ts train`). */
export function weftTrainer(device: Device, weights: readonly Float32Array[], batch: { x: Float32Array; y: Float32Array }, rows: number): Trainer {
  const params = weights.map((h, k) => tensor(h, { device, shape: mlpShape(k) }));
  const x = tensor(batch.x, { device, shape: [rows, MLP_DIMS[0]] });
  const y = tensor(batch.y, { device, shape: [rows, MLP_DIMS[3]] });
  const opt = optim.adam(ADAM);
  const grad = valueAndGrad(weftLoss);
  return {
    step() {
      tidy(() => {
        const [, g] = grad(params, x, y);
        opt.step(params, g);
      });
    },
    wait: () => device.sync(),
    loss: () => readScalar(tidy(() => weftLoss(params, x, y))),
    dispose() {
      for (const t of [...params, x, y]) t.dispose();
      opt.dispose();
    },
  };
}

function tfTrainer(tf: typeof tfTypes, wait: () => Promise<void>, weights: readonly Float32Array[], batch: { x: Float32Array; y: Float32Array }, rows: number): Trainer {
  const vars = weights.map((h, k) => tf.variable(tf.tensor(h, mlpShape(k)), true, `bench-train-${k}-${Math.random()}`));
  const x = tf.tensor2d(batch.x, [rows, MLP_DIMS[0]]);
  const y = tf.tensor2d(batch.y, [rows, MLP_DIMS[3]]);
  const opt = tf.train.adam(ADAM.lr, ADAM.beta1, ADAM.beta2, ADAM.eps);
  const loss = (): tfTypes.Scalar =>
    tf.tidy(() => tf.neg(tf.mean(tf.sum(tf.mul(tf.logSoftmax(tfMlpLogits(tf, x, vars), -1), y), -1))) as tfTypes.Scalar);
  return {
    step() {
      tf.tidy(() => {
        const { grads } = tf.variableGrads(loss, vars);
        opt.applyGradients(grads as Parameters<typeof opt.applyGradients>[0]);
      });
    },
    wait,
    loss: () => readScalar(loss()),
    dispose() {
      for (const t of [...vars, x, y]) t.dispose();
      opt.dispose();
    },
  };
}

/** Runs the training workload. */
export async function runTraining(ctx: BenchContext): Promise<void> {
  const { batch, steps } = ctx.sizes.training;
  const size = LABEL.training(ctx.sizes.training);
  const warmup = ctx.options.quick ? 3 : 10;
  const samples = ctx.options.quick ? 3 : 7;
  const weights = mlpWeights();
  const data = trainingBatch(batch);
  const r = ctx.report;
  /** Loss before training and after each library's runs, for the check. */
  const losses = new Map<string, { before: number; after: number; steps: number }>();

  const variant = async <T>(name: string, peer: Peer<T>, make: (p: T) => Trainer, settle: (p: T) => Promise<void>): Promise<void> => {
    if (!peer.ok) {
      r.add({ workload: "training", variant: name, method: "throughput", size, status: `unavailable: ${peer.reason}` });
      return;
    }
    let trainer: Trainer | undefined;
    try {
      trainer = make(peer.value);
      const before = await trainer.loss();
      for (let i = 0; i < warmup; i++) trainer.step();
      await trainer.wait();
      await settle(peer.value);
      const rates: number[] = [];
      for (let s = 0; s < samples; s++) {
        const t0 = performance.now();
        for (let i = 0; i < steps; i++) trainer.step();
        await trainer.wait();
        rates.push((steps * 1000) / (performance.now() - t0));
      }
      const after = await trainer.loss();
      losses.set(name, { before, after, steps: warmup + samples * steps });
      const rate = median(rates);
      r.add({ workload: "training", variant: name, method: "throughput", size, status: "ok", ms: 1000 / rate, samples: rates.map((q) => 1000 / q), value: rate, unit: "steps/s", check: checkOf(name, losses) });
    } catch (error) {
      r.add({ workload: "training", variant: name, method: "throughput", size, status: `failed: ${errorText(error)}` });
    } finally {
      trainer?.dispose();
    }
  };

  await variant(VARIANT.tfjs, ctx.tf, (p) => tfTrainer(p.tf, () => p.wait(), weights, data, batch), async () => {});
  await variant(
    VARIANT.weft,
    ctx.weft,
    (w) => weftTrainer(w.device, weights, data, batch),
    async (w) => {
      await w.device.syncAll();
      await w.settle();
    },
  );
}

/**
 * The check of `name`'s run: its loss fell, and where TF.js ran the same steps, the two final
 * losses agree to 1% of the loss's fall. Not tighter: Adam divides each gradient by its running
 * magnitude, so float32 rounding differences in near-zero gradients become full-size steps and
 * the two trajectories drift apart slowly (on the H200, 150 steps from 2.32 to 0.117 ended
 * 3.2e-4 apart, 0.015% of the fall); a wrong gradient ends far outside it.
 */
export function checkOf(name: string, losses: ReadonlyMap<string, { before: number; after: number; steps: number }>): string {
  const mine = losses.get(name);
  if (mine === undefined) return "WRONG: no loss";
  if (!(mine.after < mine.before)) return `WRONG: the loss did not fall (${mine.before.toPrecision(5)} → ${mine.after.toPrecision(5)})`;
  const peer = name === VARIANT.tfjs ? undefined : losses.get(VARIANT.tfjs);
  const fell = `loss ${mine.before.toPrecision(5)} → ${mine.after.toPrecision(5)} over ${mine.steps} steps`;
  if (peer === undefined || peer.steps !== mine.steps) return `ok (${fell})`;
  const apart = Math.abs(mine.after - peer.after) / Math.abs(peer.before - peer.after);
  return apart <= 1e-2
    ? `ok (${fell}; tfjs ${peer.after.toPrecision(5)}, apart by ${(100 * apart).toPrecision(2)}% of the fall)`
    : `WRONG: final loss ${mine.after} vs tfjs ${peer.after} (apart by ${(100 * apart).toPrecision(3)}% of the fall, more than 1%)`;
}
