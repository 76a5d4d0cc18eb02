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
