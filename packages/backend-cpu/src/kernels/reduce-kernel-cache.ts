import type { DType, ReduceOp } from "@weft/fusion";
import { contiguousStrides } from "@weft/fusion";
import type { CpuHandle } from "../handle/cpu-handle.js";
import type { CpuKernel } from "./cpu-kernel.js";
import { reduceKernel } from "./tensor-kernels.js";

/** Most reduce kernels one {@link ReduceKernelCache} keeps (the oldest dropped first). */
export const MAX_REDUCE_KERNELS = 16;

/** Bindings of every cached reduce kernel: the input (0) is read, the output (1) written. */
const WRITABLE: readonly boolean[] = [false, true];

const DTYPE_CODE: Record<DType, number> = { f32: 0, f16: 1, i32: 2, u32: 3, bool: 4 };

/**
 * The unfused `reduce` launches' kernels, by layout: a launch with the same op, axes, input
 * layout and output shape and dtype as a recent one reuses its kernel (loop plans, key, closures)
 * instead of building it again (softmax's `max` and `sum` run once per request in serving).
 *
 * @remarks
 * **Why it is exact.** {@link reduceKernel} depends on the op, the axes, the input's dtype and
 * layout (shape, strides, offset), the output's dtype and layout, and the binding indices and
 * their access; the unfused path binds the input then a fresh dense output (offset 0), so
 * bindings 0 (read) and 1 (write) always. The signature holds all of it; the memories are bound
 * per launch.
 * **Bounded** by {@link MAX_REDUCE_KERNELS} entries (oldest dropped first); a kernel holds copies
 * of the layouts, never a handle.
 */
export class ReduceKernelCache {
  /** Entries, oldest first; at most {@link MAX_REDUCE_KERNELS}. */
  readonly #entries: { readonly op: ReduceOp; readonly signature: readonly number[]; readonly kernel: CpuKernel }[] = [];
  /** Scratch: the current launch's signature (its first `#size` values; never truncated). */
  readonly #signature: number[] = [];
  #size = 0;

  /** The kernel reducing `axes` of `input` by `op` into a fresh dense output of `outShape`/`outDtype`. */
  kernel(op: ReduceOp, axes: readonly number[], input: CpuHandle, outShape: readonly number[], outDtype: DType): CpuKernel {
    this.#size = 0;
    this.#push(axes.length);
    for (let i = 0; i < axes.length; i++) this.#push(axes[i] as number);
    this.#push(DTYPE_CODE[input.dtype]);
    this.#push(input.shape.length);
    for (let d = 0; d < input.shape.length; d++) this.#push(input.shape[d] as number);
    for (let d = 0; d < input.strides.length; d++) this.#push(input.strides[d] as number);
    this.#push(input.offset);
    this.#push(DTYPE_CODE[outDtype]);
    this.#push(outShape.length);
    for (let d = 0; d < outShape.length; d++) this.#push(outShape[d] as number);
    const entries = this.#entries;
    for (let e = entries.length - 1; e >= 0; e--) {
      const held = entries[e];
      if (held !== undefined && held.op === op && this.#matches(held.signature)) return held.kernel;
    }
    const inputLayout = { shape: [...input.shape], strides: [...input.strides], offset: input.offset };
    const outLayout = { shape: [...outShape], strides: contiguousStrides(outShape), offset: 0 };
    const kernel = reduceKernel(op, { binding: 0, dtype: input.dtype, layout: inputLayout }, [...axes], { binding: 1, dtype: outDtype, layout: outLayout }, WRITABLE);
    entries.push({ op, signature: this.#signature.slice(0, this.#size), kernel });
    if (entries.length > MAX_REDUCE_KERNELS) entries.shift();
    return kernel;
  }

  /** Number of kernels held (tests). */
  get size(): number {
    return this.#entries.length;
  }

  #push(value: number): void {
    this.#signature[this.#size++] = value;
  }

  #matches(held: readonly number[]): boolean {
    if (held.length !== this.#size) return false;
    const signature = this.#signature;
    for (let i = 0; i < held.length; i++) if (held[i] !== signature[i]) return false;
    return true;
  }
}
