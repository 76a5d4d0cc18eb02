/**
 * `sort`, `argsort` and `topk`: a stable bitonic sorting network along one axis, on the device,
 * recorded as layout and elementwise ops the backends already run (no host round trip, no size
 * limit per workgroup).
 *
 * @remarks
 * **Order** (`docs/semantics.md`, "Issue 7's ops"): ascending puts NaN last (NumPy); descending
 * puts NaN first (PyTorch: NaN is the largest value); `-0` and `0` are equal; equal values keep
 * their input order in both directions (stable: the network compares `(class, value, index)`
 * triples, so every key is distinct and the network's instability cannot show). `bool` sorts as
 * `false < true`. `topk(k)` is the first `k` of the descending sort along the last axis, so its
 * NaN and tie rules are the same.
 * **Strategy.** The axis is moved last and padded to a power of two `P` with entries of class 2
 * (after every real element, NaN included). Each of the `log₂P·(log₂P+1)/2` stages views the
 * axis as `[P / 2j, 2, j]`, compares the two halves, and swaps them where the block's direction
 * asks (`where`), carrying the class, the value and the original index; the values out are the
 * carried values, the indices out the carried indices (`i32`).
 * **Cost.** `n log² n` element operations in `O(log² n)` passes of a few kernels each; a dedicated
 * per-row kernel is issue 7's remaining work.
 *
 * @module
 */
import { checkBoolean, checkInteger, checkOptions } from "@weft/environment";
import { ShapeError, ValueError, formatShape } from "../errors/tensor-errors.js";
import { isFloat } from "../dtype/dtype.js";
import { normalizeAxis } from "../shape/shape.js";
import { checkAxisArg, checkTensor } from "../tensor/arguments.js";
import { castUnchecked, checkOperands, output, register, release } from "../tensor/record.js";
import type { Tensor } from "../tensor/tensor.js";
import { tidy } from "../lifetime/lifetime.js";
import { binary, where } from "./elementwise.js";
import { concat, pad, permute, reshapeUnchecked, slice, type SliceSpec } from "./layout.js";

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

/** The three arrays the network carries, all `[..., P]`. */
interface Keys {
  readonly cls: Tensor;
  readonly value: Tensor;
  readonly index: Tensor;
}

/** `true` where the triple `a` sorts before the triple `b` (strictly). */
function before(a: Keys, b: Keys, descending: boolean): Tensor {
  const clsLess = binary("lt", a.cls, b.cls);
  const clsEq = binary("eq", a.cls, b.cls);
  const vLess = binary(descending ? "gt" : "lt", a.value, b.value);
  const vMore = binary(descending ? "lt" : "gt", a.value, b.value);
  const iLess = binary("lt", a.index, b.index);
  const tie = binary("and", vMore.not(), iLess);
  return binary("or", clsLess, binary("and", clsEq, binary("or", vLess, tie)));
}

function half(t: Tensor, view: readonly number[], which: 0 | 1): Tensor {
  const specs: SliceSpec[] = view.map(() => null);
  specs[view.length - 2] = which;
  return slice(reshapeUnchecked(t, view), specs);
}

/** One compare-and-swap stage of the network: partners `j` apart, blocks of `k` (module doc). */
function stage(keys: Keys, lead: readonly number[], p: number, j: number, k: number, descending: boolean, x: Tensor): Keys {
  const blocks = p / (2 * j);
  const view = [...lead, blocks, 2, j];
  // Block `a` (of size 2j) runs in the requested order when floor(a·2j / k) is even, reversed otherwise.
  const a = register(x.device, { kind: "arange", start: 0, step: 1, out: output(x.device, [blocks], "i32") });
  const flipped = reshapeUnchecked(binary("eq", binary("mod", a.floorDiv(k / (2 * j)), 2), 1), [blocks, 1]);
  const left: Keys = { cls: half(keys.cls, view, 0), value: half(keys.value, view, 0), index: half(keys.index, view, 0) };
  const right: Keys = { cls: half(keys.cls, view, 1), value: half(keys.value, view, 1), index: half(keys.index, view, 1) };
  // Swap where the right element must come first: in a block in order when right < left, in a
  // reversed block when left < right.
  const swap = where(flipped, before(left, right, descending), before(right, left, descending));
  const merge = (field: keyof Keys): Tensor => {
    const l = left[field];
    const r = right[field];
    const first = reshapeUnchecked(where(swap, r, l), [...lead, blocks, 1, j]);
    const second = reshapeUnchecked(where(swap, l, r), [...lead, blocks, 1, j]);
    return reshapeUnchecked(concat([first, second], -2), [...lead, p]);
  };
  return { cls: merge("cls"), value: merge("value"), index: merge("index") };
}

/** Sorts along the last axis of `x` (module doc); the caller moved the axis last. */
function network(x: Tensor, descending: boolean): SortResult {
  const rank = x.rank;
  const n = x.shape[rank - 1] ?? 0;
  const lead = x.shape.slice(0, -1);
  let p = 1;
  while (p < n) p *= 2;
  const extra = p - n;
  const lastPad = (): (readonly [number, number])[] => x.shape.map((_, d) => (d === rank - 1 ? ([0, extra] as const) : ([0, 0] as const)));
  const value0 = x.dtype === "bool" ? castUnchecked(x, "i32") : x;
  const nanClass = descending ? 0 : 1;
  const realClass = descending ? 1 : 0;
  // Class: 0/1 for real values and NaN (in the direction's order), 2 for the padding.
  const cls0 = isFloat(value0.dtype) ? where(binary("ne", value0, value0), nanClass, realClass) : register(x.device, { kind: "full", value: realClass, out: output(x.device, x.shape, "i32") });
  const line = register(x.device, { kind: "arange", start: 0, step: 1, out: output(x.device, [p], "i32") });
  let keys: Keys = {
    cls: extra === 0 ? cls0 : pad(cls0, lastPad(), 2),
    value: extra === 0 ? value0.clone() : pad(value0, lastPad(), 0),
    index: line.expand([...lead, p]),
  };
  for (let k = 2; k <= p; k *= 2) {
    for (let j = k / 2; j >= 1; j /= 2) {
      const previous = keys;
      // One stage: its temporaries die with its tidy, the previous stage's keys right after, so
      // at most two stages' keys are ever live.
      keys = tidy(() => stage(previous, lead, p, j, k, descending, x));
      release(previous.cls, previous.value, previous.index);
    }
  }
  const take: SliceSpec[] = x.shape.map(() => null);
  take[rank - 1] = [0, n, 1];
  const values = slice(keys.value, take);
  return {
    values: x.dtype === "bool" ? castUnchecked(values, "bool") : values,
    indices: slice(keys.index, take),
  };
}

function sortAlong(op: string, x: Tensor, axisArg: number, options: SortOptions): SortResult {
  checkTensor(op, "the input", x);
  checkOperands(op, [x]);
  checkAxisArg(op, "axis", axisArg);
  const opts = checkOptions(op, options, ["descending"]);
  const descending = checkBoolean(op, "options.descending", opts.descending) ?? false;
  if (x.rank === 0) {
    throw new ShapeError(op, [x.shape], `cannot sort a scalar (shape []); reshape it to [1] first`);
  }
  const axis = normalizeAxis(op, axisArg, x.shape);
  return runSort(x, axis, descending);
}

function runSort(x: Tensor, axis: number, descending: boolean): SortResult {
  const last = x.rank - 1;
  const order = x.shape.map((_, d) => (d === axis ? last : d === last ? axis : d));
  return tidy(() => {
    if ((x.shape[axis] ?? 0) <= 1) {
      return { values: x.clone(), indices: register(x.device, { kind: "full", value: 0, out: output(x.device, x.shape, "i32") }) };
    }
    const moved = axis === last ? x : permute(x, order);
    const sorted = network(moved, descending);
    if (axis === last) return sorted;
    return { values: permute(sorted.values, order), indices: permute(sorted.indices, order) };
  });
}

/**
 * The values sorted along `axis` (default the last), stable (module doc).
 * @throws AxisError for an axis out of range; ShapeError for a scalar; ValueError for bad options.
 */
export function sort(x: Tensor, axis = -1, options: SortOptions = {}): Tensor {
  const { values, indices } = sortAlong("sort", x, axis, options);
  release(indices);
  return values;
}

/** The `i32` positions that sort `x` along `axis` (default the last), stable (module doc). */
export function argsort(x: Tensor, axis = -1, options: SortOptions = {}): Tensor {
  const { values, indices } = sortAlong("argsort", x, axis, options);
  release(values);
  return indices;
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
  return tidy(() => {
    const sorted = runSort(x, x.rank - 1, largest);
    const take: SliceSpec[] = x.shape.map(() => null);
    take[x.rank - 1] = [0, k, 1];
    return { values: slice(sorted.values, take), indices: slice(sorted.indices, take) };
  });
}
