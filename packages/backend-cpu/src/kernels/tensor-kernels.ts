/**
 * The non-elementwise kernels: reductions, matmul, concat, gather and pad. Each reads strided
 * operands and writes one dense output.
 *
 * @module
 */
import type { DType, ReduceOp } from "@weft/fusion";
import { numElements } from "@weft/fusion";
import { invariant } from "@weft/environment";
import { broadcastStrides, contiguousStrides, forEachPosition, sliceLayout, type Layout } from "../handle/layout.js";
import { convert, isIntegerDType } from "../numerics/scalar-ops.js";
import { IndexOutOfRangeError } from "../errors/cpu-errors.js";
import { KernelMemory, decodeUniforms, operandKey, type CpuKernel } from "./cpu-kernel.js";

/** One tensor a kernel reads or writes: its binding index, dtype and strided layout. */
export interface KernelOperand {
  readonly binding: number;
  readonly dtype: DType;
  readonly layout: Layout;
}

function key(operand: KernelOperand): string {
  return `b${operand.binding}:${operandKey(operand.dtype, operand.layout)}`;
}

/**
 * Reduces `axes` of `input` into the dense `out`.
 *
 * @remarks
 * **Precision.** f32 `sum`/`mean`/`prod` accumulate in f64 and round once at the end; integer
 * `sum`/`prod` wrap in the output dtype. `max`/`min` propagate NaN. `argmax`/`argmin` give the
 * first index of the extreme (a NaN counts as the extreme), as an index into the row-major
 * flattening of the reduced axes. Empty extents: `sum` 0, `prod` 1, `mean` NaN, `any` false,
 * `all` true; `max`/`min`/`argmax`/`argmin` are refused before launch by the runtime.
 */
export function reduceKernel(op: ReduceOp, input: KernelOperand, axes: readonly number[], out: KernelOperand, writable: readonly boolean[]): CpuKernel {
  const shape = input.layout.shape;
  const kept = shape.map((_, d) => d).filter((d) => !axes.includes(d));
  const keptShape = kept.map((d) => shape[d] ?? 1);
  const keptStrides = kept.map((d) => input.layout.strides[d] ?? 0);
  const reducedShape = axes.map((d) => shape[d] ?? 1);
  const reducedStrides = axes.map((d) => input.layout.strides[d] ?? 0);
  const extent = numElements(reducedShape);
  const inner = new Float64Array(extent);
  forEachPosition(reducedShape, [reducedStrides], [0], (i, pos) => {
    inner[i] = pos[0] ?? 0;
  });
  const outDtype = out.dtype;
  const integer = isIntegerDType(outDtype) && outDtype !== "bool";
  const wrap = outDtype === "u32" ? (x: number) => x >>> 0 : (x: number) => x | 0;
  return {
    key: `reduce:${op}[${axes.join(",")}]|${key(input)}|${key(out)}`,
    run(buffers) {
      const memory = new KernelMemory(buffers, writable);
      const src = memory.array(input.binding, input.dtype);
      const dst = memory.array(out.binding, outDtype);
      let o = out.layout.offset;
      forEachPosition(keptShape, [keptStrides], [input.layout.offset], (_i, pos) => {
        const base = pos[0] ?? 0;
        let acc: number;
        switch (op) {
          case "sum":
          case "mean":
            acc = 0;
            if (integer) for (let j = 0; j < extent; j++) acc = wrap(acc + src[base + inner[j]!]!);
            else for (let j = 0; j < extent; j++) acc += src[base + inner[j]!]!;
            if (op === "mean") acc = acc / extent;
            break;
          case "prod":
            acc = 1;
            if (integer) for (let j = 0; j < extent; j++) acc = wrap(Math.imul(acc, src[base + inner[j]!]!));
            else for (let j = 0; j < extent; j++) acc *= src[base + inner[j]!]!;
            break;
          case "max":
          case "min": {
            const isMax = op === "max";
            acc = src[base + inner[0]!]!;
            for (let j = 1; j < extent && acc === acc; j++) {
              const v = src[base + inner[j]!]!;
              if (v !== v || (isMax ? v > acc : v < acc)) acc = v;
            }
            break;
          }
          case "argmax":
          case "argmin": {
            const isMax = op === "argmax";
            let best = src[base + inner[0]!]!;
            acc = 0;
            for (let j = 1; j < extent && best === best; j++) {
              const v = src[base + inner[j]!]!;
              if (v !== v || (isMax ? v > best : v < best)) {
                best = v;
                acc = j;
              }
            }
            break;
          }
          case "any":
            acc = 0;
            for (let j = 0; j < extent && acc === 0; j++) if (src[base + inner[j]!]! !== 0) acc = 1;
            break;
          case "all":
            acc = 1;
            for (let j = 0; j < extent && acc === 1; j++) if (src[base + inner[j]!]! === 0) acc = 0;
            break;
          default:
            return op satisfies never;
        }
        dst[o++] = convert(acc, outDtype);
      });
      memory.commit();
    },
  };
}

/**
 * Batched `lhs @ rhs` over the last two dims into the dense `out`; batch dims broadcast
 * (right-aligned). f32 accumulates in f64 and rounds once per output element; integers wrap.
 */
export function matmulKernel(lhs: KernelOperand, rhs: KernelOperand, out: KernelOperand, writable: readonly boolean[]): CpuKernel {
  const outShape = out.layout.shape;
  const rank = outShape.length;
  const m = outShape[rank - 2] ?? 1;
  const n = outShape[rank - 1] ?? 1;
  const lr = lhs.layout.shape.length;
  const rr = rhs.layout.shape.length;
  const k = lhs.layout.shape[lr - 1] ?? 1;
  invariant((rhs.layout.shape[rr - 2] ?? 1) === k, "matmul contraction dims agree (validated at the API)");
  const batchShape = outShape.slice(0, rank - 2);
  const batchOf = (o: KernelOperand): number[] => {
    const r = o.layout.shape.length;
    return broadcastStrides({ shape: o.layout.shape.slice(0, r - 2), strides: o.layout.strides.slice(0, r - 2), offset: 0 }, batchShape);
  };
  const [lm, lk] = [lhs.layout.strides[lr - 2] ?? 0, lhs.layout.strides[lr - 1] ?? 0];
  const [rk, rn] = [rhs.layout.strides[rr - 2] ?? 0, rhs.layout.strides[rr - 1] ?? 0];
  const outBatch = contiguousStrides(outShape).slice(0, rank - 2);
  const integer = isIntegerDType(out.dtype) && out.dtype !== "bool";
  const wrap = out.dtype === "u32" ? (x: number) => x >>> 0 : (x: number) => x | 0;
  return {
    key: `matmul|${key(lhs)}|${key(rhs)}|${key(out)}`,
    run(buffers) {
      const memory = new KernelMemory(buffers, writable);
      const a = memory.array(lhs.binding, lhs.dtype);
      const b = memory.array(rhs.binding, rhs.dtype);
      const c = memory.array(out.binding, out.dtype);
      forEachPosition(batchShape, [batchOf(lhs), batchOf(rhs), outBatch], [lhs.layout.offset, rhs.layout.offset, out.layout.offset], (_i, pos) => {
        const [la = 0, rb = 0, oc = 0] = pos;
        for (let i = 0; i < m; i++) {
          for (let j = 0; j < n; j++) {
            let acc = 0;
            if (integer) for (let p = 0; p < k; p++) acc = wrap(acc + Math.imul(a[la + i * lm + p * lk]!, b[rb + p * rk + j * rn]!));
            else for (let p = 0; p < k; p++) acc += a[la + i * lm + p * lk]! * b[rb + p * rk + j * rn]!;
            c[oc + i * n + j] = convert(acc, out.dtype);
          }
        }
      });
      memory.commit();
    },
  };
}

/** Copies each input into its block of the dense `out` along `axis`. */
export function concatKernel(inputs: readonly KernelOperand[], axis: number, out: KernelOperand, writable: readonly boolean[]): CpuKernel {
  const outStrides = out.layout.strides;
  let start = 0;
  const parts = inputs.map((input) => {
    const size = input.layout.shape[axis] ?? 0;
    const offset = out.layout.offset + start * (outStrides[axis] ?? 0);
    start += size;
    return { input, offset };
  });
  return {
    key: `concat[${axis}]|${inputs.map(key).join("|")}|${key(out)}`,
    run(buffers) {
      const memory = new KernelMemory(buffers, writable);
      const dst = memory.array(out.binding, out.dtype);
      for (const { input, offset } of parts) {
        const src = memory.array(input.binding, input.dtype);
        forEachPosition(input.layout.shape, [input.layout.strides, outStrides], [input.layout.offset, offset], (_i, pos) => {
          dst[pos[1]!] = src[pos[0]!]!;
        });
      }
      memory.commit();
    },
  };
}

/**
 * `out[…, i, …] = input[…, indices[…, i, …], …]` along `axis`; `out` has the indices' shape.
 * An index outside `[0, input.shape[axis])` throws {@link IndexOutOfRangeError} (the launch fails).
 */
export function gatherKernel(input: KernelOperand, indices: KernelOperand, axis: number, out: KernelOperand, writable: readonly boolean[]): CpuKernel {
  const shape = indices.layout.shape;
  const size = input.layout.shape[axis] ?? 0;
  const axisStride = input.layout.strides[axis] ?? 0;
  const inputStrides = input.layout.strides.map((s, d) => (d === axis ? 0 : s));
  return {
    key: `gather[${axis}]|${key(input)}|${key(indices)}|${key(out)}`,
    run(buffers) {
      const memory = new KernelMemory(buffers, writable);
      const src = memory.array(input.binding, input.dtype);
      const idx = memory.array(indices.binding, indices.dtype);
      const dst = memory.array(out.binding, out.dtype);
      forEachPosition(shape, [inputStrides, indices.layout.strides, out.layout.strides], [input.layout.offset, indices.layout.offset, out.layout.offset], (_i, pos) => {
        const index = idx[pos[1]!]!;
        if (!(index >= 0 && index < size)) throw new IndexOutOfRangeError("gather", index, size, input.layout.shape, axis);
        dst[pos[2]!] = src[pos[0]! + index * axisStride]!;
      });
      memory.commit();
    },
  };
}

/** Fills the dense `out` with `uniforms[0]` and copies `input` into its interior. */
export function padKernel(input: KernelOperand, padding: readonly (readonly [number, number])[], out: KernelOperand, writable: readonly boolean[]): CpuKernel {
  const interior = sliceLayout(out.layout, input.layout.shape.map((s, d) => {
    const before = padding[d]?.[0] ?? 0;
    return { start: before, end: before + s, step: 1 };
  }));
  const n = numElements(out.layout.shape);
  return {
    key: `pad[${padding.map((p) => p.join(":")).join(",")}]|${key(input)}|${key(out)}`,
    run(buffers, uniforms) {
      const memory = new KernelMemory(buffers, writable);
      const src = memory.array(input.binding, input.dtype);
      const dst = memory.array(out.binding, out.dtype);
      dst.fill(convert(decodeUniforms(uniforms)[0] ?? 0, out.dtype), out.layout.offset, out.layout.offset + n);
      forEachPosition(input.layout.shape, [input.layout.strides, interior.strides], [input.layout.offset, interior.offset], (_i, pos) => {
        dst[pos[1]!] = src[pos[0]!]!;
      });
      memory.commit();
    },
  };
}
