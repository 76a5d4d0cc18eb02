import { UnsupportedError } from "@weft/environment";
import type { WgslBuilder } from "./builder.js";

/**
 * Where a kernel finds a tensor's elements: shape, element strides and element offset, all baked
 * into the generated source (so they are part of the kernel key).
 */
export interface StridedLayout {
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  readonly offset: number;
}

/**
 * `layout`'s strides aligned to a reference shape of higher or equal rank (numpy broadcasting):
 * missing leading dims and size-1 dims that the reference grows get stride 0.
 */
export function broadcastStrides(layout: StridedLayout, ref: readonly number[]): number[] {
  const lead = ref.length - layout.shape.length;
  return ref.map((size, d) => {
    const src = d - lead;
    if (src < 0) return 0;
    const own = layout.shape[src] ?? 1;
    if (own !== size && own !== 1) {
      throw new UnsupportedError(`broadcast of [${layout.shape.join(", ")}] to [${ref.join(", ")}]`, "shapes must be equal or 1 per dim");
    }
    return own === size && size !== 1 ? (layout.strides[src] ?? 0) : 0;
  });
}

/** Whether `layout` addresses the reference elements in order (index = offset + linear index). */
export function isIdentityLayout(layout: StridedLayout, ref: readonly number[]): boolean {
  if (layout.shape.length !== ref.length || layout.shape.some((s, d) => s !== ref[d])) return false;
  let expected = 1;
  for (let d = ref.length - 1; d >= 0; d--) {
    const size = ref[d] ?? 1;
    if (size !== 1 && layout.strides[d] !== expected) return false;
    expected *= size;
  }
  return true;
}

/**
 * Emits `let <prefix>d = …;` coordinates of row-major `linear` in `shape` and returns their names
 * (dims of size 1 get the literal `0u`).
 */
export function emitCoords(w: WgslBuilder, linear: string, shape: readonly number[], prefix: string): string[] {
  const names = shape.map((size, d) => (size === 1 ? "0u" : `${prefix}${d}`));
  let rem = linear;
  let remIsName = true;
  for (let d = shape.length - 1; d >= 0; d--) {
    const size = shape[d] ?? 1;
    if (size === 1) continue;
    const outer = shape.slice(0, d).some((s) => s !== 1);
    if (!outer) {
      w.line(`let ${prefix}${d} = ${rem};`);
      break;
    }
    w.line(`let ${prefix}${d} = ${rem} % ${size}u;`);
    const next = `${prefix}r${d}`;
    w.line(`let ${next} = ${rem} / ${size}u;`);
    rem = next;
    remIsName = true;
  }
  void remIsName;
  return names;
}

/** `offset + Σ coords[d]·strides[d]` as WGSL (`u32`), skipping zero strides. */
export function offsetExpr(coords: readonly string[], strides: readonly number[], offset: number): string {
  const terms: string[] = [];
  coords.forEach((c, d) => {
    const s = strides[d] ?? 0;
    if (s === 0 || c === "0u") return;
    terms.push(s === 1 ? c : `${c} * ${s}u`);
  });
  if (offset !== 0 || terms.length === 0) terms.push(`${offset}u`);
  return terms.join(" + ");
}

/** Checks that every element index of a kernel fits a `u32`. */
export function checkIndexRange(elements: number, op: string): void {
  if (elements > 0xffffffff) {
    throw new UnsupportedError(`${op} over ${elements} elements`, "WebGPU kernels index with u32; split the tensor");
  }
}
