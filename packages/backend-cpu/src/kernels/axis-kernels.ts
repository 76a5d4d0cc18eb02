/**
 * The kernels that walk one axis row by row: `sort` (a stable radix sort of order-preserving
 * keys), `scan` (a running sum/product folded serially per block of {@link SCAN_BLOCK}) and
 * `scatter` (the sources written or added in order). Each reads strided operands and writes one dense output; they are the oracle the
 * WebGPU kernels of the same ops must match (`docs/semantics.md`, "Issue 7's ops").
 *
 * @remarks
 * **Sort keys.** Every element becomes a `u32` key whose unsigned order is the documented order
 * ({@link sortKeys}): floats by their bits (`-0` made `+0`, NaN above `+Inf` ascending and below
 * everything descending), `i32` with its sign bit flipped, `u32`/`bool` as they are, descending
 * as the complement. A stable sort of the keys is then exactly the documented stable sort, and
 * the WebGPU kernel sorts the very same keys, so the two agree bit for bit.
 * **Why radix.** Least-significant-digit radix sort is stable by construction and `O(n)` (four
 * passes of 8 bits); rows of at most {@link INSERTION_MAX} use insertion sort (also stable).
 *
 * @module
 */
import type { DType, ScanOp, ScatterOp, SortOutput, TypedArray } from "@weft/fusion";
import { IndexOutOfRangeError } from "../errors/cpu-errors.js";
import { KernelMemory, type CpuKernel } from "./cpu-kernel.js";
import { forEachRun, planLoop } from "./strided-loop.js";
import { copyStrided, type KernelOperand } from "./tensor-kernels.js";

/** Rows up to this length are insertion-sorted (fewer steps than four radix passes). */
export const INSERTION_MAX = 32;

function key(operand: KernelOperand): string {
  return `b${operand.binding}:${operand.dtype}r${operand.layout.shape.length}`;
}

/**
 * Calls `visit(bases)` once per row along `axis` of `shape`, in row-major order of the other
 * dims, with each operand's offset of the row's first element (`bases[k]`, reused between calls).
 */
function forEachRow(shape: readonly number[], axis: number, operands: readonly { strides: readonly number[]; offset: number }[], visit: (bases: Float64Array) => void): void {
  const outer = shape.map((d, i) => (i === axis ? 1 : d));
  const plan = planLoop(outer, operands.map((o) => o.strides));
  const r = plan.rank;
  const bases = new Float64Array(operands.length);
  forEachRun(plan, operands.map((o) => o.offset), (start, count) => {
    for (let i = 0; i < count; i++) {
      for (let k = 0; k < operands.length; k++) bases[k] = (start[k] as number) + i * (plan.strides[k * r + r - 1] as number);
      visit(bases);
    }
  });
}

/** The 32-bit pattern view of a 4-byte array (the same memory); `bool` stays bytes. */
function bitsOf(array: TypedArray): Uint32Array | Uint8Array {
  return array instanceof Uint8Array ? array : new Uint32Array(array.buffer, array.byteOffset, array.length);
}

/**
 * Writes the `u32` sort keys of `count` elements of `bits` (from `base`, step `step`) into `keys`
 * (module doc: unsigned key order is the documented order of `dtype`, complemented descending).
 */
export function sortKeys(bits: Uint32Array | Uint8Array, dtype: DType, base: number, step: number, count: number, descending: boolean, keys: Uint32Array): void {
  for (let i = 0; i < count; i++) {
    let b = bits[base + i * step] as number;
    let k: number;
    if (dtype === "f32") {
      const magnitude = b & 0x7fffffff;
      if (magnitude > 0x7f800000) {
        keys[i] = descending ? 0 : 0xffffffff;
        continue;
      }
      if (magnitude === 0) b = 0;
      k = (b & 0x80000000) !== 0 ? ~b >>> 0 : (b | 0x80000000) >>> 0;
    } else if (dtype === "i32") {
      k = (b ^ 0x80000000) >>> 0;
    } else {
      k = b >>> 0;
    }
    keys[i] = descending ? ~k >>> 0 : k;
  }
}

/**
 * Sorts `order[0..n)` (positions) stably by `keys[position]`, using `scratch` (`n` entries) and
 * `sortedKeys`/`keyScratch` for the radix passes. Returns the array holding the result.
 */
function stableOrder(keys: Uint32Array, n: number, order: Uint32Array, scratch: Uint32Array, keyA: Uint32Array, keyB: Uint32Array, counts: Uint32Array): Uint32Array {
  for (let i = 0; i < n; i++) order[i] = i;
  if (n <= INSERTION_MAX) {
    for (let i = 1; i < n; i++) {
      const p = order[i] as number;
      const k = keys[p] as number;
      let j = i - 1;
      while (j >= 0 && (keys[order[j] as number] as number) > k) {
        order[j + 1] = order[j] as number;
        j--;
      }
      order[j + 1] = p;
    }
    return order;
  }
  let src = order;
  let dst = scratch;
  let ks = keyA;
  let kd = keyB;
  for (let i = 0; i < n; i++) ks[i] = keys[i] as number;
  for (let shift = 0; shift < 32; shift += 8) {
    counts.fill(0);
    for (let i = 0; i < n; i++) {
      const d = ((ks[i] as number) >>> shift) & 0xff;
      counts[d] = (counts[d] as number) + 1;
    }
    // A pass where every key shares the digit moves nothing.
    if (counts[((ks[0] as number) >>> shift) & 0xff] === n) continue;
    let sum = 0;
    for (let d = 0; d < 256; d++) {
      const c = counts[d] as number;
      counts[d] = sum;
      sum += c;
    }
    for (let i = 0; i < n; i++) {
      const k = ks[i] as number;
      const d = (k >>> shift) & 0xff;
      const at = counts[d] as number;
      counts[d] = at + 1;
      dst[at] = src[i] as number;
      kd[at] = k;
    }
    [src, dst] = [dst, src];
    [ks, kd] = [kd, ks];
  }
  return src;
}

/**
 * `sort` along `axis` (module doc): the first `out.shape[axis]` entries of each row's stable
 * order, as values (copied bit for bit) or as `i32` positions.
 */
export function sortKernel(input: KernelOperand, axis: number, descending: boolean, output: SortOutput, out: KernelOperand, writable: readonly boolean[]): CpuKernel {
  const shape = input.layout.shape;
  const n = shape[axis] ?? 0;
  const kept = out.layout.shape[axis] ?? 0;
  const sa = input.layout.strides[axis] ?? 0;
  const so = out.layout.strides[axis] ?? 0;
  return {
    key: `sort[${axis}:${descending ? "desc" : "asc"}:${output}]|${key(input)}|${key(out)}`,
    run(buffers) {
      const memory = new KernelMemory(buffers, writable);
      const src = bitsOf(memory.array(input.binding, input.dtype));
      const dst = output === "indices" ? memory.array(out.binding, "i32") : bitsOf(memory.array(out.binding, out.dtype));
      const keys = new Uint32Array(n);
      const order = new Uint32Array(n);
      const scratch = new Uint32Array(n);
      const keyA = new Uint32Array(n);
      const keyB = new Uint32Array(n);
      const counts = new Uint32Array(256);
      forEachRow(shape, axis, [input.layout, out.layout], (bases) => {
        const p = bases[0] as number;
        const o = bases[1] as number;
        sortKeys(src, input.dtype, p, sa, n, descending, keys);
        const sorted = stableOrder(keys, n, order, scratch, keyA, keyB, counts);
        if (output === "indices") {
          for (let i = 0; i < kept; i++) dst[o + i * so] = sorted[i] as number;
        } else {
          for (let i = 0; i < kept; i++) dst[o + i * so] = src[p + (sorted[i] as number) * sa] as number;
        }
      });
      memory.commit();
    },
  };
}

/**
 * Elements per block of the scan order (`docs/semantics.md`, "Issue 7's ops"): each block is
 * folded serially, and a block after the first starts from the carry (the fold of the earlier
 * blocks' totals), so the WebGPU kernel can fold every block in parallel and give the same bits.
 */
export const SCAN_BLOCK = 512;

/**
 * The inclusive running sum or product along `axis` in the blocked order of {@link SCAN_BLOCK}:
 * a serial left fold (NumPy's `add.accumulate`) for rows up to one block; floats round to f32
 * after every step, integers wrap (so their results do not depend on the order).
 */
export function scanKernel(op: ScanOp, input: KernelOperand, axis: number, out: KernelOperand, writable: readonly boolean[]): CpuKernel {
  const shape = input.layout.shape;
  const n = shape[axis] ?? 0;
  const sa = input.layout.strides[axis] ?? 0;
  const so = out.layout.strides[axis] ?? 0;
  const dtype = out.dtype;
  const sum = op === "sum";
  const combine =
    dtype === "f32"
      ? sum ? (a: number, b: number) => Math.fround(a + b) : (a: number, b: number) => Math.fround(a * b)
      : dtype === "i32"
        ? sum ? (a: number, b: number) => (a + b) | 0 : (a: number, b: number) => Math.imul(a, b)
        : sum ? (a: number, b: number) => (a + b) >>> 0 : (a: number, b: number) => Math.imul(a, b) >>> 0;
  return {
    key: `scan[${op}:${axis}]|${key(input)}|${key(out)}`,
    run(buffers) {
      const memory = new KernelMemory(buffers, writable);
      const src = memory.array(input.binding, input.dtype);
      const dst = memory.array(out.binding, dtype);
      forEachRow(shape, axis, [input.layout, out.layout], (bases) => {
        const p = bases[0] as number;
        const o = bases[1] as number;
        let carry = 0;
        for (let start = 0; start < n; start += SCAN_BLOCK) {
          const end = Math.min(n, start + SCAN_BLOCK);
          const first = src[p + start * sa] as number;
          let acc = start === 0 ? first : combine(carry, first);
          dst[o + start * so] = acc;
          for (let i = start + 1; i < end; i++) {
            acc = combine(acc, src[p + i * sa] as number);
            dst[o + i * so] = acc;
          }
          if (start === 0) {
            carry = acc;
          } else {
            // The block's own total, folded from its first element (what the device folds in parallel).
            let total = first;
            for (let i = start + 1; i < end; i++) total = combine(total, src[p + i * sa] as number);
            carry = combine(carry, total);
          }
        }
      });
      memory.commit();
    },
  };
}

/**
 * `out = input`, then along `axis` every source `src[..., j, ...]` written to (`assign`) or added
 * to (`add`, f32 rounding after each add, integers wrapping) `out[..., indices[..., j, ...], ...]`
 * in `j` order: the last duplicate wins, duplicates add in source order (NumPy's `add.at`).
 * @throws IndexOutOfRangeError (op `scatter`/`scatterAdd`) for an index outside `[-n, n)`.
 */
export function scatterKernel(op: ScatterOp, input: KernelOperand, indices: KernelOperand, src: KernelOperand, axis: number, out: KernelOperand, writable: readonly boolean[]): CpuKernel {
  const shape = input.layout.shape;
  const n = shape[axis] ?? 0;
  const m = indices.layout.shape[axis] ?? 0;
  const si = indices.layout.strides[axis] ?? 0;
  const ss = src.layout.strides[axis] ?? 0;
  const so = out.layout.strides[axis] ?? 0;
  const outRegion = { strides: out.layout.strides, offset: out.layout.offset };
  const name = op === "assign" ? "scatter" : "scatterAdd";
  return {
    key: `scatter[${op}:${axis}]|${key(input)}|${key(indices)}|${key(src)}|${key(out)}`,
    run(buffers) {
      const memory = new KernelMemory(buffers, writable);
      const x = memory.array(input.binding, input.dtype);
      const idx = memory.array(indices.binding, "i32");
      const values = memory.array(src.binding, src.dtype);
      const dst = memory.array(out.binding, out.dtype);
      copyStrided(x, dst, shape, input.layout, out.layout.strides, out.layout.offset);
      const dtype = out.dtype;
      forEachRow(indices.layout.shape, axis, [indices.layout, src.layout, outRegion], (bases) => {
        const q = bases[0] as number;
        const s = bases[1] as number;
        const o = bases[2] as number;
        for (let j = 0; j < m; j++) {
          const raw = idx[q + j * si] as number;
          if (!(raw >= -n && raw < n)) throw new IndexOutOfRangeError(name, raw, n, shape, axis);
          const at = o + (raw < 0 ? raw + n : raw) * so;
          const v = values[s + j * ss] as number;
          if (op === "assign") dst[at] = v;
          else if (dtype === "f32") dst[at] = Math.fround((dst[at] as number) + v);
          else if (dtype === "i32") dst[at] = ((dst[at] as number) + v) | 0;
          else dst[at] = ((dst[at] as number) + v) >>> 0;
        }
      });
      memory.commit();
    },
  };
}
