/**
 * The demo's model for the serving workloads (GPU and CPU sections): an MLP 64→128→128→10 with
 * gelu and a softmax, on seeded host weights shared by every request, in Weft and in TF.js, and
 * its float64 reference for the checks.
 *
 * @module
 */
import type * as tfTypes from "@tensorflow/tfjs-core";
import { Stream, getStreamPolicy, setStreamPolicy } from "@weft/environment";
import { type Device, type Tensor, tensor, tidy } from "@weft/tensor";
import { hostData } from "./data.js";

/** Layer widths: input, two hidden layers, classes. */
export const MLP_DIMS = [64, 128, 128, 10] as const;

/** The six weight arrays (w1, b1, w2, b2, w3, b3), seeded, weights scaled by 1/√fan_in. */
export function mlpWeights(): Float32Array[] {
  const weights: Float32Array[] = [];
  for (let l = 0; l < 3; l++) {
    const scale = 1 / Math.sqrt(MLP_DIMS[l]!);
    weights.push(hostData(MLP_DIMS[l]! * MLP_DIMS[l + 1]!, 70 + l, -scale * 1.7, scale * 1.7), hostData(MLP_DIMS[l + 1]!, 80 + l, -0.1, 0.1));
  }
  return weights;
}

/** `count` request inputs of `batch` rows, each its own seed. */
export function mlpInputs(count: number, batch: number): Float32Array[] {
  return Array.from({ length: count }, (_, i) => hostData(batch * MLP_DIMS[0], 1000 + i, 0, 1));
}

/** The shape of weight `k` of {@link mlpWeights}. */
export function mlpShape(k: number): number[] {
  return k % 2 === 0 ? [MLP_DIMS[k / 2]!, MLP_DIMS[k / 2 + 1]!] : [MLP_DIMS[(k + 1) / 2]!];
}

/** The model's logits in Weft (`ws`: the weights as tensors, in {@link mlpWeights} order). */
export function weftMlpLogits(x: Tensor, ws: readonly Tensor[]): Tensor {
  return x.matmul(ws[0]!).add(ws[1]!).gelu().matmul(ws[2]!).add(ws[3]!).gelu().matmul(ws[4]!).add(ws[5]!);
}

/** The forward pass in Weft: {@link weftMlpLogits}, then a softmax. */
export function weftMlp(x: Tensor, ws: readonly Tensor[]): Tensor {
  return tidy(() => weftMlpLogits(x, ws).softmax(-1));
}

/** The weights as Weft tensors on `device`. */
export function weftMlpWeights(device: Device, weights: readonly Float32Array[]): Tensor[] {
  return weights.map((h, k) => tensor(h, { device, shape: mlpShape(k) }));
}

/**
 * One request in Weft, as `weft demo` serves it: on its own stream (`Stream.spawn`; the caller
 * runs under {@link perTaskStreams}), upload the input, run the model, read the result.
 */
export function weftRequest(device: Device, ws: readonly Tensor[], input: Float32Array, batch: number): Promise<ArrayLike<number>> {
  return Stream.spawn(async () => {
    const x = tensor(input, { device, shape: [batch, MLP_DIMS[0]] });
    const y = weftMlp(x, ws);
    x.dispose();
    try {
      return (await y.data()) as ArrayLike<number>;
    } finally {
      y.dispose();
    }
  });
}

/** Runs `f` with the stream policy `per-task` (each `Stream.spawn` on a fresh stream), then restores the policy. */
export async function perTaskStreams<T>(f: () => Promise<T>): Promise<T> {
  const previous = getStreamPolicy();
  setStreamPolicy("per-task");
  try {
    return await f();
  } finally {
    setStreamPolicy(previous);
  }
}

/** The weights as TF.js tensors. */
export function tfMlpWeights(tf: typeof tfTypes, weights: readonly Float32Array[]): tfTypes.Tensor[] {
  return weights.map((h, k) => tf.tensor(h, mlpShape(k)));
}

/** One request in TF.js: upload the input, run the model, read the result. */
export async function tfRequest(tf: typeof tfTypes, ws: readonly tfTypes.Tensor[], input: Float32Array, batch: number): Promise<ArrayLike<number>> {
  const x = tf.tensor2d(input, [batch, MLP_DIMS[0]]);
  const y = tfMlp(tf, x, ws);
  x.dispose();
  try {
    return (await y.data()) as ArrayLike<number>;
  } finally {
    y.dispose();
  }
}

/** gelu in TF.js (`0.5·x·(1 + erf(x/√2))`, the exact form Weft computes). */
export function tfGelu(tf: typeof tfTypes, x: tfTypes.Tensor): tfTypes.Tensor {
  return tf.tidy(() => tf.mul(tf.mul(x, 0.5), tf.add(tf.erf(tf.mul(x, Math.SQRT1_2)), 1)));
}

/** The model's logits in TF.js (call inside `tf.tidy`: the hidden activations are not disposed). */
export function tfMlpLogits(tf: typeof tfTypes, x: tfTypes.Tensor, ws: readonly tfTypes.Tensor[]): tfTypes.Tensor {
  const h1 = tfGelu(tf, tf.add(tf.matMul(x as tfTypes.Tensor2D, ws[0] as tfTypes.Tensor2D), ws[1]!));
  const h2 = tfGelu(tf, tf.add(tf.matMul(h1 as tfTypes.Tensor2D, ws[2] as tfTypes.Tensor2D), ws[3]!));
  return tf.add(tf.matMul(h2 as tfTypes.Tensor2D, ws[4] as tfTypes.Tensor2D), ws[5]!);
}

/** The forward pass in TF.js: {@link tfMlpLogits}, then a softmax. */
export function tfMlp(tf: typeof tfTypes, x: tfTypes.Tensor, ws: readonly tfTypes.Tensor[]): tfTypes.Tensor {
  return tf.tidy(() => tf.softmax(tfMlpLogits(tf, x, ws)));
}

/** The first value of a one-element tensor (Weft or TF.js), which is then disposed. */
export async function readScalar(t: { data(): Promise<ArrayLike<number>>; dispose(): void }): Promise<number> {
  try {
    return (await t.data())[0] ?? Number.NaN;
  } finally {
    t.dispose();
  }
}

/** The demo's MLP on host weights (`hostData`, scaled by 1/√fan_in), in float64, for the check. */
export function mlpRef(x: Float32Array, w: readonly Float32Array[], batch: number): Float64Array {
  const dims = MLP_DIMS;
  let act = Float64Array.from(x);
  for (let l = 0; l < 3; l++) {
    const [k, m] = [dims[l]!, dims[l + 1]!];
    const weights = w[2 * l]!;
    const bias = w[2 * l + 1]!;
    const out = new Float64Array(batch * m);
    for (let r = 0; r < batch; r++) {
      for (let j = 0; j < m; j++) {
        let s = bias[j]!;
        for (let p = 0; p < k; p++) s += act[r * k + p]! * weights[p * m + j]!;
        out[r * m + j] = l < 2 ? 0.5 * s * (1 + erf64(s / Math.SQRT2)) : s;
      }
    }
    act = out;
  }
  for (let r = 0; r < batch; r++) {
    let max = -Infinity;
    for (let j = 0; j < 10; j++) max = Math.max(max, act[r * 10 + j]!);
    let z = 0;
    for (let j = 0; j < 10; j++) z += Math.exp(act[r * 10 + j]! - max);
    for (let j = 0; j < 10; j++) act[r * 10 + j] = Math.exp(act[r * 10 + j]! - max) / z;
  }
  return act;
}

/** erf to ~1e-7 (Abramowitz–Stegun 7.1.26 is too coarse for a reference; this is its refinement by series). */
export function erf64(x: number): number {
  const ax = Math.abs(x);
  if (ax > 6) return Math.sign(x);
  let term = x;
  let s = x;
  for (let n = 1; n < 200; n++) {
    term *= (-x * x) / n;
    const next = s + term / (2 * n + 1);
    if (next === s) break;
    s = next;
  }
  return (2 / Math.sqrt(Math.PI)) * s;
}
