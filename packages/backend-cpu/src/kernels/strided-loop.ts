/**
 * How a kernel walks several strided operands over one shape without an index array per element:
 * the dims are collapsed first (size-1 dims dropped, adjacent dims merged wherever every operand
 * steps through them as one), then walked as nested loops whose innermost one is a plain counter.
 *
 * @module
 */

/**
 * The collapsed iteration of one shape over several operands.
 *
 * **Invariants.** `rank ≥ 1`; `dims` holds no size-1 dim unless the whole shape has one element
 * (then `dims = [1]`); `strides[k * rank + d]` is operand `k`'s step (in elements) along collapsed
 * dim `d` (outer to inner). Element `[i0, …]` of operand `k` lives at
 * `offset[k] + Σ id · strides[k·rank + d]`, in the same row-major order as the original shape.
 */
export interface LoopPlan {
  readonly rank: number;
  /** Collapsed sizes, outer to inner. */
  readonly dims: Int32Array;
  /** Operand-major steps: `strides[k * rank + d]`. */
  readonly strides: Int32Array;
  /** Elements visited (the product of `dims`; 0 for an empty shape). */
  readonly total: number;
}

/**
 * Scratch for {@link planLoop}: collapsed sizes and operand-major steps (`steps[k * shape.length +
 * d]`) before they are copied into the plan's own arrays. Grows to the largest `operands × rank`
 * planned (a few dozen numbers); `planLoop` is synchronous and not reentrant, so one suffices.
 */
let scratchSizes = new Float64Array(8);
let scratchSteps = new Float64Array(64);

/**
 * The collapsed loop over `shape` for operands with the given per-dim `strides` (each already
 * broadcast to `shape`: stride 0 where an operand repeats). Allocates only the plan's two arrays:
 * it runs once per launch.
 */
export function planLoop(shape: readonly number[], strides: readonly (readonly number[])[]): LoopPlan {
  const operands = strides.length;
  const rankIn = shape.length;
  if (scratchSizes.length < rankIn) scratchSizes = new Float64Array(rankIn);
  if (scratchSteps.length < operands * rankIn) scratchSteps = new Float64Array(operands * rankIn);
  const sizes = scratchSizes;
  const steps = scratchSteps; // operand k's step along collapsed dim r at k * rankIn + r
  let rank = 0;
  let total = 1;
  for (let d = 0; d < rankIn; d++) {
    const size = shape[d] ?? 1;
    total *= size;
    if (size === 1) continue;
    const last = rank - 1;
    // Merge into the previous (outer) dim when every operand steps through both as one run.
    let merge = last >= 0;
    for (let k = 0; k < operands && merge; k++) {
      const st = strides[k]?.[d] ?? 0;
      if (steps[k * rankIn + last] !== st * size) merge = false;
    }
    if (merge) {
      sizes[last] = (sizes[last] as number) * size;
      for (let k = 0; k < operands; k++) steps[k * rankIn + last] = strides[k]?.[d] ?? 0;
    } else {
      sizes[rank] = size;
      for (let k = 0; k < operands; k++) steps[k * rankIn + rank] = strides[k]?.[d] ?? 0;
      rank++;
    }
  }
  if (total === 0) return { rank: 1, dims: Int32Array.of(0), strides: new Int32Array(operands), total: 0 };
  if (rank === 0) return { rank: 1, dims: Int32Array.of(1), strides: new Int32Array(operands), total: 1 };
  const dims = new Int32Array(rank);
  for (let r = 0; r < rank; r++) dims[r] = sizes[r] as number;
  const flat = new Int32Array(operands * rank);
  for (let k = 0; k < operands; k++) for (let r = 0; r < rank; r++) flat[k * rank + r] = steps[k * rankIn + r] as number;
  return { rank, dims, strides: flat, total };
}

/** How an operand steps along the innermost collapsed dim: the class generated code specializes on. */
export type InnerStep = "unit" | "zero" | "strided";

/** Operand `k`'s {@link InnerStep} in `plan`. */
export function innerStep(plan: LoopPlan, k: number): InnerStep {
  const s = plan.strides[k * plan.rank + plan.rank - 1];
  return s === 1 ? "unit" : s === 0 ? "zero" : "strided";
}

/**
 * Calls `visit(start, count)` for each innermost run of `plan` in row-major order, where
 * `start[k]` is operand `k`'s first position in the run (it then steps by its innermost stride).
 * For the kernels that are not generated (reductions' outer loops, layout copies, the
 * interpreter); `start` is reused between calls.
 */
export function forEachRun(plan: LoopPlan, offsets: readonly number[], visit: (start: Float64Array, count: number) => void): void {
  if (plan.total === 0) return;
  const { rank, dims, strides } = plan;
  const operands = offsets.length;
  const start = new Float64Array(operands);
  for (let k = 0; k < operands; k++) start[k] = offsets[k] ?? 0;
  const inner = dims[rank - 1] as number;
  if (rank === 1) {
    visit(start, inner);
    return;
  }
  const index = new Int32Array(rank - 1);
  for (;;) {
    visit(start, inner);
    // Advance the odometer over the outer dims.
    let d = rank - 2;
    for (; d >= 0; d--) {
      const next = (index[d] as number) + 1;
      if (next < (dims[d] as number)) {
        index[d] = next;
        for (let k = 0; k < operands; k++) start[k] = (start[k] as number) + (strides[k * rank + d] as number);
        break;
      }
      index[d] = 0;
      for (let k = 0; k < operands; k++) start[k] = (start[k] as number) - ((dims[d] as number) - 1) * (strides[k * rank + d] as number);
    }
    if (d < 0) return;
  }
}
