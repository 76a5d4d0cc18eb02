/// <reference types="@webgpu/types" />
/**
 * TensorFlow.js 4.22 (`@tensorflow/tfjs-core` + `@tensorflow/tfjs-backend-webgpu`) on the bench's
 * own `GPUDevice`.
 *
 * @remarks
 * **Why the same device.** Side-by-side ratios are only fair when both libraries share the device
 * and its queue; `WebGPUBackend`'s constructor takes a `GPUDevice`, so the backend is registered
 * under TF.js's own name `"webgpu"` (its kernels are registered for that name) with our device.
 * **Waiting.** TF.js batches dispatches and submits every 15; {@link TfPeer.wait} submits what is
 * pending and waits on the device queue (no readback), the same wait Weft's `sync()` performs.
 *
 * @module
 */
import * as tf from "@tensorflow/tfjs-core";
import { WebGPUBackend } from "@tensorflow/tfjs-backend-webgpu";

/** TF.js, ready on a given device. */
export interface TfPeer {
  readonly tf: typeof tf;
  readonly backend: WebGPUBackend;
  /** Submits TF.js's pending command buffer and waits for the device queue. */
  wait(): Promise<void>;
}

/** Registers TF.js's WebGPU backend on `device` and makes it current. */
export async function createTfPeer(device: GPUDevice, adapterInfo: GPUAdapterInfo): Promise<TfPeer> {
  const backend = new WebGPUBackend(device, adapterInfo);
  // Registration fails if the name is taken (a second call in one process): then reuse it.
  tf.registerBackend("webgpu", () => backend, 10);
  const ok = await tf.setBackend("webgpu");
  if (!ok) throw new Error("tf.setBackend('webgpu') refused the backend");
  await tf.ready();
  const current = tf.backend() as WebGPUBackend;
  return {
    tf,
    backend: current,
    async wait() {
      // TF.js ends its open compute pass before every submit; an empty encoder submits nothing harmful.
      current.ensureCommandEncoderReady();
      current.endComputePassEncoder();
      current.submitQueue();
      await device.queue.onSubmittedWorkDone();
    },
  };
}

/** The 8-op chain in TF.js: `relu(exp(-(sin(x*0.5+1))^2) + x)`, one kernel per op. */
export function tfChain(x: tf.Tensor): tf.Tensor {
  return tf.tidy(() => tf.relu(tf.add(tf.exp(tf.neg(tf.square(tf.sin(tf.add(tf.mul(x, 0.5), 1))))), x)));
}
