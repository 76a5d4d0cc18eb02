/**
 * `scatter` and `scatterAdd` along one axis (PyTorch `scatter`/`scatter_add`, NumPy
 * `put_along_axis`/`add.at`): one `scatter` operation run by each backend's dedicated kernel, on
 * the device, no host round trip.
 *
 * @remarks
 * **Rules** (`docs/semantics.md`, "Issue 7's ops"): `out = x` except along `axis`, where
 * `out[..., indices[..., j, ...], ...]` receives `src[..., j, ...]`. `indices` has the rank of `x`
 * and no dim larger than `x`'s outside `axis`; `src` has `indices`' shape (or is a number).
 * Negative indices count from the end (as `gather`); an index outside `[-n, n)` is an
 * `IndexOutOfRangeError` delivered at the read of the output (as `gather`'s).
 * - `scatter` with duplicate indices: the **last** source along the axis wins (the largest `j`),
 *   on every backend — deterministic, as NumPy's `put_along_axis` behaves in practice (PyTorch
 *   leaves it undefined).
 * - `scatterAdd`: every source is added to the element in source order (`j` ascending), on every
 *   backend, so float results are the same bits everywhere (NumPy's `add.at`).
 * **Cost.** `O(|x| + |indices|)`: the kernels walk each slice's sources in order (no `n · m` mask).
 *
 * @module
 */
import { FullOpIr, ScatterOpIr } from "@weft/fusion";
import { checkOperandValue, checkTensor } from "../tensor/arguments.js";
import { DTypeError, ShapeError, ValueError, formatShape } from "../errors/tensor-errors.js";
import { fitsDType } from "../dtype/dtype.js";
import { normalizeAxis } from "../shape/shape.js";
import { checkAxisArg } from "../tensor/arguments.js";
import { castUnchecked, checkOperands, output, register, release, use } from "../tensor/record.js";
import { Tensor } from "../tensor/tensor.js";

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

/** One `scatter` operation (`i32` indices; a number source filled to the indices' shape). */
function record(op: "scatter" | "scatterAdd", x: Tensor, indices: Tensor, src: Tensor | number, axis: number): Tensor {
  const idx = indices.dtype === "i32" ? indices : castUnchecked(indices, "i32");
  const source = src instanceof Tensor ? src : register(x.device, new FullOpIr(output(x.device, indices.shape, x.dtype), src));
  const out = register(
    x.device,
    new ScatterOpIr(op === "scatter" ? "assign" : "add", use(op, x), use(op, idx), use(op, source), axis, output(x.device, x.shape, x.dtype)),
  );
  release(idx === indices ? undefined : idx, source === src ? undefined : source);
  return out;
}

/**
 * `x` with `src` written at `indices` along `axis` (module doc; duplicates: the last source wins).
 * @throws ShapeError / DTypeError / ValueError for mismatched shapes, dtypes or arguments; an
 *   out-of-range index is an `IndexOutOfRangeError` at the read of the output.
 */
export function scatter(x: Tensor, indices: Tensor, src: Tensor | number, axis: number): Tensor {
  const ax = checkScatter("scatter", x, indices, src, axis);
  return record("scatter", x, indices, src, ax);
}

/**
 * `x` plus every `src` element added at its index along `axis` (module doc: duplicates add up).
 * @throws as {@link scatter}; DTypeError for bool.
 */
export function scatterAdd(x: Tensor, indices: Tensor, src: Tensor | number, axis: number): Tensor {
  const ax = checkScatter("scatterAdd", x, indices, src, axis);
  return record("scatterAdd", x, indices, src, ax);
}
