/**
 * Kernels that create a dense tensor from scalars: `full`, `arange`, `random`.
 * Scalar values travel as uniforms; the key holds only the op, dtype and shape.
 *
 * @module
 */
import type { DType, RandomDistribution } from "@weft/fusion";
import { numElements } from "@weft/fusion";
import { convert } from "../numerics/scalar-ops.js";
import { pcg, randomValue } from "../numerics/random.js";
import { KernelMemory, decodeUniforms, type CpuKernel } from "./cpu-kernel.js";

/** Writes `uniforms[0]` (converted to `dtype`) to every element of the binding-0 tensor of `shape`. */
export function fullKernel(shape: readonly number[], dtype: DType): CpuKernel {
  const n = numElements(shape);
  return {
    key: `full:${dtype}[${shape.join(",")}]`,
    run(buffers, uniforms) {
      const memory = new KernelMemory(buffers, [true]);
      memory.array(0, dtype).fill(convert(decodeUniforms(uniforms)[0] ?? 0, dtype), 0, n);
      memory.commit();
    },
  };
}

/** Element `i` is `start + i · step` (uniforms `[start, step]`), computed in f64 then converted. */
export function arangeKernel(shape: readonly number[], dtype: DType): CpuKernel {
  const n = numElements(shape);
  return {
    key: `arange:${dtype}[${shape.join(",")}]`,
    run(buffers, uniforms) {
      const [start = 0, step = 1] = decodeUniforms(uniforms);
      const memory = new KernelMemory(buffers, [true]);
      const out = memory.array(0, dtype);
      for (let i = 0; i < n; i++) out[i] = convert(start + i * step, dtype);
      memory.commit();
    },
  };
}

/** Weft's counter-based random values (uniforms `[seed, a, b]`); see `numerics/random.ts`. */
export function randomKernel(shape: readonly number[], dtype: DType, distribution: RandomDistribution): CpuKernel {
  const n = numElements(shape);
  return {
    key: `random:${distribution}:${dtype}[${shape.join(",")}]`,
    run(buffers, uniforms) {
      const [seed = 0, a = 0, b = 1] = decodeUniforms(uniforms);
      const key = pcg(seed >>> 0);
      const memory = new KernelMemory(buffers, [true]);
      const out = memory.array(0, dtype);
      for (let i = 0; i < n; i++) out[i] = convert(randomValue(distribution, key, i, a, b), dtype);
      memory.commit();
    },
  };
}
