/**
 * The float matmul core in JavaScript: operands packed into f64 panels once, a 4×4 register tile
 * per step of `k`, rows taken in cache-sized blocks.
 *
 * @remarks
 * **Precision (unchanged from the oracle's definition).** Every output is
 * `Σ_p a[i,p]·b[p,j]` accumulated in f64 in increasing `p`, starting from 0, then rounded once to
 * the output dtype. Products of f32 values are exact in f64, so packing (f32 → f64) and tiling
 * change nothing: the result is bit-identical to the plain triple loop, and to the WebAssembly
 * kernel, which follows the same order.
 * **Blocking.** `B` is packed per batch into column panels of {@link NR} (`k × 4` f64, contiguous,
 * reused by every row); `A` into row panels of {@link MR} within blocks of {@link MC} rows (one
 * block stays in L2 while every column panel passes over it).
 *
 * @module
 */
import type { TypedArray } from "@weft/fusion";
import type { UnaryFn } from "../numerics/scalar-ops.js";

/** Rows of the register tile. */
export const MR = 4;
/** Columns of the register tile. */
export const NR = 4;
/** Rows of `A` packed per block. */
export const MC = 64;

/**
 * Products with at most this many rows (a serving batch) skip packing: {@link matmulRows} adds
 * scaled rows of `B` into an f64 row of accumulators, which reads `B` in place.
 */
export const ROWS_MAX = 16;

/** One batched matmul: strided operands, per-batch offsets, and the output converter. */
export interface MatmulArgs {
  readonly a: TypedArray;
  readonly b: TypedArray;
  readonly c: TypedArray;
  readonly m: number;
  readonly n: number;
  readonly k: number;
  /** `A`'s row and column strides (elements). */
  readonly lm: number;
  readonly lk: number;
  /** `B`'s row and column strides. */
  readonly rk: number;
  readonly rn: number;
  readonly batches: number;
  /** `[aOffset, bOffset, cOffset]` per batch; `C` is dense `m × n` from its offset. */
  readonly offsets: Float64Array;
  /** Rounds an f64 sum into the output dtype. */
  readonly store: UnaryFn;
}

/** Packs `B` (`k × n`, strides `rk`, `rn`, from `base`) into `NR`-column panels, zero-padded. */
export function packB(b: TypedArray, base: number, k: number, n: number, rk: number, rn: number, out: Float64Array): void {
  const panels = Math.ceil(n / NR);
  for (let q = 0; q < panels; q++) {
    const j0 = q * NR;
    const width = Math.min(NR, n - j0);
    let o = q * k * NR;
    for (let p = 0; p < k; p++, o += NR) {
      const row = base + p * rk + j0 * rn;
      for (let jj = 0; jj < NR; jj++) out[o + jj] = jj < width ? (b[row + jj * rn] as number) : 0;
    }
  }
}

/** Packs rows `i0 … i0 + rows` of `A` into `MR`-row panels (`k × 4` f64 each), zero-padded. */
export function packA(a: TypedArray, base: number, i0: number, rows: number, k: number, lm: number, lk: number, out: Float64Array): void {
  const panels = Math.ceil(rows / MR);
  for (let g = 0; g < panels; g++) {
    const height = Math.min(MR, rows - g * MR);
    let o = g * k * MR;
    for (let p = 0; p < k; p++, o += MR) {
      const col = base + (i0 + g * MR) * lm + p * lk;
      for (let ii = 0; ii < MR; ii++) out[o + ii] = ii < height ? (a[col + ii * lm] as number) : 0;
    }
  }
}

/** `C = A @ B` for every batch (see the module doc for order and precision). */
export function matmulF64(args: MatmulArgs): void {
  const { a, b, c, m, n, k, lm, lk, rk, rn, batches, offsets, store } = args;
  const panels = Math.ceil(n / NR);
  const packedB = new Float64Array(panels * NR * k);
  const packedA = new Float64Array(Math.ceil(Math.min(MC, m) / MR) * MR * k);
  let packedFrom = -1;
  for (let q = 0; q < batches; q++) {
    const aBase = offsets[3 * q] as number;
    const bBase = offsets[3 * q + 1] as number;
    const cBase = offsets[3 * q + 2] as number;
    if (bBase !== packedFrom || q === 0) {
      packB(b, bBase, k, n, rk, rn, packedB);
      packedFrom = bBase;
    }
    for (let i0 = 0; i0 < m; i0 += MC) {
      const rows = Math.min(MC, m - i0);
      packA(a, aBase, i0, rows, k, lm, lk, packedA);
      for (let jp = 0; jp < panels; jp++) {
        const j0 = jp * NR;
        const width = Math.min(NR, n - j0);
        for (let g = 0; g * MR < rows; g++) {
          const height = Math.min(MR, rows - g * MR);
          tile4x4(packedA, g * k * MR, packedB, jp * k * NR, k, c, cBase + (i0 + g * MR) * n + j0, n, height, width, store);
        }
      }
    }
  }
}

/**
 * `C = A @ B` without packing, for few rows: for each row `i` and each `p` in order,
 * `acc[j] += a[i,p]·b[p,j]` over a contiguous row of `B`. Every output still adds its products in
 * increasing `p` from 0 in f64, so the bits equal {@link matmulF64}'s.
 */
export function matmulRows(args: MatmulArgs): void {
  const { a, b, c, m, n, k, lm, lk, rk, rn, batches, offsets, store } = args;
  const acc = new Float64Array(n);
  for (let q = 0; q < batches; q++) {
    const aBase = offsets[3 * q] as number;
    const bBase = offsets[3 * q + 1] as number;
    const cBase = offsets[3 * q + 2] as number;
    for (let i = 0; i < m; i++) {
      acc.fill(0);
      const row = aBase + i * lm;
      for (let p = 0; p < k; p++) {
        const x = a[row + p * lk] as number;
        const from = bBase + p * rk;
        if (rn === 1) for (let j = 0; j < n; j++) acc[j] = (acc[j] as number) + x * (b[from + j] as number);
        else for (let j = 0; j < n; j++) acc[j] = (acc[j] as number) + x * (b[from + j * rn] as number);
      }
      const to = cBase + i * n;
      for (let j = 0; j < n; j++) c[to + j] = store(acc[j] as number);
    }
  }
}

/** One 4×4 tile over all of `k`: sixteen f64 accumulators, then `height × width` rounded stores. */
function tile4x4(pa: Float64Array, ao: number, pb: Float64Array, bo: number, k: number, c: TypedArray, co: number, ldc: number, height: number, width: number, store: UnaryFn): void {
  let c00 = 0, c01 = 0, c02 = 0, c03 = 0;
  let c10 = 0, c11 = 0, c12 = 0, c13 = 0;
  let c20 = 0, c21 = 0, c22 = 0, c23 = 0;
  let c30 = 0, c31 = 0, c32 = 0, c33 = 0;
  for (let p = 0; p < k; p++, ao += 4, bo += 4) {
    const b0 = pb[bo] as number;
    const b1 = pb[bo + 1] as number;
    const b2 = pb[bo + 2] as number;
    const b3 = pb[bo + 3] as number;
    let x = pa[ao] as number;
    c00 += x * b0; c01 += x * b1; c02 += x * b2; c03 += x * b3;
    x = pa[ao + 1] as number;
    c10 += x * b0; c11 += x * b1; c12 += x * b2; c13 += x * b3;
    x = pa[ao + 2] as number;
    c20 += x * b0; c21 += x * b1; c22 += x * b2; c23 += x * b3;
    x = pa[ao + 3] as number;
    c30 += x * b0; c31 += x * b1; c32 += x * b2; c33 += x * b3;
  }
  if (height === 4 && width === 4) {
    c[co] = store(c00); c[co + 1] = store(c01); c[co + 2] = store(c02); c[co + 3] = store(c03);
    co += ldc;
    c[co] = store(c10); c[co + 1] = store(c11); c[co + 2] = store(c12); c[co + 3] = store(c13);
    co += ldc;
    c[co] = store(c20); c[co + 1] = store(c21); c[co + 2] = store(c22); c[co + 3] = store(c23);
    co += ldc;
    c[co] = store(c30); c[co + 1] = store(c31); c[co + 2] = store(c32); c[co + 3] = store(c33);
    return;
  }
  const all = [c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33];
  for (let i = 0; i < height; i++) for (let j = 0; j < width; j++) c[co + i * ldc + j] = store(all[i * 4 + j] as number);
}
