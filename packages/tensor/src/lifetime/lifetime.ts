/**
 * Lifetimes and device-wide waits from the user's side: `tidy`, `memory`, `sync`, `syncAll`.
 *
 * @module
 */
import { tidy as fusionTidy } from "@weft/fusion";
import { device as currentDevice } from "../device/device.js";
import type { MemoryReport } from "../device/fusion-port.js";

/**
 * Runs `fn` and disposes every tensor created inside it except those reachable from its result
 * (through arrays, plain objects, `Map`/`Set` values, or `Tensor`s themselves).
 *
 * @remarks
 * **Why a wrapper.** `Tensor` carries `[FUSION_TENSOR]`, so the fusion engine's `tidy` follows it
 * to the fusion tensor it owns; this re-export keeps users on one import. `fn` must be
 * synchronous: tensors created after an `await` would escape the scope.
 */
export function tidy<T>(fn: () => T): T {
  return fusionTidy(fn);
}

/** The current device's memory report: `{ liveTensors, liveHandles, streams, bytesInUse, bytesReserved }`. */
export function memory(): MemoryReport {
  return currentDevice().memory();
}

/** Drains the current stream of the current device and waits for its work. */
export function sync(): Promise<void> {
  return currentDevice().sync();
}

/** Drains every stream of the current device and waits for all of its work. */
export function syncAll(): Promise<void> {
  return currentDevice().syncAll();
}
