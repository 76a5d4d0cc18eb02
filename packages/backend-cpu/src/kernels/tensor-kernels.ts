/**
 * The non-elementwise kernels: reductions, matmul, concat, gather and pad. Each reads strided
 * operands and writes one dense output.
 *
 * @remarks
 * **Written for V8.** Iteration goes through a collapsed {@link LoopPlan} (`strided-loop.ts`):
 * outer dims advance an odometer once per innermost run, and the run itself is a counted loop
 * over a typed array — no per-element closure, index array or allocation. Hot loops see one
 * typed-array kind each (monomorphic).
 * **Keys.** Like the elementwise kernels, keys are structural (op, dtypes, ranks, axes); sizes,
 * strides and offsets live in the launch's kernel object, never in the compiled-once key.
 *
 * @module
 */
import type { DType, ReduceOp, TypedArray } from "@weft/fusion";
import { numElements } from "@weft/fusion";
import { invariant } from "@weft/environment";
import { broadcastStrides, contiguousStrides, sliceLayout, type Layout } from "@weft/fusion";
import { convert, converter, isIntegerDType } from "../numerics/scalar-ops.js";
import { IndexOutOfRangeError } from "../errors/cpu-errors.js";
import { KernelMemory, decodeUniforms, type CpuKernel } from "./cpu-kernel.js";
import { forEachRun, planLoop, type LoopPlan } from "./strided-loop.js";
import { ROWS_MAX, matmulF64, matmulRows, type MatmulArgs } from "./matmul-f64.js";
import { matmulWasm, matmulWasmRows } from "./matmul-wasm.js";
import { SUM_BLOCK, extremeWasm, sumWasm, wasmReduces } from "./reduce-wasm.js";

/** One tensor a kernel reads or writes: its binding index, dtype and strided layout. */
export interface KernelOperand {
  readonly binding: number;
  readonly dtype: DType;
  readonly layout: Layout;
}

function key(operand: KernelOperand): string {
  return `b${operand.binding}:${operand.dtype}r${operand.layout.shape.length}`;
}

/**
 * The f64 sum of `count` values of `src` from `base` with stride `step`, in the order that defines
 * Weft's `sum` (see {@link reduceKernel}): per block of {@link SUM_BLOCK} elements, element `j`
 * goes to lane `j mod 8`, lanes combine as `((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7))`, and block
 * partials add up in order.
 */
export function sumF64(src: TypedArray | Float64Array, base: number, count: number, step: number): number {
  let total = 0;
  for (let block = 0; block < count; block += SUM_BLOCK) {
    const end = Math.min(count, block + SUM_BLOCK);
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    let j = block;
    if (step === 1) {
      // One induction variable and a precomputed bound: V8 keeps the eight lanes in registers
      // (≈1.5× the two-counter loop on a 4M-element sum). Same lanes, same order.
      let p = base + j;
      const last = base + end - 7;
      for (; p < last; p += 8) {
        s0 += src[p] as number;
        s1 += src[p + 1] as number;
        s2 += src[p + 2] as number;
        s3 += src[p + 3] as number;
        s4 += src[p + 4] as number;
        s5 += src[p + 5] as number;
        s6 += src[p + 6] as number;
        s7 += src[p + 7] as number;
      }
      j = p - base;
    } else {
      let p = base + j * step;
      for (; j + 8 <= end; j += 8, p += 8 * step) {
        s0 += src[p] as number;
        s1 += src[p + step] as number;
        s2 += src[p + 2 * step] as number;
        s3 += src[p + 3 * step] as number;
        s4 += src[p + 4 * step] as number;
        s5 += src[p + 5 * step] as number;
        s6 += src[p + 6 * step] as number;
        s7 += src[p + 7 * step] as number;
      }
    }
    const tail = end - j;
    const p = base + j * step;
    if (tail > 0) s0 += src[p] as number;
    if (tail > 1) s1 += src[p + step] as number;
    if (tail > 2) s2 += src[p + 2 * step] as number;
    if (tail > 3) s3 += src[p + 3 * step] as number;
    if (tail > 4) s4 += src[p + 4 * step] as number;
    if (tail > 5) s5 += src[p + 5 * step] as number;
    if (tail > 6) s6 += src[p + 6 * step] as number;
    total += s0 + s1 + (s2 + s3) + (s4 + s5 + (s6 + s7));
  }
  return total;
}

/**
 * Reduces `count` values of `src` (from `base`, stride `step`) by `op` into one number (before
 * conversion to the output dtype). `wrap` wraps integer sums and products into their dtype.
 */
export function reduceRange(op: ReduceOp, src: TypedArray | Float64Array, base: number, count: number, step: number, integer: boolean, wrap: (x: number) => number): number {
  switch (op) {
    case "sum":
    case "mean": {
      let acc: number;
      if (integer) {
        acc = 0;
        for (let j = 0, p = base; j < count; j++, p += step) acc = wrap(acc + (src[p] as number));
      } else {
        acc = (wasmReduces(src, count, step) ? sumWasm(src, base, count) : undefined) ?? sumF64(src, base, count, step);
      }
      return op === "mean" ? acc / count : acc;
    }
    case "prod": {
      let acc = 1;
      if (integer) for (let j = 0, p = base; j < count; j++, p += step) acc = wrap(Math.imul(acc, src[p] as number));
      else for (let j = 0, p = base; j < count; j++, p += step) acc *= src[p] as number;
      return acc;
    }
    case "max":
    case "min": {
      // A fold of `maximum`/`minimum` (docs/semantics.md, "Signed zeros"): NaN wins, and +0 is
      // above -0 whatever their order (`Math.max`/`Math.min` on a tie of zeros), so the answer
      // does not depend on the order a GPU's tree visits the elements in.
      const isMax = op === "max";
      if (wasmReduces(src, count, step)) {
        const extreme = extremeWasm(src, base, count, isMax);
        if (extreme !== undefined) return extreme;
      }
      const pick = isMax ? Math.max : Math.min;
      let acc = src[base] as number;
      for (let j = 1, p = base + step; j < count && acc === acc; j++, p += step) {
        const v = src[p] as number;
        if (v !== v || (isMax ? v > acc : v < acc)) acc = v;
        else if (v === 0 && acc === 0) acc = pick(acc, v);
      }
      return acc;
    }
    case "argmax":
    case "argmin": {
      const isMax = op === "argmax";
      let best = src[base] as number;
      let at = 0;
      for (let j = 1, p = base + step; j < count && best === best; j++, p += step) {
        const v = src[p] as number;
        if (v !== v || (isMax ? v > best : v < best)) {
          best = v;
          at = j;
        }
      }
      return at;
    }
    case "any": {
      for (let j = 0, p = base; j < count; j++, p += step) if ((src[p] as number) !== 0) return 1;
      return 0;
    }
    case "all": {
      for (let j = 0, p = base; j < count; j++, p += step) if ((src[p] as number) === 0) return 0;
      return 1;
    }
    default:
      return op satisfies never;
  }
}

/**
 * Reduces `axes` of `input` into the dense `out`.
 *
 * @remarks
 * **Precision.** f32 `sum`/`mean` accumulate in f64 in a fixed order ({@link sumF64}: 8 lanes per
 * block of 2^16, blocks in order) and round once at the end (contiguous f32 runs of
 * `WASM_REDUCE_MIN` or more, and f32 `max`/`min`, run on WebAssembly SIMD: `reduce-wasm.ts`, same bits); `prod` accumulates in f64 in index
 * order; integer `sum`/`prod` wrap in the output dtype. `max`/`min` propagate NaN.
 * `argmax`/`argmin` give the first index of the extreme (a NaN counts as the extreme), as an index
 * into the row-major flattening of the reduced axes. Empty extents: `sum` 0, `prod` 1, `mean`
 * NaN, `any` false, `all` true; `max`/`min`/`argmax`/`argmin` are refused before launch by the
 * runtime. The order is defined on the row-major flattening of the reduced axes, so a strided
 * view and its dense copy reduce to the same bits.
 * **Iteration.** When the reduced axes collapse into one run, each output reduces that run in
 * place; otherwise its elements are first gathered (in row-major order) into a scratch row.
 */
export function reduceKernel(op: ReduceOp, input: KernelOperand, axes: readonly number[], out: KernelOperand, writable: readonly boolean[]): CpuKernel {
  const shape = input.layout.shape;
  const strides = input.layout.strides;
  const keptShape: number[] = [];
  const keptStrides: number[] = [];
  const reducedShape: number[] = [];
  const reducedStrides: number[] = [];
  for (let d = 0; d < shape.length; d++) {
    const target = axes.includes(d) ? [reducedShape, reducedStrides] : [keptShape, keptStrides];
    target[0]?.push(shape[d] ?? 1);
    target[1]?.push(strides[d] ?? 0);
  }
  const kept = planLoop(keptShape, [keptStrides]);
  const reduced = planLoop(reducedShape, [reducedStrides]);
  const extent = reduced.total;
  const runStep = reduced.rank === 1 ? (reduced.strides[0] as number) : 0;
  const oneRun = reduced.rank === 1;
  const outDtype = out.dtype;
  const integer = isIntegerDType(outDtype) && outDtype !== "bool";
  const wrap = outDtype === "u32" ? (x: number) => x >>> 0 : (x: number) => x | 0;
  const store = converter(outDtype);
  // Where each output's run starts, computed once when the reduced axes are one run and the
  // outputs few (a kernel is kept and launched again: `ReduceKernelCache`): a launch then loops
  // over them without a closure or an odometer.
  const bases = oneRun && kept.total <= MAX_PLANNED_BASES ? runBases(kept, input.layout.offset) : undefined;
  return {
    key: `reduce:${op}[${axes.join(",")}]|${key(input)}|${key(out)}`,
    run(buffers) {
      const memory = new KernelMemory(buffers, writable);
      const src = memory.array(input.binding, input.dtype);
      const dst = memory.array(out.binding, outDtype);
      let o = out.layout.offset;
      if (bases !== undefined) {
        for (let i = 0; i < bases.length; i++) dst[o++] = store(reduceRange(op, src, bases[i] as number, extent, runStep, integer, wrap));
        memory.commit();
        return;
      }
      const keptStep = kept.strides[kept.rank - 1] as number;
      // f32 rows gather into f32 (exact), so the sum loop sees one array kind (monomorphic in V8).
      const row = oneRun ? undefined : input.dtype === "f32" ? new Float32Array(extent) : new Float64Array(extent);
      forEachRun(kept, [input.layout.offset], (start, count) => {
        for (let i = 0; i < count; i++) {
          const base = (start[0] as number) + i * keptStep;
          let value: number;
          if (row === undefined) {
            value = reduceRange(op, src, base, extent, runStep, integer, wrap);
          } else {
            let r = 0;
            const step = reduced.strides[reduced.rank - 1] as number;
            forEachRun(reduced, [base], (at, n) => {
              const p = at[0] as number;
              for (let j = 0; j < n; j++) row[r++] = src[p + j * step] as number;
            });
            value = reduceRange(op, row, 0, extent, 1, integer, wrap);
          }
          dst[o++] = store(value);
        }
      });
      memory.commit();
    },
  };
}

/** What a kept kernel's argument object holds between launches (no page). */
const NO_ARRAY = new Float32Array(0);

/** Most outputs whose run starts a reduce kernel computes once ({@link reduceKernel}); 32 KB of offsets. */
const MAX_PLANNED_BASES = 4096;

/** The start of every innermost position of `kept` from `offset`, in row-major order (the outputs' order). */
function runBases(kept: LoopPlan, offset: number): Float64Array {
  const bases = new Float64Array(kept.total);
  const step = kept.strides[kept.rank - 1] as number;
  let b = 0;
  forEachRun(kept, [offset], (start, count) => {
    for (let i = 0; i < count; i++) bases[b++] = (start[0] as number) + i * step;
  });
  return bases;
}

/**
 * Batched `lhs @ rhs` over the last two dims into the dense `out`; batch dims broadcast
 * (right-aligned). f32 accumulates each output in f64 over `k` in index order and rounds once
 * (packed, cache-blocked, register-tiled: {@link matmulWasm} with WebAssembly SIMD where it runs,
 * else {@link matmulF64}; up to {@link ROWS_MAX} rows {@link matmulRows}, unpacked; all give the
 * same bits); integers wrap.
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
  const lm = lhs.layout.strides[lr - 2] ?? 0;
  const lk = lhs.layout.strides[lr - 1] ?? 0;
  const rk = rhs.layout.strides[rr - 2] ?? 0;
  const rn = rhs.layout.strides[rr - 1] ?? 0;
  // Every batch's three offsets, once (bounded by the batch count). A plain 2-D product (a
  // serving layer) has one batch at the operands' offsets: no loop plan to build per launch.
  let batches = 1;
  let offsets: Float64Array;
  if (rank <= 2) {
    offsets = Float64Array.of(lhs.layout.offset, rhs.layout.offset, out.layout.offset);
  } else {
    const batchShape = outShape.slice(0, rank - 2);
    const batchOf = (o: KernelOperand): number[] => {
      const r = o.layout.shape.length;
      return broadcastStrides({ shape: o.layout.shape.slice(0, r - 2), strides: o.layout.strides.slice(0, r - 2), offset: 0 }, batchShape);
    };
    batches = numElements(batchShape);
    const all = new Float64Array(3 * batches);
    const plan = planLoop(batchShape, [batchOf(lhs), batchOf(rhs), contiguousStrides(outShape).slice(0, rank - 2)]);
    let b = 0;
    forEachRun(plan, [lhs.layout.offset, rhs.layout.offset, out.layout.offset], (start, count) => {
      for (let i = 0; i < count; i++, b++) {
        for (let s = 0; s < 3; s++) all[3 * b + s] = (start[s] as number) + i * (plan.strides[s * plan.rank + plan.rank - 1] as number);
      }
    });
    offsets = all;
  }
  const integer = isIntegerDType(out.dtype) && out.dtype !== "bool";
  const wrap = out.dtype === "u32" ? (x: number) => x >>> 0 : (x: number) => x | 0;
  // One argument object for every launch of this kernel (a kernel is kept and launched again: a
  // fused block's launch replay): the operands' arrays are set for the launch and let go after it,
  // so a kept kernel never keeps a page that was given back alive.
  const args: { -readonly [F in keyof MatmulArgs]: MatmulArgs[F] } = { a: NO_ARRAY, b: NO_ARRAY, c: NO_ARRAY, m, n, k, lm, lk, rk, rn, batches, offsets, store: converter(out.dtype) };
  return {
    key: `matmul|${key(lhs)}|${key(rhs)}|${key(out)}`,
    run(buffers) {
      const memory = new KernelMemory(buffers, writable);
      const a = memory.array(lhs.binding, lhs.dtype);
      const bArr = memory.array(rhs.binding, rhs.dtype);
      const c = memory.array(out.binding, out.dtype);
      if (m * n === 0) return;
      if (!integer) {
        args.a = a;
        args.b = bArr;
        args.c = c;
        try {
          // Few rows: no packing. WebAssembly SIMD where it runs, else JavaScript (all the same bits).
          if (m <= ROWS_MAX) {
            if (!matmulWasmRows(args)) matmulRows(args);
          } else if (!matmulWasm(args)) matmulF64(args);
        } finally {
          args.a = NO_ARRAY;
          args.b = NO_ARRAY;
          args.c = NO_ARRAY;
        }
      } else {
        for (let q = 0; q < batches; q++) {
          const la = offsets[3 * q] as number;
          const rb = offsets[3 * q + 1] as number;
          const oc = offsets[3 * q + 2] as number;
          for (let i = 0; i < m; i++) {
            for (let j = 0; j < n; j++) {
              let acc = 0;
              for (let p = 0; p < k; p++) acc = wrap(acc + Math.imul(a[la + i * lm + p * lk] as number, bArr[rb + p * rk + j * rn] as number));
              c[oc + i * n + j] = convert(acc, out.dtype);
            }
          }
        }
      }
      memory.commit();
    },
  };
}

/** Copies `src` viewed through `from` into `dst` viewed through `to` (same shape), run by run. */
/** Copies the strided `src` view (`shape`, `from`) into `dst` at `toStrides`/`toOffset`. */
export function copyStrided(src: TypedArray, dst: TypedArray, shape: readonly number[], from: Layout, toStrides: readonly number[], toOffset: number): void {
  const plan = planLoop(shape, [from.strides, toStrides]);
  const a = plan.strides[plan.rank - 1] as number;
  const b = plan.strides[2 * plan.rank - 1] as number;
  forEachRun(plan, [from.offset, toOffset], (start, count) => {
    const p = start[0] as number;
    const q = start[1] as number;
    if (a === 1 && b === 1) {
      for (let i = 0; i < count; i++) dst[q + i] = src[p + i] as number;
    } else {
      for (let i = 0; i < count; i++) dst[q + i * b] = src[p + i * a] as number;
    }
  });
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
        copyStrided(memory.array(input.binding, input.dtype), dst, input.layout.shape, input.layout, outStrides, offset);
      }
      memory.commit();
    },
  };
}

/**
 * `out[…, i, …] = input[…, indices[…, i, …], …]` along `axis`; `out` has the indices' shape.
 * Indices lie in `[-n, n)` for an axis of size `n`; a negative index counts from the end
 * (`docs/semantics.md`, "Index errors"). Any other index throws {@link IndexOutOfRangeError}: the
 * launch fails, so the output and everything computed from it fail at read.
 */
export function gatherKernel(input: KernelOperand, indices: KernelOperand, axis: number, out: KernelOperand, writable: readonly boolean[]): CpuKernel {
  const shape = indices.layout.shape;
  const size = input.layout.shape[axis] ?? 0;
  const axisStride = input.layout.strides[axis] ?? 0;
  const inputStrides = input.layout.strides.map((s, d) => (d === axis ? 0 : s));
  const plan = planLoop(shape, [inputStrides, indices.layout.strides, out.layout.strides]);
  const r = plan.rank;
  return {
    key: `gather[${axis}]|${key(input)}|${key(indices)}|${key(out)}`,
    run(buffers) {
      const memory = new KernelMemory(buffers, writable);
      const src = memory.array(input.binding, input.dtype);
      const idx = memory.array(indices.binding, indices.dtype);
      const dst = memory.array(out.binding, out.dtype);
      const sa = plan.strides[r - 1] as number;
      const si = plan.strides[2 * r - 1] as number;
      const so = plan.strides[3 * r - 1] as number;
      forEachRun(plan, [input.layout.offset, indices.layout.offset, out.layout.offset], (start, count) => {
        const p = start[0] as number;
        const q = start[1] as number;
        const o = start[2] as number;
        for (let i = 0; i < count; i++) {
          const raw = idx[q + i * si] as number;
          if (!(raw >= -size && raw < size)) throw new IndexOutOfRangeError("gather", raw, size, input.layout.shape, axis);
          const index = raw < 0 ? raw + size : raw;
          dst[o + i * so] = src[p + i * sa + index * axisStride] as number;
        }
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
      copyStrided(src, dst, input.layout.shape, input.layout, interior.strides, interior.offset);
      memory.commit();
    },
  };
}
