/**
 * `weft.warmup`: compile and autotune a model's kernels without running them.
 *
 * @module
 */
import { ValueError, checkFunction, checkOptions, describeValue } from "@weft/environment";
import { withProcessMode } from "@weft/runtime";
import { Device, device as currentDevice } from "@weft/tensor";
import { type TuneListener, onTuneProgress } from "./tune-progress.js";

/** Options of {@link warmupDevice}. */
export interface WarmupOptions {
  /** Called with every autotune step while the warm-up runs (see `TuneProgress`). */
  readonly onTuneProgress?: TuneListener;
}

/** What a warm-up did. */
export interface WarmupReport {
  /** Kernels generated during the warm-up (0 on backends that compile nothing, like the CPU). */
  readonly kernelsCompiled: number;
  /** Wall time of the warm-up, in milliseconds. */
  readonly ms: number;
}

/** The kernel counter of a runtime that has one (`WebGpuRuntime.counters`), else `undefined`. */
function kernelsGenerated(device: Device): number | undefined {
  const runtime = (device.fusion as { runtime?: { counters?: { kernelsGenerated?: unknown } } }).runtime;
  const n = runtime?.counters?.kernelsGenerated;
  return typeof n === "number" ? n : undefined;
}

/** Waits for the background tunings of the runtime behind `device` (WebGPU), if it has any. */
async function autotuneIdle(device: Device): Promise<void> {
  const runtime = (device.fusion as { runtime?: { autotuneIdle?: () => Promise<void> } }).runtime;
  await runtime?.autotuneIdle?.();
}

/**
 * Runs `fn` under the `compile-and-autotune` process mode — every launch compiles its pipeline
 * and is then discarded, and autotuning measures on its own stream — drains every stream of
 * `device` inside the mode so the recorded work really reaches the backend, waits for the tunings
 * it started, and restores the previous mode (also on throw).
 *
 * @remarks Values read inside `fn` are meaningless (launches were discarded); call it once at
 * start-up, then run the model for real.
 */
export async function warmupDevice(device: Device, fn: () => unknown, options: WarmupOptions = {}): Promise<WarmupReport> {
  if (!(device instanceof Device)) throw new ValueError("warmupDevice", `pass a Device first (what weft.init() returns), not ${describeValue(device)}`);
  checkFunction("warmupDevice", "fn", fn);
  const opts = checkOptions("warmupDevice", options, ["onTuneProgress"]);
  if (opts.onTuneProgress !== undefined) checkFunction("warmupDevice", "options.onTuneProgress", opts.onTuneProgress);
  const start = performance.now();
  const before = kernelsGenerated(device) ?? 0;
  const stop = options.onTuneProgress === undefined ? undefined : onTuneProgress(device, options.onTuneProgress);
  try {
    await withProcessMode("compile-and-autotune", async () => {
      await fn();
      await device.syncAll();
      await autotuneIdle(device);
    });
  } finally {
    stop?.();
  }
  return { kernelsCompiled: (kernelsGenerated(device) ?? before) - before, ms: performance.now() - start };
}

/** `warmupDevice` on the current device. */
export async function warmup(fn: () => unknown): Promise<void> {
  checkFunction("warmup", "fn", fn);
  await warmupDevice(currentDevice(), fn);
}
