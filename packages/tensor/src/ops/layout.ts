/**
 * Layout ops: reshape, flatten, transpose/permute, expand, squeeze/unsqueeze, slice, concat,
 * stack, split, gather and pad. Views (reshape, permute, expand, slice) are recorded as operations
 * like everything else: the backend decides whether they cost a copy.
 *
 * @remarks
 * **Identity shortcuts.** A layout op that would not change anything (reshape to the same shape,
 * the identity permutation, a full slice, concat of one tensor) returns `clone()` — a new
 * reference to the same value — instead of recording an op.
 *
 * @module
 */
import { checkNumber, describeValue } from "@weft/environment";
import { ArangeOpIr, ConcatOpIr, ExpandOpIr, GatherOpIr, PadOpIr, PermuteOpIr, ReshapeOpIr, SliceOpIr, sliceRange, type SliceRange } from "@weft/fusion";
import { fitsDType, promoteTypes } from "../dtype/dtype.js";
import { AxisError, DTypeError, ShapeError, ValueError, formatShape } from "../errors/tensor-errors.js";
import { checkShape, normalizeAxes, normalizeAxis, sizeOf } from "../shape/shape.js";
import { checkAxesArg, checkAxisArg, checkTensor, checkTensorList } from "../tensor/arguments.js";
import { castUnchecked, checkOperands, output, register, release, use } from "../tensor/record.js";
import type { Tensor } from "../tensor/tensor.js";

/** Whether `a` and `b` are the same shape. */
export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Records a reshape without validation (callers checked the element count). */
export function reshapeUnchecked(x: Tensor, shape: readonly number[]): Tensor {
  if (sameShape(x.shape, shape)) return x.clone();
  const input = use("reshape", x);
  return register(x.device, new ReshapeOpIr(input, output(x.device, shape, x.dtype)));
}

/** Resolves a target shape with at most one `-1`. */
export function resolveShape(op: string, from: readonly number[], target: readonly number[]): number[] {
  if (!Array.isArray(target)) throw new ValueError(op, `pass the target shape as an array of sizes, not ${describeValue(target)}`);
  const size = sizeOf(from);
  const inferred = target.filter((d) => d === -1).length;
  if (inferred > 1) throw new ShapeError(op, [from, target], `target ${formatShape(target)} has more than one -1; infer at most one dimension`);
  for (const d of target) {
    if (d !== -1 && (!Number.isSafeInteger(d) || d < 0)) {
      throw new ShapeError(op, [from, target], `target ${formatShape(target)} has an invalid size ${String(d)}`);
    }
  }
  const known = target.reduce((n, d) => (d === -1 ? n : n * d), 1);
  if (inferred === 1) {
    if (known === 0 || size % known !== 0) {
      throw new ShapeError(op, [from, target], `cannot infer -1 in ${formatShape(target)} from ${size} elements of ${formatShape(from)}; give every size explicitly`);
    }
    return target.map((d) => (d === -1 ? size / known : d));
  }
  if (known !== size) {
    throw new ShapeError(op, [from, target], `cannot reshape ${formatShape(from)} (${size} elements) to ${formatShape(target)} (${known} elements); the element count must stay the same`);
  }
  return [...target];
}

/** Same elements, row-major, new shape (one size may be `-1`). */
export function reshape(x: Tensor, shape: readonly number[]): Tensor {
  checkTensor("reshape", "the input", x);
  checkOperands("reshape", [x]);
  return reshapeUnchecked(x, resolveShape("reshape", x.shape, shape));
}

/** Merges dims `start..end` (inclusive, negative allowed) into one. */
export function flatten(x: Tensor, start = 0, end = -1): Tensor {
  checkTensor("flatten", "the input", x);
  checkOperands("flatten", [x]);
  checkAxisArg("flatten", "start", start);
  checkAxisArg("flatten", "end", end);
  if (x.rank === 0) return reshapeUnchecked(x, [1]);
  const s = normalizeAxis("flatten", start, x.shape);
  const e = normalizeAxis("flatten", end, x.shape);
  if (s > e) throw new AxisError("flatten", start, x.shape, `start axis ${start} comes after end axis ${end} for shape ${formatShape(x.shape)}; swap them`);
  const merged = x.shape.slice(s, e + 1).reduce((n, d) => n * d, 1);
  return reshapeUnchecked(x, [...x.shape.slice(0, s), merged, ...x.shape.slice(e + 1)]);
}

/** `out.shape[i] = x.shape[axes[i]]`; `axes` is a permutation of `0..rank-1` (negatives allowed). */
export function permute(x: Tensor, axesArg: readonly number[]): Tensor {
  checkTensor("permute", "the input", x);
  checkOperands("permute", [x]);
  if (!Array.isArray(checkAxesArg("permute", axesArg))) {
    throw new ValueError("permute", `pass axes as an array listing every axis once, not ${describeValue(axesArg)}`);
  }
  if (axesArg.length !== x.rank) {
    throw new AxisError("permute", axesArg.length, x.shape, `needs ${x.rank} axes for shape ${formatShape(x.shape)}, got [${axesArg.join(",")}]; list every axis once`);
  }
  const axes = axesArg.map((a) => normalizeAxis("permute", a, x.shape));
  if (new Set(axes).size !== axes.length) {
    throw new AxisError("permute", axesArg[0] ?? 0, x.shape, `[${axesArg.join(",")}] is not a permutation of the ${x.rank} axes; list every axis once`);
  }
  if (axes.every((a, i) => a === i)) return x.clone();
  const input = use("permute", x);
  return register(x.device, new PermuteOpIr(input, axes, output(x.device, axes.map((a) => x.shape[a] ?? 0), x.dtype)));
}

/** Swaps two axes (default the last two; a rank < 2 tensor is returned as a new reference). */
export function transpose(x: Tensor, a?: number, b?: number): Tensor {
  checkTensor("transpose", "the input", x);
  checkOperands("transpose", [x]);
  checkAxisArg("transpose", "the first axis", a);
  checkAxisArg("transpose", "the second axis", b);
  if (a === undefined && b === undefined && x.rank < 2) return x.clone();
  const i = normalizeAxis("transpose", a ?? -2, x.shape);
  const j = normalizeAxis("transpose", b ?? -1, x.shape);
  const axes = x.shape.map((_, k) => k);
  axes[i] = j;
  axes[j] = i;
  return permute(x, axes);
}

/**
 * Broadcasts to `shape` (NumPy `broadcast_to`): new leading dims may be added, size-1 dims grow,
 * `-1` keeps a size.
 */
export function expand(x: Tensor, shapeArg: readonly number[]): Tensor {
  checkTensor("expand", "the input", x);
  checkOperands("expand", [x]);
  if (!Array.isArray(shapeArg)) throw new ValueError("expand", `pass a shape (an array of sizes), not ${describeValue(shapeArg)}`);
  if (shapeArg.length < x.rank) {
    throw new ShapeError("expand", [x.shape, shapeArg], `cannot expand ${formatShape(x.shape)} to the lower rank ${formatShape(shapeArg)}; reshape or squeeze instead`);
  }
  const lead = shapeArg.length - x.rank;
  const target = shapeArg.map((d, i) => (d === -1 && i >= lead ? (x.shape[i - lead] ?? 1) : d));
  checkShape("expand", target);
  target.forEach((d, i) => {
    const src = i >= lead ? (x.shape[i - lead] ?? 1) : 1;
    if (src !== d && src !== 1) {
      throw new ShapeError("expand", [x.shape, shapeArg], `cannot expand ${formatShape(x.shape)} to ${formatShape(shapeArg)} (dimension ${i}: ${src} vs ${d}); only size-1 dimensions grow`);
    }
  });
  const aligned = [...new Array<number>(lead).fill(1), ...x.shape];
  if (sameShape(aligned, target)) return reshapeUnchecked(x, target);
  const base = reshapeUnchecked(x, aligned);
  const input = use("expand", base);
  const out = register(x.device, new ExpandOpIr(input, output(x.device, target, x.dtype)));
  release(base);
  return out;
}

/** Removes size-1 dims (`axes` given: exactly those, which must have size 1). */
export function squeeze(x: Tensor, axesArg?: number | readonly number[]): Tensor {
  checkTensor("squeeze", "the input", x);
  checkOperands("squeeze", [x]);
  checkAxesArg("squeeze", axesArg);
  if (axesArg === undefined) return reshapeUnchecked(x, x.shape.filter((d) => d !== 1));
  const list = typeof axesArg === "number" ? [axesArg] : axesArg;
  const axes = list.map((a) => normalizeAxis("squeeze", a, x.shape));
  for (const a of axes) {
    if (x.shape[a] !== 1) {
      throw new ShapeError("squeeze", [x.shape], `axis ${a} of ${formatShape(x.shape)} has size ${String(x.shape[a])}, not 1; squeeze only size-1 axes, or reshape`);
    }
  }
  return reshapeUnchecked(x, x.shape.filter((_, i) => !axes.includes(i)));
}

/** Inserts a size-1 dim at `axis` (in `[-(rank+1), rank]`). */
export function unsqueeze(x: Tensor, axis: number): Tensor {
  checkTensor("unsqueeze", "the input", x);
  checkOperands("unsqueeze", [x]);
  if (checkAxisArg("unsqueeze", "axis", axis) === undefined) throw new ValueError("unsqueeze", "pass the axis at which to insert a size-1 dimension");
  const at = normalizeAxis("unsqueeze", axis, x.shape, x.rank + 1);
  return reshapeUnchecked(x, [...x.shape.slice(0, at), 1, ...x.shape.slice(at)]);
}

/**
 * One dim of a slice: a number picks one index and removes the dim; a `[start, end, step]` tuple
 * or object (each part optional, negative start/end count from the end, Python-style clamping)
 * keeps it; `null`/omitted keeps the whole dim.
 */
export type SliceSpec =
  | number
  | null
  | undefined
  | readonly [start?: number | null, end?: number | null, step?: number | null]
  | { readonly start?: number | null; readonly end?: number | null; readonly step?: number | null };

/**
 * Python-style slicing with steps (negative steps walk backwards, as `x[::-1]`) and negative
 * indices; one spec per leading dim. A negative step records a forward slice and a {@link flip}.
 */
export function slice(x: Tensor, specs: readonly SliceSpec[]): Tensor {
  checkTensor("slice", "the input", x);
  checkOperands("slice", [x]);
  if (!Array.isArray(specs)) throw new ValueError("slice", `pass specs as an array with one spec per leading dimension, not ${describeValue(specs)}`);
  if (specs.length > x.rank) {
    throw new ShapeError("slice", [x.shape], `${specs.length} slice specs for shape ${formatShape(x.shape)} of rank ${x.rank}; give at most one per dimension`);
  }
  const ranges = Array.of<SliceRange>(); // classes and `Array.of`: the op keeps them (docs/performance.md#allocation-sites)
  const dropped: number[] = [];
  const reversed: number[] = [];
  x.shape.forEach((size, dim) => {
    const spec = specs[dim];
    if (spec === undefined || spec === null) {
      ranges.push(sliceRange(0, size, 1));
      return;
    }
    if (typeof spec === "number") {
      if (!Number.isInteger(spec) || spec < -size || spec >= size) {
        throw new ShapeError("slice", [x.shape], `index ${spec} is out of range for dimension ${dim} of size ${size} in ${formatShape(x.shape)}; use an index in [${-size}, ${size})`);
      }
      const i = spec < 0 ? spec + size : spec;
      ranges.push(sliceRange(i, i + 1, 1));
      dropped.push(dim);
      return;
    }
    const [s, e, st] = Array.isArray(spec)
      ? (spec as readonly (number | null | undefined)[])
      : [(spec as { start?: number | null }).start, (spec as { end?: number | null }).end, (spec as { step?: number | null }).step];
    const step = st ?? 1;
    if (!Number.isInteger(step) || step === 0) throw new ValueError("slice", `step ${String(step)} of dimension ${dim} is not a non-zero integer; pass a step ≥ 1, or a negative step to walk backwards`);
    const bound = (v: number | null | undefined): number | undefined => {
      if (v === null || v === undefined) return undefined;
      if (!Number.isInteger(v)) throw new ValueError("slice", `bound ${describeValue(v)} of dimension ${dim} is not an integer; pass integer bounds`);
      return v < 0 ? v + size : v;
    };
    const [b0, b1] = [bound(s), bound(e)];
    if (step > 0) {
      const start = Math.min(Math.max(b0 ?? 0, 0), size);
      const end = Math.max(start, Math.min(Math.max(b1 ?? size, 0), size));
      ranges.push(sliceRange(start, end, step));
      return;
    }
    // Python's rule for a negative step: start defaults to the last index, end to "before 0"; both
    // clamp to [-1, size - 1]. The elements start, start + step, … (> end) are the forward range
    // ending at `start` with step |step|, reversed.
    const first = Math.min(Math.max(b0 ?? size - 1, -1), size - 1);
    const last = Math.min(Math.max(b1 ?? -1, -1), size - 1);
    const count = first > last ? Math.ceil((first - last) / -step) : 0;
    const lowest = first - (count - 1) * -step;
    ranges.push(count === 0 ? sliceRange(0, 0, 1) : sliceRange(lowest, first + 1, -step));
    reversed.push(dim);
  });
  const shape = ranges.map((r) => Math.max(0, Math.ceil((r.end - r.start) / r.step)));
  const full = ranges.every((r, i) => r.start === 0 && r.step === 1 && r.end === x.shape[i]);
  const forward = full
    ? x.clone()
    : register(x.device, new SliceOpIr(use("slice", x), ranges, output(x.device, shape, x.dtype)));
  const sliced = reversed.length === 0 ? forward : flipUnchecked(forward, reversed);
  if (sliced !== forward) release(forward);
  if (dropped.length === 0) return sliced;
  const out = reshapeUnchecked(sliced, shape.filter((_, i) => !dropped.includes(i)));
  release(sliced);
  return out;
}

/** Joins tensors along an existing `axis`; dtypes promote, other dims must match. */
export function concat(tensors: readonly Tensor[], axisArg = 0): Tensor {
  checkTensorList("concat", "tensors", tensors);
  checkAxisArg("concat", "axis", axisArg);
  if (tensors.length === 0) throw new ValueError("concat", "got no tensors; pass at least one");
  const first = tensors[0] as Tensor;
  const device = checkOperands("concat", tensors);
  if (first.rank === 0) throw new ShapeError("concat", tensors.map((t) => t.shape), "cannot concatenate scalars; use stack()");
  const axis = normalizeAxis("concat", axisArg, first.shape);
  for (const t of tensors) {
    const ok = t.rank === first.rank && t.shape.every((d, i) => i === axis || d === first.shape[i]);
    if (!ok) {
      throw new ShapeError("concat", tensors.map((x) => x.shape), `shapes ${tensors.map((x) => formatShape(x.shape)).join(", ")} differ outside axis ${axis}; every dimension but the concat axis must match`);
    }
  }
  const dtype = tensors.map((t) => t.dtype).reduce(promoteTypes);
  const nonEmpty = tensors.filter((t) => (t.shape[axis] ?? 0) > 0);
  const parts = nonEmpty.length === 0 ? [first] : nonEmpty;
  const casted = parts.map((t) => (t.dtype === dtype ? t : castUnchecked(t, dtype)));
  const temps = casted.filter((t, i) => t !== parts[i]);
  if (casted.length === 1) {
    const only = casted[0] as Tensor;
    const out = only.clone();
    release(...temps);
    return out;
  }
  const shape = [...first.shape];
  shape[axis] = parts.reduce((n, t) => n + (t.shape[axis] ?? 0), 0);
  const inputs = casted.map((t) => use("concat", t));
  const out = register(device, new ConcatOpIr(inputs, axis, output(device, shape, dtype)));
  release(...temps);
  return out;
}

/** Joins same-shaped tensors along a new `axis`. */
export function stack(tensors: readonly Tensor[], axisArg = 0): Tensor {
  checkTensorList("stack", "tensors", tensors);
  checkAxisArg("stack", "axis", axisArg);
  if (tensors.length === 0) throw new ValueError("stack", "got no tensors; pass at least one");
  const first = tensors[0] as Tensor;
  checkOperands("stack", tensors);
  for (const t of tensors) {
    if (!sameShape(t.shape, first.shape)) {
      throw new ShapeError("stack", tensors.map((x) => x.shape), `shapes ${tensors.map((x) => formatShape(x.shape)).join(", ")} differ; stack needs equal shapes (use concat for a shared axis)`);
    }
  }
  const axis = normalizeAxis("stack", axisArg, first.shape, first.rank + 1);
  const expanded = tensors.map((t) => reshapeUnchecked(t, [...t.shape.slice(0, axis), 1, ...t.shape.slice(axis)]));
  const out = concat(expanded, axis);
  release(...expanded);
  return out;
}

/** Splits along `axis` into `sections` equal parts, or into parts of the given sizes. */
export function split(x: Tensor, sections: number | readonly number[], axisArg = 0): Tensor[] {
  checkTensor("split", "the input", x);
  checkOperands("split", [x]);
  checkAxisArg("split", "axis", axisArg);
  if (typeof sections !== "number" && !Array.isArray(sections)) {
    throw new ValueError("split", `pass sections as a number of equal parts or an array of sizes, not ${describeValue(sections)}`);
  }
  const axis = normalizeAxis("split", axisArg, x.shape);
  const size = x.shape[axis] ?? 0;
  let sizes: number[];
  if (typeof sections === "number") {
    if (!Number.isInteger(sections) || sections <= 0 || size % sections !== 0) {
      throw new ShapeError("split", [x.shape], `axis ${axis} of ${formatShape(x.shape)} (size ${size}) does not split into ${sections} equal parts; pass a list of sizes`);
    }
    sizes = new Array<number>(sections).fill(size / sections);
  } else {
    sizes = [...sections];
    if (sizes.some((s) => !Number.isInteger(s) || s < 0) || sizes.reduce((a, b) => a + b, 0) !== size) {
      throw new ShapeError("split", [x.shape], `sizes [${sizes.join(",")}] do not add up to ${size}, the size of axis ${axis} of ${formatShape(x.shape)}; pass sizes that sum to ${size}`);
    }
  }
  let at = 0;
  return sizes.map((n) => {
    const specs: SliceSpec[] = x.shape.map(() => null);
    specs[axis] = [at, at + n, 1];
    at += n;
    return slice(x, specs);
  });
}

/**
 * Gathers along `axis`. With `indices` of the same rank as `x` this is `torch.gather`:
 * `out[..., i, ...] = x[..., indices[..., i, ...], ...]` (other dims of `indices` ≤ those of `x`).
 * With 1-D `indices` and `x` of higher rank it is `index_select` (whole slices along `axis`).
 * Indices must be integers (`u32` is cast to `i32`); out-of-range indices are the backend's
 * business (the CPU backend throws at read).
 */
export function gather(x: Tensor, indices: Tensor, axisArg: number): Tensor {
  checkTensor("gather", "the input", x);
  checkTensor("gather", "the indices", indices);
  if (checkAxisArg("gather", "axis", axisArg) === undefined) throw new ValueError("gather", "pass the axis to gather along");
  const device = checkOperands("gather", [x, indices]);
  if (indices.dtype !== "i32" && indices.dtype !== "u32") {
    throw new DTypeError("gather", `indices must be i32 or u32, got ${indices.dtype}; cast them with \`indices.cast("i32")\``);
  }
  const axis = normalizeAxis("gather", axisArg, x.shape);
  if (indices.rank === 1 && x.rank > 1) {
    const n = indices.shape[0] ?? 0;
    const viewShape = x.shape.map((_, i) => (i === axis ? n : 1));
    const target = x.shape.map((d, i) => (i === axis ? n : d));
    const idx = indices.dtype === "i32" ? indices : castUnchecked(indices, "i32");
    const reshaped = reshapeUnchecked(idx, viewShape);
    const expanded = sameShape(viewShape, target)
      ? reshaped.clone()
      : register(device, new ExpandOpIr(use("gather", reshaped), output(device, target, "i32")));
    const out = register(device, new GatherOpIr(use("gather", x), use("gather", expanded), axis, output(device, target, x.dtype)));
    release(idx === indices ? undefined : idx, reshaped, expanded);
    return out;
  }
  if (indices.rank !== x.rank) {
    throw new ShapeError("gather", [x.shape, indices.shape], `indices ${formatShape(indices.shape)} must have the rank of the input ${formatShape(x.shape)} (or be 1-D for index_select)`);
  }
  indices.shape.forEach((d, i) => {
    if (i !== axis && d > (x.shape[i] ?? 0)) {
      throw new ShapeError("gather", [x.shape, indices.shape], `indices ${formatShape(indices.shape)} exceed the input ${formatShape(x.shape)} in dimension ${i} (${d} > ${String(x.shape[i])})`);
    }
  });
  const idx = indices.dtype === "i32" ? indices : castUnchecked(indices, "i32");
  const out = register(device, new GatherOpIr(use("gather", x), use("gather", idx), axis, output(device, indices.shape, x.dtype)));
  release(idx === indices ? undefined : idx);
  return out;
}

/** Constant padding: `padding[d] = [before, after]` for the leading dims (missing dims get none). */
export function pad(x: Tensor, padding: readonly (readonly [number, number])[], value = 0): Tensor {
  checkTensor("pad", "the input", x);
  checkOperands("pad", [x]);
  checkNumber("pad", "the padding value", value);
  if (!Array.isArray(padding) || !padding.every((p) => Array.isArray(p) && p.length === 2)) {
    throw new ValueError("pad", `pass padding as an array of [before, after] pairs, one per leading dimension, not ${describeValue(padding)}`);
  }
  if (padding.length > x.rank) {
    throw new ShapeError("pad", [x.shape], `${padding.length} padding pairs for shape ${formatShape(x.shape)} of rank ${x.rank}; give at most one [before, after] per dimension`);
  }
  const full = x.shape.map((_, i) => padding[i] ?? ([0, 0] as const));
  for (const [b, a] of full) {
    if (!Number.isInteger(b) || !Number.isInteger(a) || b < 0 || a < 0) {
      throw new ValueError("pad", `padding [${b}, ${a}] must be non-negative integers; use slice() to crop`);
    }
  }
  if (!fitsDType(value, x.dtype)) {
    throw new DTypeError("pad", `value ${value} does not fit dtype ${x.dtype}; pass a value of ${x.dtype} or cast the tensor to f32 first`);
  }
  if (full.every(([b, a]) => b === 0 && a === 0)) return x.clone();
  const shape = x.shape.map((d, i) => d + (full[i]?.[0] ?? 0) + (full[i]?.[1] ?? 0));
  return register(x.device, new PadOpIr(use("pad", x), full.map(([b, a]) => Array.of(b, a) as [number, number]), value, output(x.device, shape, x.dtype)));
}

/**
 * Reverses the order of elements along `axes` (NumPy `flip`; all axes when omitted; PyTorch
 * `flip(dims)`). Records one index-select `gather` per reversed axis of size > 1 (a layout op on
 * every backend); axes of size 0 or 1 are left as they are.
 * @throws AxisError for an axis out of range or repeated.
 */
export function flip(x: Tensor, axesArg?: number | readonly number[]): Tensor {
  checkTensor("flip", "the input", x);
  checkOperands("flip", [x]);
  checkAxesArg("flip", axesArg);
  return flipUnchecked(x, normalizeAxes("flip", axesArg, x.shape));
}

/** {@link flip} on normalised, distinct axes (callers validated them). */
export function flipUnchecked(x: Tensor, axes: readonly number[]): Tensor {
  let current = x.clone();
  for (const axis of axes) {
    const n = x.shape[axis] ?? 0;
    if (n <= 1) continue;
    const indices = register(x.device, new ArangeOpIr(output(x.device, [n], "i32"), n - 1, -1));
    const next = gather(current, indices, axis);
    release(indices, current);
    current = next;
  }
  return current;
}
