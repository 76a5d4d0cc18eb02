/**
 * Autotune progress per device: the WebGPU runtime reports each tuning step to the callback it was
 * created with; this relays those steps to whoever listens on the device (`warmupDevice`, the
 * demo's progress bar).
 *
 * @module
 */
import type { TuneProgress } from "@weft/runtime";
import type { Device } from "@weft/tensor";

/** A listener of one device's tuning steps. */
export type TuneListener = (progress: TuneProgress) => void;

/**
 * Fans a runtime's `onProgress` out to the listeners of its device.
 * **Bound.** One set per device created by `createWebGpuDevice`, held weakly by the device; a
 * listener stays until the function {@link TuneRelay.listen} returned is called.
 */
export class TuneRelay {
  readonly #listeners = new Set<TuneListener>();
  /** What the runtime is given as `autotune.onProgress`. */
  readonly emit = (progress: TuneProgress): void => {
    for (const listener of this.#listeners) listener(progress);
  };

  /** Adds `listener`; returns the function that removes it. */
  listen(listener: TuneListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

const relays = new WeakMap<Device, TuneRelay>();

/** Attaches `relay` to `device` (by `createWebGpuDevice`). */
export function attachTuneRelay(device: Device, relay: TuneRelay): void {
  relays.set(device, relay);
}

/**
 * Calls `listener` with every tuning step of `device` until the returned function is called. A
 * device that never tunes (the CPU backend) never calls it.
 */
export function onTuneProgress(device: Device, listener: TuneListener): () => void {
  return relays.get(device)?.listen(listener) ?? (() => undefined);
}
