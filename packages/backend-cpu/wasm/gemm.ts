// AssemblyScript source of the CPU backend's WebAssembly SIMD matmul core, compiled by
// `scripts/build-wasm.mjs` (the `wasm` Nx target) into `src/wasm/gemm.generated.ts`.
//
// What it computes: C = A · B over packed f64 panels (see `src/kernels/matmul-f64.ts` for the
// packing, which JavaScript does): `A` in row panels of 4 (`k × 4` f64, rows interleaved), `B` in
// column panels of 4 (`k × 4` f64), `C` an f64 block with row stride `ldc`. Each 4×4 tile keeps
// eight f64x2 accumulators and adds `a[i,p]·b[p,j]` for p = 0, 1, …, k-1 in order: the same
// order, and so the same bits, as the JavaScript tile (f32 products are exact in f64, and
// f64x2.mul/add round like scalar f64).

/** Computes `mPanels × nPanels` tiles of 4×4 into `pc`. Pointers are byte offsets. */
export function gemm(pa: usize, pb: usize, pc: usize, k: i32, mPanels: i32, nPanels: i32, ldc: i32): void {
  const panelBytes = <usize>k * 32;
  const row = <usize>ldc * 8;
  for (let jp = 0; jp < nPanels; jp++) {
    const bp = pb + <usize>jp * panelBytes;
    for (let ip = 0; ip < mPanels; ip++) {
      let a = pa + <usize>ip * panelBytes;
      let b = bp;
      let c00 = f64x2.splat(0), c01 = f64x2.splat(0);
      let c10 = f64x2.splat(0), c11 = f64x2.splat(0);
      let c20 = f64x2.splat(0), c21 = f64x2.splat(0);
      let c30 = f64x2.splat(0), c31 = f64x2.splat(0);
      for (let p = 0; p < k; p++) {
        const b0 = v128.load(b);
        const b1 = v128.load(b, 16);
        let x = f64x2.splat(load<f64>(a));
        c00 = f64x2.add(c00, f64x2.mul(x, b0));
        c01 = f64x2.add(c01, f64x2.mul(x, b1));
        x = f64x2.splat(load<f64>(a, 8));
        c10 = f64x2.add(c10, f64x2.mul(x, b0));
        c11 = f64x2.add(c11, f64x2.mul(x, b1));
        x = f64x2.splat(load<f64>(a, 16));
        c20 = f64x2.add(c20, f64x2.mul(x, b0));
        c21 = f64x2.add(c21, f64x2.mul(x, b1));
        x = f64x2.splat(load<f64>(a, 24));
        c30 = f64x2.add(c30, f64x2.mul(x, b0));
        c31 = f64x2.add(c31, f64x2.mul(x, b1));
        a += 32;
        b += 32;
      }
      let c = pc + (<usize>ip * 4 * <usize>ldc + <usize>jp * 4) * 8;
      v128.store(c, c00);
      v128.store(c, c01, 16);
      c += row;
      v128.store(c, c10);
      v128.store(c, c11, 16);
      c += row;
      v128.store(c, c20);
      v128.store(c, c21, 16);
      c += row;
      v128.store(c, c30);
      v128.store(c, c31, 16);
    }
  }
}

/**
 * Few-row products without packing: `A` (`m2 × k` f32, row-major, `m2` even) times `B` (`k × n8`
 * f32, row-major, `n8` a multiple of 8) into `C` (`m2 × n8` f64). Tiles of 2 rows × 8 columns keep
 * eight f64x2 accumulators; each f32 is promoted to f64 (exact) and `a[i,p]·b[p,j]` is added for
 * p = 0, 1, …, k-1 in order — the same bits as `gemm` and the JavaScript cores.
 */
export function gemmRows(pa: usize, pb: usize, pc: usize, m2: i32, n8: i32, k: i32): void {
  const rowA = <usize>k * 4;
  const rowB = <usize>n8 * 4;
  const rowC = <usize>n8 * 8;
  for (let i = 0; i < m2; i += 2) {
    const a0 = pa + <usize>i * rowA;
    for (let j = 0; j < n8; j += 8) {
      let a = a0;
      let b = pb + <usize>j * 4;
      let c00 = f64x2.splat(0), c01 = f64x2.splat(0), c02 = f64x2.splat(0), c03 = f64x2.splat(0);
      let c10 = f64x2.splat(0), c11 = f64x2.splat(0), c12 = f64x2.splat(0), c13 = f64x2.splat(0);
      for (let p = 0; p < k; p++) {
        const b0 = f64x2.promote_low_f32x4(v128.load64_zero(b));
        const b1 = f64x2.promote_low_f32x4(v128.load64_zero(b, 8));
        const b2 = f64x2.promote_low_f32x4(v128.load64_zero(b, 16));
        const b3 = f64x2.promote_low_f32x4(v128.load64_zero(b, 24));
        let x = f64x2.splat(<f64>load<f32>(a));
        c00 = f64x2.add(c00, f64x2.mul(x, b0));
        c01 = f64x2.add(c01, f64x2.mul(x, b1));
        c02 = f64x2.add(c02, f64x2.mul(x, b2));
        c03 = f64x2.add(c03, f64x2.mul(x, b3));
        x = f64x2.splat(<f64>load<f32>(a + rowA));
        c10 = f64x2.add(c10, f64x2.mul(x, b0));
        c11 = f64x2.add(c11, f64x2.mul(x, b1));
        c12 = f64x2.add(c12, f64x2.mul(x, b2));
        c13 = f64x2.add(c13, f64x2.mul(x, b3));
        a += 4;
        b += rowB;
      }
      let c = pc + <usize>i * rowC + <usize>j * 8;
      v128.store(c, c00);
      v128.store(c, c01, 16);
      v128.store(c, c02, 32);
      v128.store(c, c03, 48);
      c += rowC;
      v128.store(c, c10);
      v128.store(c, c11, 16);
      v128.store(c, c12, 32);
      v128.store(c, c13, 48);
    }
  }
}

/**
 * The epilogue of a linear layer over `gemmRows`' f64 block `C` (`m × n8`, `n8` a multiple of 8),
 * two columns at a time, each stage rounded to f32 and stored as `flags` asks (`m × n8` f32 blocks):
 * - the product, rounded to f32 as the matmul kernel stores it (`flags & 4`: stored at `pprod`);
 * - `flags & 1`: `+ bias[j]` (f32, `n8` of them from `pbias`) in f64, rounded to f32 (the `add`
 *   step; `flags & 8`: stored at `psum`);
 * - `flags & 2`: GELU in f64 exactly as `numerics/special.ts` `gelu` evaluates it —
 *   `0.5·(x + |x|·erf(|x|/√2))` with `erf` the 6-term Taylor piece around the nearest `i/64` (the
 *   table at `ptable`, `385 × 6` f64, copied from `ERF_TABLE`), Horner's rule in the same order,
 *   `1` from `|x|/√2 ≥ 6`, a zero result taking `x`'s sign (`x·0`) — rounded to f32 (the `gelu`
 *   step; `flags & 16`: stored at `pact`). Returns how many lane pairs held a GELU input below
 *   `special.ts` `GELU_TAIL`: there `gelu` is `0.5·x·erfc(|x|/√2)`, which needs `exp`, and
 *   AssemblyScript's `exp` reads tables from the memory the host overwrites; the host recomputes
 *   those elements (`src/kernels/matmul-wasm.ts`).
 * f64x2 `mul`/`add` round like scalar f64 and JavaScript never contracts `a·b + c`, so every lane
 * is the scalar code's value (`src/kernels/linear-epilogue.ts`).
 */
export function epilogueRows(pc: usize, pbias: usize, pprod: usize, psum: usize, pact: usize, ptable: usize, m: i32, n8: i32, flags: i32): i32 {
  let tails = 0;
  const half = f64x2.splat(0.5);
  const invSqrt2 = f64x2.splat(0.7071067811865476); // Math.SQRT1_2
  const six = f64x2.splat(6.0);
  const steps = f64x2.splat(64.0);
  const width = f64x2.splat(0.015625); // 1/64, exactly
  const one = f64x2.splat(1.0);
  const zero = f64x2.splat(0.0);
  const lastPiece = i32x4.splat(384);
  const tail = f64x2.splat(-3.5355339059327378); // special.ts GELU_TAIL
  const bias = (flags & 1) !== 0;
  const gelu = (flags & 2) !== 0;
  const storeProduct = (flags & 4) !== 0;
  const storeSum = (flags & 8) !== 0;
  const storeAct = (flags & 16) !== 0;
  for (let e = 0, j = 0; e < m * n8; e += 2, j += 2) {
    if (j === n8) j = 0;
    const at = <usize>e << 2;
    // The product as stored (f32), read back.
    let x32 = f32x4.demote_f64x2_zero(v128.load(pc + (<usize>e << 3)));
    if (storeProduct) v128.store64_lane(pprod + at, x32, 0);
    let x = f64x2.promote_low_f32x4(x32);
    if (bias) {
      const b = f64x2.promote_low_f32x4(v128.load64_zero(pbias + (<usize>j << 2)));
      x32 = f32x4.demote_f64x2_zero(f64x2.add(x, b));
      if (storeSum) v128.store64_lane(psum + at, x32, 0);
      x = f64x2.promote_low_f32x4(x32);
    }
    if (gelu) {
      const a = f64x2.abs(x);
      const t = f64x2.mul(a, invSqrt2);
      // The nearest piece (`(t·64 + 0.5) | 0`), clamped into the table: lanes with t ≥ 6 (and
      // NaN, whose h is NaN) take the select below.
      const piece = i32x4.min_s(i32x4.trunc_sat_f64x2_s_zero(f64x2.add(f64x2.mul(t, steps), half)), lastPiece);
      const h = f64x2.sub(t, f64x2.mul(f64x2.convert_low_i32x4_s(piece), width));
      const r0 = ptable + <usize>(i32x4.extract_lane(piece, 0) * 48);
      const r1 = ptable + <usize>(i32x4.extract_lane(piece, 1) * 48);
      let p = v128.load64_lane(r1, v128.load64_zero(r0, 40), 1, 40);
      p = f64x2.add(f64x2.mul(p, h), v128.load64_lane(r1, v128.load64_zero(r0, 32), 1, 32));
      p = f64x2.add(f64x2.mul(p, h), v128.load64_lane(r1, v128.load64_zero(r0, 24), 1, 24));
      p = f64x2.add(f64x2.mul(p, h), v128.load64_lane(r1, v128.load64_zero(r0, 16), 1, 16));
      p = f64x2.add(f64x2.mul(p, h), v128.load64_lane(r1, v128.load64_zero(r0, 8), 1, 8));
      p = f64x2.add(f64x2.mul(p, h), v128.load64_lane(r1, v128.load64_zero(r0, 0), 1, 0));
      const erf = v128.bitselect(one, p, f64x2.ge(t, six));
      const r = f64x2.mul(half, f64x2.add(x, f64x2.mul(a, erf)));
      // The negative tail (rare) is left to the host, which recomputes those elements (see the doc).
      if (v128.any_true(f64x2.lt(x, tail))) tails++;
      x = v128.bitselect(f64x2.mul(x, zero), r, f64x2.eq(r, zero));
      if (storeAct) v128.store64_lane(pact + at, f32x4.demote_f64x2_zero(x), 0);
    }
  }
  return tails;
}
