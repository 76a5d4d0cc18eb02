/**
 * jax-js 0.1.25 (`jit`) on the bench's own `GPUDevice`.
 *
 * @remarks
 * **How it gets the device.** jax-js's `init("webgpu")` asks `navigator.gpu.requestAdapter()` and
 * then `adapter.requestDevice()`. Node 20 has no `navigator`, and the software adapter needs the
 * compatibility feature level that jax-js does not ask for, so the bench installs a
 * `navigator.gpu` whose adapter hands back the bench's device (`./navigator.ts`): jax-js then
 * runs on the same device and queue as the others.
 * **Ownership.** jax-js arrays are consumed by every op (move semantics); `.ref` keeps one alive.
 *
 * @module
 */
import * as jax from "@jax-js/jax";

/** jax-js, ready on a given device. */
export interface JaxPeer {
  readonly jax: typeof jax;
  /** The jitted 8-op chain; consumes its argument. */
  readonly chain: (x: jax.Array) => jax.Array;
}

/** Initialises jax-js's WebGPU backend on `device` (through the navigator shim, installed first). */
export async function createJaxPeer(): Promise<JaxPeer> {
  const devices = await jax.init("webgpu");
  if (!Array.isArray(devices) || !devices.includes("webgpu")) throw new Error(`jax.init("webgpu") returned ${JSON.stringify(devices)}`);
  jax.defaultDevice("webgpu");
  const { numpy: np, nn } = jax;
  const chain = jax.jit((x: jax.Array) => nn.relu(np.add(np.exp(np.negative(np.square(np.sin(np.add(np.multiply(x.ref, 0.5), 1))))), x)));
  return { jax, chain: chain as unknown as (x: jax.Array) => jax.Array };
}
