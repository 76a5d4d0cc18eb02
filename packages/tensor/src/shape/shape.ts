/**
 * Shape arithmetic for the user API: broadcasting, axis normalisation, nested-array inference.
 * Pure functions that only validate and compute; they throw the typed errors of
 * `errors/tensor-errors.ts` naming the op, the shapes and the fix.
 *
 * @module
 */
import { describeValue } from "@weft/environment";
import { AxisError, ShapeError, ValueError, formatShape } from "../errors/tensor-errors.js";

/** A shape as users write it: a readonly list of non-negative integer sizes. */
export type Shape = readonly number[];

/** Number of elements of `shape` (1 for a scalar, 0 when any size is 0). */
export function sizeOf(shape: Shape): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Throws unless every entry of `shape` is a non-negative safe integer. */
export function checkShape(op: string, shape: Shape): readonly number[] {
  if (!Array.isArray(shape)) {
    throw new ValueError(op, `pass a shape (an array of sizes), not ${describeValue(shape)}`);
  }
  for (const d of shape) {
    if (!isSize(d)) {
      throw new ShapeError(op, [shape], `shape ${formatShape(shape)} has an invalid size ${describeValue(d)}; pass non-negative integer sizes`);
    }
  }
  return [...shape];
}

/** Whether `d` is a dimension size: a non-negative safe integer. */
function isSize(d: unknown): boolean {
  return typeof d === "number" && Number.isSafeInteger(d) && d >= 0;
}

/**
 * The NumPy broadcast of several shapes: aligned from the right, a size-1 dim grows.
 * @throws ShapeError naming the first dimension (counted from the left of the result) that clashes.
 */
export function broadcastShapes(op: string, ...shapes: Shape[]): number[] {
  if (typeof op !== "string") throw new ValueError("broadcastShapes", `pass the op's name (a string, used in messages) first, not ${describeValue(op)}`);
  for (const s of shapes) if (!Array.isArray(s) || !s.every(isSize)) checkShape(op, s);
  const rank = Math.max(0, ...shapes.map((s) => s.length));
  const out: number[] = new Array<number>(rank).fill(1);
  for (let i = 0; i < rank; i++) {
    for (const s of shapes) {
      const d = s[s.length - rank + i] ?? 1;
      const cur = out[i] ?? 1;
      if (d === cur || d === 1) continue;
      if (cur === 1) {
        out[i] = d;
        continue;
      }
      const sizes = shapes.map((x) => x[x.length - rank + i] ?? 1).join(" vs ");
      throw new ShapeError(
        op,
        shapes,
        `shapes ${shapes.map(formatShape).join(" and ")} cannot broadcast (dimension ${i}: ${sizes}); reshape or expand one operand`,
      );
    }
  }
  return out;
}

/**
 * {@link broadcastShapes} of two shapes a tensor already holds (so valid): the same answer and,
 * when they cannot broadcast, the same error, without the rest array, the rank scan's arrays or a
 * fill. What every binary op of two tensors calls.
 */
export function broadcastPair(op: string, a: Shape, b: Shape): number[] {
  const rank = a.length > b.length ? a.length : b.length;
  const out: number[] = [];
  for (let i = 0; i < rank; i++) {
    const da = a[a.length - rank + i] ?? 1;
    const db = b[b.length - rank + i] ?? 1;
    if (da === db || db === 1) out.push(da);
    else if (da === 1) out.push(db);
    else return broadcastShapes(op, a, b); // throws the ShapeError naming both shapes
  }
  return out;
}

/** `axis` in `[-rank, rank)` mapped to `[0, rank)`. */
export function normalizeAxis(op: string, axis: number, shape: Shape, rank = shape.length): number {
  if (typeof axis !== "number" || !Number.isInteger(axis)) throw new AxisError(op, axis, shape, `axis ${describeValue(axis)} is not an integer; use an axis in [${-rank}, ${rank})`);
  if (axis < -rank || axis >= rank) throw new AxisError(op, axis, shape, `axis ${axis} is out of range for shape ${formatShape(shape)} (rank ${shape.length}); use an axis in [${-rank}, ${rank})`);
  return axis < 0 ? axis + rank : axis;
}

/**
 * Normalised, sorted, distinct axes; `undefined` means every axis.
 * @throws AxisError for an out-of-range or repeated axis.
 */
export function normalizeAxes(op: string, axes: number | readonly number[] | undefined, shape: Shape): number[] {
  if (axes === undefined) return shape.map((_, i) => i);
  if (typeof axes !== "number" && !Array.isArray(axes)) {
    throw new ValueError(op, `pass axes as an integer, an array of integers, or undefined for every axis, not ${describeValue(axes)}`);
  }
  const list = typeof axes === "number" ? [axes] : axes;
  const out = list.map((a) => normalizeAxis(op, a, shape));
  const sorted = [...out].sort((x, y) => x - y);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i] === sorted[i - 1]) {
      throw new AxisError(op, list[i] ?? 0, shape, `axis ${String(sorted[i])} is repeated in [${list.join(",")}]; list each axis once`);
    }
  }
  return sorted;
}

/** The shape left after reducing `axes` (kept as size 1 when `keepDims`). */
export function reducedShape(shape: Shape, axes: readonly number[], keepDims: boolean): number[] {
  const out: number[] = [];
  shape.forEach((d, i) => {
    if (!axes.includes(i)) out.push(d);
    else if (keepDims) out.push(1);
  });
  return out;
}

/** Row-major strides of `shape`. */
export function stridesOf(shape: Shape): number[] {
  const strides = new Array<number>(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) strides[i] = (strides[i + 1] ?? 1) * (shape[i + 1] ?? 1);
  return strides;
}

/** A nested JS array of numbers or booleans, or one scalar. */
export type NestedArray = number | boolean | readonly NestedArray[];

/**
 * The shape of a nested array and its leaves in row-major order.
 * @throws ShapeError when the array is ragged (names the path and the two lengths).
 * @throws ValueError when a leaf is not a number or a boolean.
 */
export function flattenNested(op: string, values: NestedArray): { shape: number[]; flat: (number | boolean)[] } {
  const shape: number[] = [];
  let probe: NestedArray = values;
  while (Array.isArray(probe)) {
    shape.push(probe.length);
    if (probe.length === 0) break;
    probe = (probe as readonly NestedArray[])[0] as NestedArray;
  }
  const flat: (number | boolean)[] = [];
  const walk = (node: NestedArray, depth: number, path: string): void => {
    if (depth === shape.length) {
      if (Array.isArray(node)) {
        throw new ShapeError(op, [shape], `ragged nested array: ${path || "the value"} is an array where a number was expected (shape so far ${formatShape(shape)}); make every row the same length`);
      }
      if (typeof node !== "number" && typeof node !== "boolean") {
        throw new ValueError(op, `element ${path || "value"} is ${describeValue(node)}; pass numbers or booleans only`);
      }
      flat.push(node as number | boolean);
      return;
    }
    if (!Array.isArray(node) || node.length !== shape[depth]) {
      const len = Array.isArray(node) ? String(node.length) : "a scalar";
      throw new ShapeError(
        op,
        [shape],
        `ragged nested array: ${path || "the value"} has length ${len} but its siblings have ${String(shape[depth])} (expected shape ${formatShape(shape)}); make every row the same length`,
      );
    }
    (node as readonly NestedArray[]).forEach((child, i) => walk(child, depth + 1, `${path}[${i}]`));
  };
  walk(values, 0, "");
  return { shape, flat };
}

/** Builds a nested JS array of `shape` from row-major `values`. */
export function nest<T>(values: ArrayLike<T>, shape: Shape): unknown {
  if (shape.length === 0) return values[0];
  const strides = stridesOf(shape);
  const build = (depth: number, offset: number): unknown[] => {
    const n = shape[depth] ?? 0;
    const out: unknown[] = new Array<unknown>(n);
    for (let i = 0; i < n; i++) {
      const at = offset + i * (strides[depth] ?? 1);
      out[i] = depth === shape.length - 1 ? values[at] : build(depth + 1, at);
    }
    return out;
  };
  return build(0, 0);
}
