/**
 * `weft.warmup`: compile and autotune a model's kernels without running them.
 *
 * @module
 */
import { withProcessMode } from "@weft/runtime";
import { device as currentDevice } from "@weft/tensor";

/**
 * Runs `fn` under the `compile-and-autotune` process mode — every launch compiles its pipeline
 * (and autotunes) and is then discarded — drains every stream inside the mode so the recorded
 * work really reaches the backend, and restores the previous mode (also on throw).
 *
 * @remarks Values read inside `fn` are meaningless (launches were discarded); call it once at
 * start-up, then run the model for real.
 */
export async function warmup(fn: () => unknown): Promise<void> {
  const device = currentDevice();
  await withProcessMode("compile-and-autotune", async () => {
    await fn();
    await device.syncAll();
  });
}
