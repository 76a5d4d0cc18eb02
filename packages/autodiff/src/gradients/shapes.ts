/**
 * Shape bookkeeping the rules share: undoing broadcasting, reductions, slices and gathers on a
 * cotangent. Everything here records Tensor ops (so it fuses) and returns a new tensor. Called
 * from rules, which run inside a `tidy`: temporaries are left to it.
 *
 * @module
 */
import { type SliceRange } from "@weft/fusion";
import { type Tensor, arange, zeros } from "@weft/tensor";

/** Whether two shapes are equal. */
export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/**
 * The cotangent of a broadcast input: `g` summed over the axes broadcasting added or grew, back
 * to `shape` (NumPy broadcasting: leading axes added, size-1 axes grown).
 */
export function sumTo(g: Tensor, shape: readonly number[]): Tensor {
  if (sameShape(g.shape, shape)) return g.clone();
  const lead = g.rank - shape.length;
  const axes: number[] = [];
  for (let i = 0; i < g.rank; i++) {
    if (i < lead || (shape[i - lead] === 1 && g.shape[i] !== 1)) axes.push(i);
  }
  if (axes.length === 0) return g.reshape(shape);
  const summed = g.sum(axes, { keepDims: true });
  try {
    return summed.reshape(shape);
  } finally {
    summed.dispose();
  }
}

/** `shape` with the reduced `axes` kept as size 1. */
export function keptShape(shape: readonly number[], axes: readonly number[]): number[] {
  return shape.map((d, i) => (axes.includes(i) ? 1 : d));
}

/**
 * A reduction's cotangent `g` (or output) brought back to the input's rank, reduced axes as size
 * 1, ready to broadcast against the input.
 */
export function unreduce(g: Tensor, inputShape: readonly number[], axes: readonly number[]): Tensor {
  return g.reshape(keptShape(inputShape, axes));
}

/**
 * The cotangent of a strided slice: `g` scattered into zeros of the input's shape, one dimension
 * at a time — a step `s > 1` interleaves `s - 1` zeros after each element (append an axis, pad it,
 * merge it back, drop the trailing zeros), then the result is padded out to the input's size.
 */
export function unslice(g: Tensor, inputShape: readonly number[], ranges: readonly SliceRange[]): Tensor {
  if (g.size === 0) return zeros(inputShape, { dtype: g.dtype, device: g.device });
  let current = g;
  ranges.forEach((range, d) => {
    const size = inputShape[d] ?? 0;
    const n = current.shape[d] ?? 0;
    if (range.step > 1 && n > 1) {
      const widened = current.unsqueeze(d + 1);
      const padded = widened.pad(widened.shape.map((_, i) => (i === d + 1 ? ([0, range.step - 1] as const) : ([0, 0] as const))));
      const merged = padded.reshape(current.shape.map((s, i) => (i === d ? s * range.step : s)));
      current = merged.slice(merged.shape.map((_, i) => (i === d ? ([0, (n - 1) * range.step + 1] as const) : null)));
    }
    const before = range.start;
    const after = size - range.start - (current.shape[d] ?? 0);
    if (before !== 0 || after !== 0) {
      current = current.pad(current.shape.map((_, i) => (i === d ? ([before, after] as const) : ([0, 0] as const))));
    }
  });
  return current === g ? g.clone() : current;
}

/**
 * The cotangent of `gather(input, indices, axis)` (same-rank `torch.gather`): for every index
 * position, its cotangent added at the input position it read. Written as a one-hot contraction
 * — `sum over the gathered axis of g · (indices == j)` for each `j` of the input's axis — so it
 * needs no scatter op: the comparison and the product are elementwise and fuse into the sum.
 * Costs `|indices| × inputShape[axis]` operations; a scatter-add op, once the API has one, makes it
 * `|indices|`.
 */
export function ungather(g: Tensor, indices: Tensor, inputShape: readonly number[], axis: number): Tensor {
  const n = inputShape[axis] ?? 0;
  const rank = inputShape.length;
  const positions = arange(n, undefined, 1, { dtype: "i32", device: g.device });
  const idx = indices.unsqueeze(-1);
  const hits = idx.eq(positions);
  const gw = g.unsqueeze(-1);
  const picked = hits.where(gw, 0);
  const summed = picked.sum(axis);
  const perm = [...Array.from({ length: axis }, (_, i) => i), rank - 1, ...Array.from({ length: rank - 1 - axis }, (_, i) => axis + i)];
  const moved = summed.permute(perm);
  const padding = moved.shape.map((d, i) => [0, (inputShape[i] ?? 0) - d] as const);
  return padding.every(([, a]) => a === 0) ? moved : moved.pad(padding);
}
