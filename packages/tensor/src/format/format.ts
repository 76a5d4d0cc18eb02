/**
 * Printing tensors: the text `Tensor.print()` writes, NumPy-style — nested brackets, one row per
 * line, columns aligned, large tensors summarized with `...`.
 *
 * @module
 */

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
  const threshold = options.threshold ?? 1000;
  const edge = Math.max(1, options.edgeItems ?? 3);
  const precision = options.precision ?? 6;
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
