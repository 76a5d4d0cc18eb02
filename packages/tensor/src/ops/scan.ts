/**
 * `cumsum` and `cumprod`: inclusive scans along one axis, one `scan` operation run by each
 * backend's dedicated kernel, on the device, no host round trip.
 *
 * @remarks
 * **Numerics** (`docs/semantics.md`, "Issue 7's ops"): the CPU accumulates serially in axis
 * order, rounding to f32 after every step (NumPy's `add.accumulate`); WebGPU's order is the one
 * the semantics table documents, within the reduction tolerance of the axis length for floats;
 * integers wrap like `add`/`mul` (exact on every backend); NaN propagates to every later element;
 * `bool` sums count in `i32` (NumPy); `cumprod` of `bool` is `i32` too. Without an axis the
 * flattened tensor is scanned (NumPy), so a rank-0 input gives shape `[1]`.
 *
 * @module
 */
import { ScanOpIr } from "@weft/fusion";
import { normalizeAxis } from "../shape/shape.js";
import { checkAxisArg, checkTensor } from "../tensor/arguments.js";
import { castUnchecked, checkOperands, output, register, release, use } from "../tensor/record.js";
import type { Tensor } from "../tensor/tensor.js";
import { reshapeUnchecked } from "./layout.js";

function scan(op: "cumsum" | "cumprod", x: Tensor, axisArg: number | undefined): Tensor {
  checkTensor(op, "the input", x);
  checkOperands(op, [x]);
  checkAxisArg(op, "axis", axisArg);
  const flat = axisArg === undefined;
  const shape = flat ? [x.size] : x.shape;
  const axis = flat ? 0 : normalizeAxis(op, axisArg, x.shape);
  const dtype = x.dtype === "bool" ? "i32" : x.dtype;
  const typed = dtype === x.dtype ? x : castUnchecked(x, dtype);
  const input = flat ? reshapeUnchecked(typed, shape) : typed;
  const out = register(x.device, new ScanOpIr(op === "cumsum" ? "sum" : "prod", use(op, input), axis, output(x.device, shape, dtype)));
  release(typed === x ? undefined : typed, input === typed ? undefined : input);
  return out;
}

/**
 * The running sum along `axis` (NumPy `cumsum`; the flattened tensor without an axis). `bool`
 * counts in `i32`; integers wrap.
 * @throws AxisError for an axis out of range; ValueError for a non-integer axis.
 */
export function cumsum(x: Tensor, axis?: number): Tensor {
  return scan("cumsum", x, axis);
}

/** The running product along `axis` (NumPy `cumprod`); see {@link cumsum}. */
export function cumprod(x: Tensor, axis?: number): Tensor {
  return scan("cumprod", x, axis);
}
