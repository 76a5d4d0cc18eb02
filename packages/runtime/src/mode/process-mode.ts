/**
 * The process mode: whether launches run, or compile and are discarded.
 *
 * @module
 */
import type { StreamMode } from "./stream-mode.js";

/**
 * What the process does with launches (CubeCL's `ProcessMode`; Burn's dry run).
 *
 * - `'execute'` (the default): launches run. A stream put in `discard` by a
 *   {@link StreamModeOverride} has its kernels queued for one batch compile
 *   ({@link Client.compileQueued}, or the next {@link Client.sync}) and its launches dropped.
 * - `'compile-and-autotune'`: every launch compiles its kernel now (the server creates its
 *   pipeline ahead of time) and is discarded; autotune runs, because a measurement opens a
 *   `StreamModeOverride('execute', client)` on its own stream. What `weft.warmup(fn)` uses.
 * - `'batch-compile'`: launches are discarded and their kernels queued, deduplicated by key, to be
 *   compiled in one batch by {@link Client.compileQueued} or at the next {@link Client.sync} (a
 *   backend may compile a batch in parallel, e.g. `createComputePipelineAsync`). Autotune runs as
 *   under `'compile-and-autotune'`.
 *
 * **Scope.** The mode is process-wide (one JavaScript realm): every client of every device follows
 * it, whichever async task issues the launch. Set it around a whole warm-up, not per task.
 */
export type ProcessMode = "execute" | "compile-and-autotune" | "batch-compile";

/** The process mode now. Changed only by {@link setProcessMode} / {@link withProcessMode}. */
let current: ProcessMode = "execute";

/** The process mode now (see {@link ProcessMode}). */
export function getProcessMode(): ProcessMode {
  return current;
}

/** Sets the process mode; returns the previous one so a caller can restore it. */
export function setProcessMode(mode: ProcessMode): ProcessMode {
  const previous = current;
  current = mode;
  return previous;
}

/**
 * Runs `fn` under `mode` and restores the previous mode when `fn` returns, throws, or — when it
 * returns a promise — when that promise settles. Scopes nest; because the mode is process-wide,
 * code of other async tasks that runs while `fn` awaits also sees `mode`.
 */
export function withProcessMode<T>(mode: ProcessMode, fn: () => T): T {
  const previous = setProcessMode(mode);
  let result: T;
  try {
    result = fn();
  } catch (error) {
    current = previous;
    throw error;
  }
  if (result instanceof Promise) {
    return result.finally(() => {
      current = previous;
    }) as T;
  }
  current = previous;
  return result;
}

/**
 * The mode a stream has when no override sets it: `execute` under the `'execute'` process mode,
 * `discard` under both compiling modes.
 */
export function defaultStreamMode(mode: ProcessMode = current): StreamMode {
  switch (mode) {
    case "execute":
      return "execute";
    case "compile-and-autotune":
    case "batch-compile":
      return "discard";
    default:
      return mode satisfies never;
  }
}
