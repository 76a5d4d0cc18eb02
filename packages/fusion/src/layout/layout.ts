/**
 * Strided layouts: how a logical shape maps onto elements of a flat buffer. Every backend view
 * (reshape of contiguous data, permute, expand, slice with steps) is a new layout over the same
 * memory, never a copy. The one home of this arithmetic: the CPU and WebGPU backends both build
 * their handles' views with it.
 *
 * @module
 */

/** A strided view: element `[i0, i1, …]` lives at `offset + Σ ik * strides[k]` (in elements). */
export interface Layout {
  readonly shape: readonly number[];
  /** Per-dim steps in elements; `0` for a broadcast (expanded) dim. */
  readonly strides: readonly number[];
  /** Position of element `[0, …, 0]`, in elements from the start of the memory. */
  readonly offset: number;
}

/** Number of elements of `shape` (1 for rank 0). */
export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Row-major strides of a dense tensor of `shape` (the last dim has stride 1). */
export function contiguousStrides(shape: readonly number[]): number[] {
  const strides = zeros(shape.length);
  let step = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = step;
    step *= shape[d] ?? 1;
  }
  return strides;
}

/**
 * Whether the layout visits its elements densely in row-major order from `offset` (so element
 * `i` is at `offset + i`). Strides of size-1 dims do not matter; an empty tensor is contiguous.
 */
export function isContiguous(layout: Pick<Layout, "shape" | "strides">): boolean {
  let step = 1;
  for (let d = layout.shape.length - 1; d >= 0; d--) {
    const size = layout.shape[d] ?? 1;
    if (size === 0) return true;
    if (size !== 1 && layout.strides[d] !== step) return false;
    step *= size;
  }
  return true;
}

/**
 * The shape two shapes broadcast to (NumPy rules, right-aligned), or `undefined` when some dim
 * pair is neither equal nor 1. `one` is the value standing for a size-1 dim: `1` for real shapes,
 * `0` for the relative shapes fusers see (where relative shape id 0 always means a dim of 1).
 */
export function broadcastShapes(a: readonly number[], b: readonly number[], one = 1): number[] | undefined {
  const rank = Math.max(a.length, b.length);
  const out = zeros(rank);
  for (let i = 0; i < rank; i++) {
    const da = a[a.length - rank + i] ?? one;
    const db = b[b.length - rank + i] ?? one;
    if (da === db || db === one) out[i] = da;
    else if (da === one) out[i] = db;
    else return undefined;
  }
  return out;
}

/**
 * Whether `shape` broadcasts into `target` without growing it (`one` as in {@link broadcastShapes}:
 * `0` for the relative shapes fusers see).
 */
export function broadcastsInto(shape: readonly number[], target: readonly number[], one = 1): boolean {
  if (shape.length > target.length) return false;
  const lead = target.length - shape.length;
  for (let d = 0; d < shape.length; d++) {
    const s = shape[d];
    if (s !== target[d + lead] && s !== one) return false;
  }
  return true;
}

/** Element-wise equality of two shapes. */
export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/**
 * The strides that read `layout` as if it had shape `target` (right-aligned broadcasting): a
 * missing or size-1 dim that grows gets stride 0. The caller guarantees the shapes broadcast.
 */
export function broadcastStrides(layout: Layout, target: readonly number[]): number[] {
  const rank = target.length;
  const shift = rank - layout.shape.length;
  const strides = zeros(rank);
  for (let d = 0; d < rank; d++) {
    const src = d - shift;
    const size = src >= 0 ? (layout.shape[src] ?? 1) : 1;
    strides[d] = src >= 0 && size === (target[d] ?? 1) && size !== 1 ? (layout.strides[src] ?? 0) : 0;
  }
  return strides;
}

/** The permuted view: `out.shape[i] = shape[axes[i]]`. */
export function permuteLayout(layout: Layout, axes: readonly number[]): Layout {
  return {
    shape: axes.map((a) => layout.shape[a] ?? 1),
    strides: axes.map((a) => layout.strides[a] ?? 0),
    offset: layout.offset,
  };
}

/** The broadcast view with shape `target` (size-1 and missing dims get stride 0). */
export function expandLayout(layout: Layout, target: readonly number[]): Layout {
  return { shape: [...target], strides: broadcastStrides(layout, target), offset: layout.offset };
}

/** The sliced view: per dim, elements `start, start + step, …` while `< end` (and inside the dim). */
export function sliceLayout(
  layout: Layout,
  ranges: readonly { readonly start: number; readonly end: number; readonly step: number }[],
): Layout {
  let offset = layout.offset;
  const shape: number[] = [];
  const strides: number[] = [];
  layout.shape.forEach((size, d) => {
    const r = ranges[d] ?? { start: 0, end: size, step: 1 };
    const stride = layout.strides[d] ?? 0;
    const len = Math.max(0, Math.ceil((Math.min(r.end, size) - r.start) / r.step));
    if (len > 0) offset += r.start * stride;
    shape.push(len);
    strides.push(stride * r.step);
  });
  return { shape, strides, offset };
}

/** The dense layout of `shape` starting at element `offset`. */
export function denseLayout(shape: readonly number[], offset = 0): Layout {
  return { shape: [...shape], strides: contiguousStrides(shape), offset };
}

/**
 * Calls `visit(i, positions)` for every element `i` of `shape` in row-major order, where
 * `positions[k]` is element `i`'s position under `strides[k]`/`offsets[k]`. Positions are updated
 * incrementally (an odometer), so each step costs O(1) amortised per operand.
 *
 * **Invariant.** `positions` is the same array on every call; `visit` must not keep it.
 */
export function forEachPosition(
  shape: readonly number[],
  strides: readonly (readonly number[])[],
  offsets: readonly number[],
  visit: (i: number, positions: Float64Array) => void,
): void {
  const rank = shape.length;
  let total = 1;
  for (const d of shape) total *= d;
  if (total === 0) return;
  const k = strides.length;
  const positions = new Float64Array(k);
  for (let j = 0; j < k; j++) positions[j] = offsets[j] ?? 0;
  const index = zeros(rank);
  for (let i = 0; i < total; i++) {
    visit(i, positions);
    // advance the odometer
    for (let d = rank - 1; d >= 0; d--) {
      const next = (index[d] ?? 0) + 1;
      const size = shape[d] ?? 1;
      if (next < size) {
        index[d] = next;
        for (let j = 0; j < k; j++) positions[j] = (positions[j] ?? 0) + (strides[j]?.[d] ?? 0);
        break;
      }
      index[d] = 0;
      for (let j = 0; j < k; j++) positions[j] = (positions[j] ?? 0) - (size - 1) * (strides[j]?.[d] ?? 0);
    }
  }
}

/**
 * `n` zeros in a fresh array, for the per-op shapes and strides above: not `new Array(n)`, whose
 * call site V8 tracks and pretenures like a literal's (docs/performance.md#allocation-sites);
 * `Array.of` carries no site. `n` is a rank: a few pushes.
 */
function zeros(n: number): number[] {
  const out = Array.of<number>();
  for (let i = 0; i < n; i++) out.push(0);
  return out;
}
