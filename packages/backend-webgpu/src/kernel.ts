import type { KernelDefinition } from "@weft/server";

/**
 * A compiled-from-source WGSL compute kernel: what the codegen produces and what
 * `WebGpuServer` compiles and launches.
 *
 * @remarks
 * **Why.** The codegen (`src/codegen`, `src/kernels`, `src/fusion`) and the server (`src/server`)
 * are written independently; this interface is the whole contract between them.
 *
 * **Binding layout (the convention every kernel follows).**
 * 1. `@group(0) @binding(i)` for `i` in `0..n-1` are the storage buffers, in the order of the
 *    launch's `KernelBinding` list, every one declared `var<storage, read_write>` (slices of one
 *    page share a `GPUBuffer`, and a read-only and a writable binding of one buffer conflict; the
 *    server refuses a read-only declaration with a `ValidationError` and never rewrites the text).
 *    The `KernelBinding`'s `access` says whether the launch reads or writes the binding.
 * 2. When the launch passes `uniforms`, they are bound at `@binding(n)` as `var<uniform>`; the
 *    server pads the bytes to a multiple of 16, so the WGSL struct may be padded up to that.
 * 3. The dispatch is the launch's `CubeCount` `[x, y, z]`, in work groups (not invocations).
 *
 * **Invariants.**
 * - `key` is canonical: two kernels with the same key have the same `source` and `entryPoint`
 *   (the server caches pipelines on `key` plus the device's features, never on `source`).
 * - Every per-invocation loop stays under 65,535 iterations (Mesa's software GLES stops longer
 *   loops silently; docs/design.md#where-webgpu-runs).
 */
export interface WgslKernel extends KernelDefinition {
  /** Canonical cache key (see the invariants). */
  readonly key: string;
  /** The whole WGSL module. */
  readonly source: string;
  /** The compute entry point's name; `"main"` when absent. */
  readonly entryPoint?: string;
  /** A human-readable name for GPU debug labels and error messages; `key` when absent. */
  readonly label?: string;
}

/** The entry point used when a {@link WgslKernel} names none. */
export const DEFAULT_ENTRY_POINT = "main";
