import type { CpuKernel } from "./cpu-kernel.js";
import { KernelMemory } from "./cpu-kernel.js";
import { reduceRange, type KernelOperand } from "./tensor-kernels.js";
import { binaryFn, unaryFn } from "../numerics/scalar-ops.js";

const identity = (x: number): number => x;

/**
 * `softmax` along the last axis of dense f32 rows in one kernel: per row the `max` and the `sum`
 * of the reduce kernel (`reduceRange`: NaN wins, +0 above -0; the f64 lanes of docs/semantics.md,
 * "Summation order"), `sub`, `exp` and `div` with the elementwise ops' scalar functions, every
 * result rounded to f32 as the five separate kernels store it — so the same bits as those five.
 * The exponentials of a row are kept in a scratch row (as the separate `exp` kernel writes `e`).
 */
export function softmaxKernel(input: KernelOperand, out: KernelOperand, writable: readonly boolean[]): CpuKernel {
  const shape = input.layout.shape;
  const n = shape[shape.length - 1] ?? 1;
  const rows = n === 0 ? 0 : shape.reduce((a, b) => a * b, 1) / n;
  const offset = input.layout.offset;
  const outOffset = out.layout.offset;
  const sub = binaryFn("sub", "f32");
  const exp = unaryFn("exp", "f32");
  const div = binaryFn("div", "f32");
  let scratch: Float32Array | undefined;
  return {
    key: `softmax:f32[${rows}x${n}]@${offset}>${outOffset} b${input.binding}>${out.binding}`,
    label: "softmax",
    run(buffers) {
      const memory = new KernelMemory(buffers, writable);
      const x = memory.array(input.binding, "f32");
      const y = memory.array(out.binding, "f32");
      const e = (scratch ??= new Float32Array(n));
      for (let r = 0; r < rows; r++) {
        const base = offset + r * n;
        const m = Math.fround(reduceRange("max", x, base, n, 1, false, identity));
        for (let j = 0; j < n; j++) e[j] = Math.fround(exp(Math.fround(sub(x[base + j] as number, m))));
        const s = Math.fround(reduceRange("sum", e, 0, n, 1, false, identity));
        const o = outOffset + r * n;
        for (let j = 0; j < n; j++) y[o + j] = Math.fround(div(e[j] as number, s));
      }
      memory.commit();
    },
  };
}
