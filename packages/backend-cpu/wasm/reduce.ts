// AssemblyScript source of the CPU backend's WebAssembly SIMD reductions, compiled by
// `scripts/build-wasm.mjs` (the `wasm` Nx target) into `src/wasm/reduce.generated.ts`.
//
// What it computes, over `count` contiguous f32 at byte offset `ptr` (JavaScript copies them in,
// one block at a time; see `src/kernels/reduce-wasm.ts`):
// - `sumBlock`: the f64 sum of one block in the order that defines Weft's `sum`
//   (docs/semantics.md, "Summation order"): element `j` goes to lane `j mod 8`, each lane adds in
//   index order, and the lanes combine as `((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7))`. Lanes 2q and
//   2q+1 are the two halves of one f64x2 accumulator; f32 → f64 promotion is exact and f64x2.add
//   rounds like a scalar f64 add, so the bits are those of `sumF64` in JavaScript.
// - `maxBlock`/`minBlock`: the maximum/minimum (f32x4.max/min: NaN wins, +0 above -0, so the
//   order does not matter).

/** The f64 sum of `count` f32 at `ptr` in the documented 8-lane order (one block, ≤ 2^16 elements). */
export function sumBlock(ptr: usize, count: i32): f64 {
  let s01 = f64x2.splat(0), s23 = f64x2.splat(0), s45 = f64x2.splat(0), s67 = f64x2.splat(0);
  const end8 = ptr + (<usize>(count & ~7) << 2);
  let p = ptr;
  for (; p < end8; p += 32) {
    s01 = f64x2.add(s01, f64x2.promote_low_f32x4(v128.load64_zero(p)));
    s23 = f64x2.add(s23, f64x2.promote_low_f32x4(v128.load64_zero(p, 8)));
    s45 = f64x2.add(s45, f64x2.promote_low_f32x4(v128.load64_zero(p, 16)));
    s67 = f64x2.add(s67, f64x2.promote_low_f32x4(v128.load64_zero(p, 24)));
  }
  let l0 = f64x2.extract_lane(s01, 0), l1 = f64x2.extract_lane(s01, 1);
  let l2 = f64x2.extract_lane(s23, 0), l3 = f64x2.extract_lane(s23, 1);
  let l4 = f64x2.extract_lane(s45, 0), l5 = f64x2.extract_lane(s45, 1);
  let l6 = f64x2.extract_lane(s67, 0), l7 = f64x2.extract_lane(s67, 1);
  const tail = count & 7;
  if (tail > 0) l0 += <f64>load<f32>(p);
  if (tail > 1) l1 += <f64>load<f32>(p, 4);
  if (tail > 2) l2 += <f64>load<f32>(p, 8);
  if (tail > 3) l3 += <f64>load<f32>(p, 12);
  if (tail > 4) l4 += <f64>load<f32>(p, 16);
  if (tail > 5) l5 += <f64>load<f32>(p, 20);
  if (tail > 6) l6 += <f64>load<f32>(p, 24);
  return l0 + l1 + (l2 + l3) + (l4 + l5 + (l6 + l7));
}

/** The larger (`isMax`) or smaller of two f32x4, per lane (NaN wins, +0 above -0). */
// @ts-ignore: decorator
@inline function pick4(isMax: bool, a: v128, b: v128): v128 {
  return isMax ? f32x4.max(a, b) : f32x4.min(a, b);
}

/** The larger (`isMax`) or smaller of two f32 (NaN wins, +0 above -0). */
// @ts-ignore: decorator
@inline function pick(isMax: bool, a: f32, b: f32): f32 {
  return isMax ? max(a, b) : min(a, b);
}

/**
 * The maximum (`isMax`) or minimum of `count ≥ 1` f32 at `ptr`: four f32x4 accumulators over
 * blocks of 16, then the lanes, then the tail. Inlined with a constant `isMax`, so each export
 * compiles to its own straight loop.
 */
// @ts-ignore: decorator
@inline function extremeBlock(isMax: bool, ptr: usize, count: i32): f32 {
  let m0 = v128.load(ptr);
  if (count < 4) m0 = f32x4.splat(load<f32>(ptr));
  let m1 = m0, m2 = m0, m3 = m0;
  const end16 = ptr + (<usize>(count & ~15) << 2);
  let p = ptr;
  for (; p < end16; p += 64) {
    m0 = pick4(isMax, m0, v128.load(p));
    m1 = pick4(isMax, m1, v128.load(p, 16));
    m2 = pick4(isMax, m2, v128.load(p, 32));
    m3 = pick4(isMax, m3, v128.load(p, 48));
  }
  m0 = pick4(isMax, pick4(isMax, m0, m1), pick4(isMax, m2, m3));
  let m = pick(isMax, pick(isMax, f32x4.extract_lane(m0, 0), f32x4.extract_lane(m0, 1)), pick(isMax, f32x4.extract_lane(m0, 2), f32x4.extract_lane(m0, 3)));
  const end = ptr + (<usize>count << 2);
  for (; p < end; p += 4) m = pick(isMax, m, load<f32>(p));
  return m;
}

/** The maximum of `count ≥ 1` f32 at `ptr` (NaN if any is NaN; +0 above -0). */
export function maxBlock(ptr: usize, count: i32): f32 {
  return extremeBlock(true, ptr, count);
}

/** The minimum of `count ≥ 1` f32 at `ptr` (NaN if any is NaN; -0 below +0). */
export function minBlock(ptr: usize, count: i32): f32 {
  return extremeBlock(false, ptr, count);
}
