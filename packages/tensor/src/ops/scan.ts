/**
 * `cumsum` and `cumprod`: inclusive scans along one axis, on the device, as `⌈log₂ n⌉` rounds of
 * the Hillis–Steele scan: round `r` adds (multiplies) each element with the one `2^r` before it
 * (a `slice` and a `pad` with the identity, then one elementwise op). Every round is a layout op
 * and an elementwise op the backend already runs, so the scan is correct for any axis length on
 * every backend, with no host round trip and no per-workgroup limit.
 *
 * @remarks
 * **Cost.** `n log n` element operations and `⌈log₂ n⌉` passes instead of a work-efficient
 * single-kernel scan (the dedicated kernel is issue 7's remaining work, `docs/semantics.md`).
 * **Numerics** (`docs/semantics.md`, "Issue 7's ops"): the additions happen in a tree order, so
 * float results match a serial sum within the reduction tolerance of the axis length; integers
 * wrap like `add`/`mul`; NaN propagates to every later element; `bool` sums count in `i32`
 * (NumPy); `cumprod` of `bool` is `i32` too. Without an axis the flattened tensor is scanned
 * (NumPy), so a rank-0 input gives shape `[1]`.
 *
 * @module
 */
import { normalizeAxis } from "../shape/shape.js";
import { checkAxisArg, checkTensor } from "../tensor/arguments.js";
import { castUnchecked, checkOperands, release } from "../tensor/record.js";
import type { Tensor } from "../tensor/tensor.js";
import { tidy } from "../lifetime/lifetime.js";
import { binary } from "./elementwise.js";
import { pad, reshapeUnchecked, slice, type SliceSpec } from "./layout.js";

function scan(op: "cumsum" | "cumprod", x: Tensor, axisArg: number | undefined): Tensor {
  checkTensor(op, "the input", x);
  checkOperands(op, [x]);
  checkAxisArg(op, "axis", axisArg);
  const flat = axisArg === undefined;
  const shape = flat ? [x.size] : x.shape;
  const axis = flat ? 0 : normalizeAxis(op, axisArg, x.shape);
  const dtype = x.dtype === "bool" ? "i32" : x.dtype;
  const n = shape[axis] ?? 0;
  const identity = op === "cumsum" ? 0 : 1;
  const combine = op === "cumsum" ? "add" : "mul";
  return tidy(() => {
    let y = reshapeUnchecked(dtype === x.dtype ? x : castUnchecked(x, dtype), shape);
    for (let step = 1; step < n; step *= 2) {
      const head: SliceSpec[] = shape.map(() => null);
      head[axis] = [0, n - step, 1];
      const before = shape.map((_, d) => (d === axis ? ([step, 0] as const) : ([0, 0] as const)));
      const shifted = slice(y, head);
      const padded = pad(shifted, before, identity);
      const next = binary(combine, y, padded);
      // Each round's inputs die as soon as the next round is recorded: at most two rounds live.
      release(shifted, padded, y);
      y = next;
    }
    return y;
  });
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
