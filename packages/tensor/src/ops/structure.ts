/**
 * Ops that build a tensor's structure from index arithmetic: `tril`/`triu` (a mask from two
 * `arange`s, then `where`: elementwise, so it fuses), `tile` and `repeat` (reshape + expand, or an
 * index-select `gather` for per-element repeat counts), and `oneHot` (an `arange` compared with the
 * indices). Every op here records existing IR only, so it runs the same on every backend.
 *
 * @remarks
 * **Edge rules** (`docs/semantics.md`, "Structure ops"): `tril`/`triu` keep NaN in the kept
 * triangle and write 0 (`false` for bool) elsewhere; `oneHot` gives an all-zero row for an index
 * outside `[0, depth)` (negative included: JAX's and TensorFlow's rule, where PyTorch raises);
 * `tile` follows NumPy (`reps` shorter than the rank is padded with leading 1s, longer pads the
 * shape); `repeat` without an axis repeats the flattened tensor (NumPy).
 *
 * @module
 */
import { checkInteger, checkOptions, describeValue } from "@weft/environment";
import { ArangeOpIr, FullOpIr, type DType } from "@weft/fusion";
import { DTypeError, ShapeError, ValueError, formatShape } from "../errors/tensor-errors.js";
import { normalizeAxis } from "../shape/shape.js";
import { checkAxisArg, checkTensor } from "../tensor/arguments.js";
import { castUnchecked, checkOperands, output, register, release } from "../tensor/record.js";
import type { Tensor } from "../tensor/tensor.js";
import { tidy } from "../lifetime/lifetime.js";
import { tensor as upload } from "./creation.js";
import { binary, checkDType, where } from "./elementwise.js";
import { gather, reshapeUnchecked } from "./layout.js";

/** An `i32` `arange(n)` on `x`'s device, reshaped to `shape` (one dim of size `n`, the rest 1). */
function indexAlong(x: Tensor, n: number, shape: readonly number[]): Tensor {
  const line = register(x.device, new ArangeOpIr(output(x.device, [n], "i32"), 0, 1));
  const out = reshapeUnchecked(line, shape);
  release(line);
  return out;
}

function triangle(op: "tril" | "triu", x: Tensor, k: number): Tensor {
  checkTensor(op, "the input", x);
  checkOperands(op, [x]);
  checkInteger(op, "k (the diagonal offset)", k);
  if (x.rank < 2) {
    throw new ShapeError(op, [x.shape], `needs a tensor of rank ≥ 2 (a matrix or a batch of them), got ${formatShape(x.shape)}; reshape it to [rows, columns] first`);
  }
  const n = x.shape[x.rank - 2] ?? 0;
  const m = x.shape[x.rank - 1] ?? 0;
  return tidy(() => {
    const offset = binary("sub", indexAlong(x, m, [1, m]), indexAlong(x, n, [n, 1]));
    const keep = op === "tril" ? binary("le", offset, k) : binary("ge", offset, k);
    return x.dtype === "bool" ? binary("and", x, keep) : where(keep, x, 0);
  });
}

/**
 * The lower triangle of the last two dims: elements with `column − row ≤ k` are kept, the rest
 * are 0 (NumPy/PyTorch `tril`; `k > 0` keeps diagonals above the main one).
 * @throws ShapeError for rank < 2; ValueError for a non-integer `k`.
 */
export function tril(x: Tensor, k = 0): Tensor {
  return triangle("tril", x, k);
}

/** The upper triangle of the last two dims: elements with `column − row ≥ k` are kept (see {@link tril}). */
export function triu(x: Tensor, k = 0): Tensor {
  return triangle("triu", x, k);
}

/**
 * `x` repeated `reps[i]` times along each dim (NumPy `tile`). A number is one rep for the last
 * dim; `reps` shorter than the rank is padded with leading 1s, longer adds leading dims.
 * @throws ValueError when a rep is not a non-negative integer.
 */
export function tile(x: Tensor, reps: number | readonly number[]): Tensor {
  checkTensor("tile", "the input", x);
  checkOperands("tile", [x]);
  const list = typeof reps === "number" ? [reps] : reps;
  if (!Array.isArray(list)) throw new ValueError("tile", `pass reps as a non-negative integer or an array of them, not ${describeValue(reps)}`);
  list.forEach((r: unknown, i) => checkInteger("tile", `reps[${i}]`, r, 0));
  const rank = Math.max(list.length, x.rank);
  const shape = [...new Array<number>(rank - x.rank).fill(1), ...x.shape];
  const r = [...new Array<number>(rank - list.length).fill(1), ...list];
  const outShape = shape.map((d, i) => d * (r[i] ?? 1));
  if (r.every((v) => v === 1)) return reshapeUnchecked(x, outShape);
  if (outShape.includes(0)) return register(x.device, new FullOpIr(output(x.device, outShape, x.dtype), 0));
  return tidy(() => {
    const interleaved = reshapeUnchecked(x, shape.flatMap((d) => [1, d]));
    const grown = interleaved.expand(shape.flatMap((d, i) => [r[i] ?? 1, d]));
    return reshapeUnchecked(grown, outShape);
  });
}

/**
 * Repeats each element `repeats` times along `axis` (NumPy `repeat`, PyTorch `repeat_interleave`):
 * `[1, 2].repeat(2)` is `[1, 1, 2, 2]`. `repeats` is a count for every element or an array with
 * one count per element along `axis`. Without `axis` the flattened tensor is repeated.
 * @throws ValueError for a negative or non-integer count; ShapeError when the array of counts does
 *   not match the axis' size.
 */
export function repeat(x: Tensor, repeats: number | readonly number[], axisArg?: number): Tensor {
  checkTensor("repeat", "the input", x);
  checkOperands("repeat", [x]);
  checkAxisArg("repeat", "axis", axisArg);
  if (typeof repeats !== "number" && !Array.isArray(repeats)) {
    throw new ValueError("repeat", `pass repeats as a non-negative integer or an array of them (one per element along the axis), not ${describeValue(repeats)}`);
  }
  if (typeof repeats === "number") checkInteger("repeat", "repeats", repeats, 0);
  else (repeats as readonly unknown[]).forEach((r, i) => checkInteger("repeat", `repeats[${i}]`, r, 0));
  const flat = axisArg === undefined;
  const source = flat ? [x.size] : x.shape;
  const axis = flat ? 0 : normalizeAxis("repeat", axisArg, x.shape);
  const n = source[axis] ?? 0;
  if (Array.isArray(repeats) && repeats.length !== n) {
    throw new ShapeError("repeat", [x.shape], `got ${repeats.length} repeat counts for axis ${axis} of size ${n} in ${formatShape(x.shape)}; pass one count per element or a single number`);
  }
  return tidy(() => {
    const input = flat ? reshapeUnchecked(x, source) : x;
    if (typeof repeats === "number") {
      const target = source.map((d, i) => (i === axis ? d * repeats : d));
      if (repeats === 0 || n === 0) return register(x.device, new FullOpIr(output(x.device, target, x.dtype), 0));
      const split = [...source.slice(0, axis + 1), 1, ...source.slice(axis + 1)];
      const grown = reshapeUnchecked(input, split).expand([...source.slice(0, axis + 1), repeats, ...source.slice(axis + 1)]);
      return reshapeUnchecked(grown, target);
    }
    const index: number[] = [];
    (repeats as readonly number[]).forEach((count, i) => {
      for (let c = 0; c < count; c++) index.push(i);
    });
    if (index.length === 0) {
      return register(x.device, new FullOpIr(output(x.device, source.map((d, i) => (i === axis ? 0 : d)), x.dtype), 0));
    }
    return gather(input, upload(index, { dtype: "i32", device: x.device }), axis);
  });
}

/** Options of {@link oneHot}. */
export interface OneHotOptions {
  /** The output's element type (default `i32`, as PyTorch's integer `one_hot`). */
  readonly dtype?: DType;
}

/**
 * `out[..., j] = indices[...] == j ? 1 : 0` for `j` in `[0, depth)`: shape `[...indices.shape,
 * depth]`. An index outside `[0, depth)` gives a row of zeros (module doc).
 * @throws DTypeError for indices that are not i32/u32; ValueError for a negative `depth`.
 */
export function oneHot(indices: Tensor, depth: number, options: OneHotOptions = {}): Tensor {
  checkTensor("oneHot", "the indices", indices);
  checkOperands("oneHot", [indices]);
  checkInteger("oneHot", "depth", depth, 0);
  const opts = checkOptions("oneHot", options, ["dtype"]);
  const dtype = checkDType("oneHot", opts.dtype ?? "i32", indices.device);
  if (indices.dtype !== "i32" && indices.dtype !== "u32") {
    throw new DTypeError("oneHot", `indices must be i32 or u32, got ${indices.dtype}; cast them with \`indices.cast("i32")\``);
  }
  return tidy(() => {
    const idx = reshapeUnchecked(indices.dtype === "i32" ? indices : castUnchecked(indices, "i32"), [...indices.shape, 1]);
    const hot = binary("eq", idx, indexAlong(indices, depth, [depth]));
    return dtype === "bool" ? hot : castUnchecked(hot, dtype);
  });
}
