/**
 * `scatter` and `scatterAdd` along one axis (PyTorch `scatter`/`scatter_add`, NumPy
 * `put_along_axis`), on the device: the indices are checked and normalised by a `gather` (so an
 * out-of-range index is the same `IndexOutOfRangeError`, delivered at the read of the output, as
 * for `gather`), compared with an `arange` into a match mask, and the mask reduces the sources.
 *
 * @remarks
 * **Rules** (`docs/semantics.md`, "Issue 7's ops"): `out = x` except along `axis`, where
 * `out[..., indices[..., j, ...], ...]` receives `src[..., j, ...]`. `indices` has the rank of `x`
 * and no dim larger than `x`'s outside `axis`; `src` has `indices`' shape (or is a number).
 * Negative indices count from the end (as `gather`).
 * - `scatter` with duplicate indices: the **last** source along the axis wins (the largest `j`),
 *   on every backend — deterministic, as NumPy's `put_along_axis` behaves in practice (PyTorch
 *   leaves it undefined).
 * - `scatterAdd`: every source is added; the sum over duplicates is a reduction in a fixed order
 *   on each backend (deterministic, within the reduction tolerance across backends for floats,
 *   exact for integers).
 * **Cost.** The match mask has `n · m` entries per slice (`n` = `x`'s size along the axis, `m` =
 *   `indices`'); a kernel that writes each source directly (atomics for integers) is issue 7's
 *   remaining work.
 *
 * @module
 */
import { checkOperandValue, checkTensor } from "../tensor/arguments.js";
import { DTypeError, ShapeError, ValueError, formatShape } from "../errors/tensor-errors.js";
import { fitsDType, integerRange, isFloat } from "../dtype/dtype.js";
import { normalizeAxis } from "../shape/shape.js";
import { checkAxisArg } from "../tensor/arguments.js";
import { castUnchecked, checkOperands, output, register } from "../tensor/record.js";
import { Tensor } from "../tensor/tensor.js";
import { tidy } from "../lifetime/lifetime.js";
import { binary, where } from "./elementwise.js";
import { gather, pad, reshapeUnchecked } from "./layout.js";
import { reduce } from "./reduce.js";

function checkScatter(op: "scatter" | "scatterAdd", x: Tensor, indices: Tensor, src: Tensor | number, axisArg: number): number {
  checkTensor(op, "the input", x);
  checkTensor(op, "the indices", indices);
  checkOperandValue(op, "the source", src);
  if (typeof src === "boolean") throw new ValueError(op, "pass the source as a Tensor or a number, not a boolean");
  if (checkAxisArg(op, "axis", axisArg) === undefined) throw new ValueError(op, "pass the axis to scatter along");
  checkOperands(op, src instanceof Tensor ? [x, indices, src] : [x, indices]);
  if (indices.dtype !== "i32" && indices.dtype !== "u32") {
    throw new DTypeError(op, `indices must be i32 or u32, got ${indices.dtype}; cast them with \`indices.cast("i32")\``);
  }
  const axis = normalizeAxis(op, axisArg, x.shape);
  if (indices.rank !== x.rank) {
    throw new ShapeError(op, [x.shape, indices.shape], `indices ${formatShape(indices.shape)} must have the rank of the input ${formatShape(x.shape)}; reshape them`);
  }
  indices.shape.forEach((d, i) => {
    if (i !== axis && d > (x.shape[i] ?? 0)) {
      throw new ShapeError(op, [x.shape, indices.shape], `indices ${formatShape(indices.shape)} exceed the input ${formatShape(x.shape)} in dimension ${i} (${d} > ${String(x.shape[i])}); slice them`);
    }
  });
  if (src instanceof Tensor) {
    if (src.rank !== indices.rank || src.shape.some((d, i) => d !== indices.shape[i])) {
      throw new ShapeError(op, [x.shape, indices.shape, src.shape], `the source ${formatShape(src.shape)} must have the indices' shape ${formatShape(indices.shape)}; slice or expand it`);
    }
    if (src.dtype !== x.dtype) throw new DTypeError(op, `the source is ${src.dtype} but the input is ${x.dtype}; cast the source with \`src.cast("${x.dtype}")\``);
  } else if (!fitsDType(src, x.dtype)) {
    throw new DTypeError(op, `the source ${src} is not a value of ${x.dtype}; pass a value of ${x.dtype} or cast the input first`);
  }
  if (x.dtype === "bool" && op === "scatterAdd") throw new DTypeError(op, `bool has no addition; cast first, e.g. \`x.cast("i32")\``);
  return axis;
}

/** The match mask `[..., n, m, ...]` (`n` output positions, `m` sources, at `axis`, `axis + 1`) and the source as `[..., 1, m, ...]`. */
function matches(x: Tensor, indices: Tensor, src: Tensor | number, axis: number): { mask: Tensor; source: Tensor } {
  const n = x.shape[axis] ?? 0;
  // Normalise through gather: negative indices wrap, out-of-range ones fail the output (docs/semantics.md).
  const line = register(x.device, { kind: "arange", start: 0, step: 1, out: output(x.device, [n], "i32") });
  const positions = reshapeUnchecked(line, x.shape.map((_, d) => (d === axis ? n : 1))).expand(indices.shape.map((d, i) => (i === axis ? n : d)));
  const idx = gather(positions, indices.dtype === "i32" ? indices : castUnchecked(indices, "i32"), axis);
  const wide = (t: Tensor): Tensor => reshapeUnchecked(t, [...t.shape.slice(0, axis), 1, ...t.shape.slice(axis)]);
  const targets = reshapeUnchecked(line, [...new Array<number>(axis).fill(1), n, 1, ...new Array<number>(x.rank - axis - 1).fill(1)]);
  const mask = binary("eq", wide(idx), targets);
  const source = src instanceof Tensor ? wide(src) : register(x.device, { kind: "full", value: src, out: output(x.device, [], x.dtype) });
  return { mask, source };
}

/** Pads `t` (shaped like the indices outside `axis`) up to `x`'s extent with `value`. */
function toExtent(t: Tensor, x: Tensor, axis: number, value: number): Tensor {
  const padding = t.shape.map((d, i) => (i === axis ? ([0, 0] as const) : ([0, (x.shape[i] ?? 0) - d] as const)));
  return padding.every(([, a]) => a === 0) ? t.clone() : pad(t, padding, value);
}

/**
 * `x` with `src` written at `indices` along `axis` (module doc; duplicates: the last source wins).
 * @throws ShapeError / DTypeError / ValueError for mismatched shapes, dtypes or arguments; an
 *   out-of-range index is an `IndexOutOfRangeError` at the read of the output.
 */
export function scatter(x: Tensor, indices: Tensor, src: Tensor | number, axis: number): Tensor {
  const ax = checkScatter("scatter", x, indices, src, axis);
  if (indices.size === 0) return x.clone();
  return tidy(() => {
    const { mask, source } = matches(x, indices, src, ax);
    const m = indices.shape[ax] ?? 0;
    const j = reshapeUnchecked(register(x.device, { kind: "arange", start: 0, step: 1, out: output(x.device, [m], "i32") }), [...new Array<number>(ax + 1).fill(1), m, ...new Array<number>(x.rank - ax - 1).fill(1)]);
    // The last matching source per output position (-1: none), then its value picked by a `max`
    // over a mask with one entry per position (not a second gather: its indices would derive
    // from the first one's pending index check).
    const last = reduce("max", where(mask, j, -1), ax + 1, { keepDims: true });
    const hit = toExtent(reshapeUnchecked(binary("ge", last, 0), indices.shape.map((d, i) => (i === ax ? x.shape[ax] ?? 0 : d))), x, ax, 0);
    const numeric = source.dtype === "bool" ? castUnchecked(source, "i32") : source;
    const lowest = isFloat(numeric.dtype) ? -Infinity : (integerRange(numeric.dtype)?.[0] ?? 0);
    const picked = reduce("max", where(binary("eq", j, last), numeric, lowest), ax + 1);
    const typed = source.dtype === "bool" ? castUnchecked(picked, "bool") : picked;
    const values = toExtent(typed, x, ax, 0);
    return where(hit, values, x);
  });
}

/**
 * `x` plus every `src` element added at its index along `axis` (module doc: duplicates add up).
 * @throws as {@link scatter}; DTypeError for bool.
 */
export function scatterAdd(x: Tensor, indices: Tensor, src: Tensor | number, axis: number): Tensor {
  const ax = checkScatter("scatterAdd", x, indices, src, axis);
  if (indices.size === 0) return x.clone();
  return tidy(() => {
    const { mask, source } = matches(x, indices, src, ax);
    const contributions = reduce("sum", where(mask, source, 0), ax + 1);
    return binary("add", x, toExtent(contributions.cast(x.dtype), x, ax, 0));
  });
}
