/**
 * `sort`, `argsort` and `topk`: one `sort` operation along the axis, run by each backend's
 * dedicated kernel (the CPU's stable radix sort, WebGPU's per-row bitonic sort in workgroup
 * memory with global merge passes for longer rows), on the device, no host round trip.
 *
 * @remarks
 * **Order** (`docs/semantics.md`, "Issue 7's ops"): ascending puts NaN last (NumPy); descending
 * puts NaN first (PyTorch: NaN is the largest value); `-0` and `0` are equal; equal values keep
 * their input order in both directions (stable). `bool` sorts as `false < true`. `topk(k)` is the
 * first `k` of the descending sort along the last axis, so its NaN and tie rules are the same.
 * **Recording.** The values and the positions are two `sort` operations (`output: "values"` /
 * `"indices"`) that keep the first `out.shape[axis]` entries of the order; `topk` keeps `k`.
 * Sorting is exact, so every backend gives the same bits.
 *
 * @module
 */
import { checkBoolean, checkInteger, checkOptions } from "@weft/environment";
import { SortOpIr, type SortOutput } from "@weft/fusion";
import { ShapeError, ValueError, formatShape } from "../errors/tensor-errors.js";
import { normalizeAxis } from "../shape/shape.js";
import { checkAxisArg, checkTensor } from "../tensor/arguments.js";
import { checkOperands, output, register, use } from "../tensor/record.js";
import type { Tensor } from "../tensor/tensor.js";

/** Options of {@link sort} and {@link argsort}. */
export interface SortOptions {
  /** Largest first (NaN first); default `false` (smallest first, NaN last). */
  readonly descending?: boolean;
}

/** The sorted values and where each came from. */
export interface SortResult {
  /** The values, in order. */
  readonly values: Tensor;
  /** Their positions along the axis in the input (`i32`). */
  readonly indices: Tensor;
}

/** One `sort` operation: the first `kept` entries of the order along `axis`, values or positions. */
function record(op: string, x: Tensor, axis: number, descending: boolean, which: SortOutput, kept: number): Tensor {
  const shape = x.shape.map((d, i) => (i === axis ? kept : d));
  return register(x.device, new SortOpIr(use(op, x), axis, descending, which, output(x.device, shape, which === "indices" ? "i32" : x.dtype)));
}

function checkSort(op: string, x: Tensor, axisArg: number, options: SortOptions): { axis: number; descending: boolean } {
  checkTensor(op, "the input", x);
  checkOperands(op, [x]);
  checkAxisArg(op, "axis", axisArg);
  const opts = checkOptions(op, options, ["descending"]);
  const descending = checkBoolean(op, "options.descending", opts.descending) ?? false;
  if (x.rank === 0) {
    throw new ShapeError(op, [x.shape], `cannot sort a scalar (shape []); reshape it to [1] first`);
  }
  return { axis: normalizeAxis(op, axisArg, x.shape), descending };
}

/**
 * The values sorted along `axis` (default the last), stable (module doc).
 * @throws AxisError for an axis out of range; ShapeError for a scalar; ValueError for bad options.
 */
export function sort(x: Tensor, axis = -1, options: SortOptions = {}): Tensor {
  const { axis: ax, descending } = checkSort("sort", x, axis, options);
  return record("sort", x, ax, descending, "values", x.shape[ax] ?? 0);
}

/** The `i32` positions that sort `x` along `axis` (default the last), stable (module doc). */
export function argsort(x: Tensor, axis = -1, options: SortOptions = {}): Tensor {
  const { axis: ax, descending } = checkSort("argsort", x, axis, options);
  return record("argsort", x, ax, descending, "indices", x.shape[ax] ?? 0);
}

/** Options of {@link topk}. */
export interface TopKOptions {
  /** The `k` largest (default `true`) or the `k` smallest. */
  readonly largest?: boolean;
}

/**
 * The `k` largest values along the last axis, largest first, with their `i32` positions
 * (PyTorch `topk`): NaN counts as the largest, ties keep the input order.
 * @throws ValueError when `k` is not an integer in `[0, n]`; ShapeError for a scalar.
 */
export function topk(x: Tensor, k: number, options: TopKOptions = {}): SortResult {
  checkTensor("topk", "the input", x);
  checkOperands("topk", [x]);
  const opts = checkOptions("topk", options, ["largest"]);
  const largest = checkBoolean("topk", "options.largest", opts.largest) ?? true;
  if (x.rank === 0) throw new ShapeError("topk", [x.shape], "cannot take the top k of a scalar (shape []); reshape it to [1] first");
  const n = x.shape[x.rank - 1] ?? 0;
  checkInteger("topk", "k", k, 0);
  if (k > n) throw new ValueError("topk", `k = ${k} exceeds the last axis' size ${n} in ${formatShape(x.shape)}; pass k ≤ ${n}`);
  const axis = x.rank - 1;
  return { values: record("topk", x, axis, largest, "values", k), indices: record("topk", x, axis, largest, "indices", k) };
}
