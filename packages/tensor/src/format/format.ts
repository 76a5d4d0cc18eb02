/**
 * Printing tensors: the text `Tensor.print()` writes, NumPy-style — nested brackets, one row per
 * line, columns aligned, large tensors summarized with `...`.
 *
 * @module
 */
import { ValueError, checkInteger, checkOptions, describeValue } from "@weft/environment";
import { checkDTypeName } from "../dtype/dtype.js";

/** How {@link formatValues} shortens large tensors. */
export interface FormatOptions {
  /** Above this many elements, each axis shows its first and last `edgeItems` entries. Default 1000. */
  readonly threshold?: number;
  /** Entries kept at each end of a summarized axis. Default 3. */
  readonly edgeItems?: number;
  /** Significant digits of non-integer floats. Default 6. */
  readonly precision?: number;
}

/** Options of `Tensor.print`: how to format, and where the text goes. */
export interface PrintOptions extends FormatOptions {
  /** Receives the whole text (default `console.log`). */
  readonly log?: (text: string) => void;
}

/**
 * `options` as {@link FormatOptions} with defaults (threshold 1000, 3 edge items, 6 digits),
 * known keys only (`allowed`), each a non-negative integer (precision 1..100).
 * @throws ValueError naming `op`, the bad option and what to pass.
 */
export function checkFormatOptions(op: string, options: unknown, allowed: readonly string[]): { threshold: number; edge: number; precision: number } {
  const opts = checkOptions(op, options, allowed) as Partial<Record<keyof FormatOptions, unknown>>;
  return {
    threshold: opts.threshold === undefined ? 1000 : checkInteger(op, "options.threshold", opts.threshold, 0),
    edge: Math.max(1, opts.edgeItems === undefined ? 3 : checkInteger(op, "options.edgeItems", opts.edgeItems, 0)),
    precision: opts.precision === undefined ? 6 : checkInteger(op, "options.precision", opts.precision, 1, 100),
  };
}

/** One element as text: `true`/`false` for bool, integers as is, floats to `precision` digits. */
function formatElement(v: number, isBool: boolean, isFloat: boolean, integral: boolean, precision: number): string {
  if (isBool) return v !== 0 ? "true" : "false";
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "Infinity";
  if (v === -Infinity) return "-Infinity";
  if (Object.is(v, -0)) return "-0";
  if (!isFloat || integral) return String(v);
  const abs = Math.abs(v);
  if (abs !== 0 && (abs >= 1e8 || abs < 1e-4)) return v.toExponential(Math.max(0, precision - 1)).replace(/\.?0+e/, "e");
  return String(Number(v.toPrecision(precision)));
}

/**
 * The values of a tensor of `shape` (row-major) as NumPy prints them: `[[1, 2],\n [3, 4]]`; a
 * scalar is its value alone. Float tensors whose finite values are all integers print without
 * decimals. Summarizes with `...` above `threshold` elements.
 */
export function formatValues(values: ArrayLike<number>, shape: readonly number[], dtype: string, options: FormatOptions = {}): string {
  const op = "formatValues";
  if (typeof values !== "object" || values === null || typeof (values as { length?: unknown }).length !== "number") {
    throw new ValueError(op, `pass the values as an array or typed array, not ${describeValue(values)}`);
  }
  if (!Array.isArray(shape) || shape.some((d) => !Number.isSafeInteger(d) || d < 0)) {
    throw new ValueError(op, `pass the shape as an array of non-negative integers, not ${describeValue(shape)}`);
  }
  const size = shape.reduce((n, d) => n * d, 1);
  if (size !== values.length) throw new ValueError(op, `${values.length} values do not fill shape [${shape.join(", ")}] (${size} elements); pass values of the shape's size`);
  checkDTypeName(op, dtype);
  const { threshold, edge, precision } = checkFormatOptions(op, options, ["threshold", "edgeItems", "precision"]);
  const isBool = dtype === "bool";
  const isFloat = dtype === "f32" || dtype === "f16";
  let integral = true;
  for (let i = 0; i < values.length; i++) {
    const v = values[i] ?? 0;
    if (Number.isFinite(v) && !Number.isInteger(v)) {
      integral = false;
      break;
    }
  }
  const summarize = values.length > threshold;
  const strides: number[] = new Array<number>(shape.length).fill(1);
  for (let d = shape.length - 2; d >= 0; d--) strides[d] = (strides[d + 1] ?? 1) * (shape[d + 1] ?? 1);
  // The indices shown along an axis of length n (a gap, -1, where entries are left out).
  const shown = (n: number): number[] =>
    summarize && n > 2 * edge ? [...Array.from({ length: edge }, (_, i) => i), -1, ...Array.from({ length: edge }, (_, i) => n - edge + i)] : Array.from({ length: n }, (_, i) => i);
  const text = (i: number): string => formatElement(values[i] ?? 0, isBool, isFloat, integral, precision);
  // One width for every element shown, so columns line up.
  let width = 0;
  const visit = (axis: number, offset: number, fn: (offset: number) => void): void => {
    if (axis === shape.length) return fn(offset);
    for (const i of shown(shape[axis] ?? 0)) if (i >= 0) visit(axis + 1, offset + i * (strides[axis] ?? 1), fn);
  };
  visit(0, 0, (o) => {
    width = Math.max(width, text(o).length);
  });
  if (shape.length === 0) return text(0);
  const render = (axis: number, offset: number, indent: string): string => {
    const n = shape[axis] ?? 0;
    const parts = shown(n).map((i) => {
      if (i < 0) return "...";
      const o = offset + i * (strides[axis] ?? 1);
      return axis === shape.length - 1 ? text(o).padStart(width) : render(axis + 1, o, `${indent} `);
    });
    if (axis === shape.length - 1) return `[${parts.join(", ")}]`;
    const newlines = "\n".repeat(Math.max(1, shape.length - axis - 1));
    return `[${parts.join(`,${newlines}${indent} `)}]`;
  };
  return render(0, 0, "");
}
