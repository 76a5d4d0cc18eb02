/**
 * The shared tensors the cross-stream suites pass between streams: one per dtype and one per view
 * kind, each built *lazily* (still pending on the stream that makes it) with its exact values.
 *
 * @remarks
 * **Why lazily.** Sharing a tensor that is not computed yet is the path that must drain its owner
 * stream exactly once (docs/concepts.md#multistream); a source that were already materialised would skip it. The values
 * are exactly representable so every comparison is exact on both backends.
 *
 * @module
 */
import { type Tensor, tensor, tidy } from "@weft/tensor";

/** One kind of shared tensor: how to make it on the current stream and what a peer computes. */
export interface SharedSource {
  /** Suite name: `f32`, `i32`, `bool`, `sliced view`, `permuted view`. */
  readonly name: string;
  /** Records the tensor on the current stream (pending, not computed); the caller owns it. */
  readonly make: () => Tensor;
  /** Its values, row-major. */
  readonly values: readonly number[];
  /** What a peer stream computes from it (one borrowing op; the caller owns the result). */
  readonly peer: (t: Tensor) => Tensor;
  /** The values of `peer(make())`, row-major. */
  readonly peerValues: readonly number[];
}

const iota = (n: number, f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));

/** f32, i32, bool, a sliced view and a permuted view. */
export const SOURCES: readonly SharedSource[] = [
  {
    name: "f32",
    make: () => tidy(() => tensor([[1, 2, 3], [4, 5, 6]]).mul(2).add(1)),
    values: [3, 5, 7, 9, 11, 13],
    peer: (t) => t.add(1),
    peerValues: [4, 6, 8, 10, 12, 14],
  },
  {
    name: "i32",
    make: () => tidy(() => tensor(Int32Array.of(1, 2, 3, 4, 5, 6), { shape: [2, 3] }).mul(3).sub(1)),
    values: [2, 5, 8, 11, 14, 17],
    peer: (t) => t.add(1),
    peerValues: [3, 6, 9, 12, 15, 18],
  },
  {
    name: "bool",
    // Built from a bool upload: a compare that consumes an f32 input in place trips a WebGPU
    // codegen bug (see in-place-dtypes.test.ts), which this suite is not about.
    make: () => tidy(() => tensor([[true, true, true], [false, false, false]]).not()),
    values: [0, 0, 0, 1, 1, 1],
    peer: (t) => t.not(),
    peerValues: [1, 1, 1, 0, 0, 0],
  },
  {
    name: "sliced view",
    // [3, 4] of 2·i, rows 0..2 and columns 1..3 → [[2, 4], [10, 12]].
    make: () => tidy(() => tensor(iota(12, (i) => i), { shape: [3, 4] }).mul(2).slice([[0, 2], [1, 3]])),
    values: [2, 4, 10, 12],
    peer: (t) => t.mul(3),
    peerValues: [6, 12, 30, 36],
  },
  {
    name: "permuted view",
    // [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5]] transposed.
    make: () => tidy(() => tensor([[1, 2, 3], [4, 5, 6]]).add(0.5).permute([1, 0])),
    values: [1.5, 4.5, 2.5, 5.5, 3.5, 6.5],
    peer: (t) => t.add(1),
    peerValues: [2.5, 5.5, 3.5, 6.5, 4.5, 7.5],
  },
];

/** The values of `t` as a plain array (for exact `toEqual` comparisons). */
export async function valuesOf(t: Tensor): Promise<number[]> {
  return Array.from(await t.data());
}
