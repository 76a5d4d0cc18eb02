/**
 * Element types of the user API and the rules that combine them.
 *
 * @remarks
 * **Promotion table** (the lattice is `bool < u32 < i32 < f32`; `f16` sits beside `f32`):
 *
 * | a \ b | bool | u32 | i32 | f32 | f16 |
 * |-------|------|-----|-----|-----|-----|
 * | bool  | bool | u32 | i32 | f32 | f16 |
 * | u32   | u32  | u32 | i32 | f32 | f32 |
 * | i32   | i32  | i32 | i32 | f32 | f32 |
 * | f32   | f32  | f32 | f32 | f32 | f32 |
 * | f16   | f16  | f32 | f32 | f32 | f16 |
 *
 * - `u32` with `i32` gives `i32` (values ≥ 2^31 wrap; the lattice is a choice, not NumPy's `i64`).
 * - JS numbers are *weak*: a scalar takes the tensor's dtype, except that a non-integer scalar
 *   (or a non-finite one) with an integer or bool tensor promotes the result to `f32`, and an
 *   integer scalar with a `bool` tensor in arithmetic promotes to `i32`. An integer scalar must
 *   be a value of the dtype it computes in (NEP 50): see `ops/elementwise.ts` and
 *   `docs/semantics.md`, "Integer scalars" (compares are always exact).
 * - `div`, `pow`, `mean`, `variance`, `std`, `logSumExp`, `softmax`, `matmul` and the float unary
 *   functions (`exp`, `log`, `sqrt`, `sin`, …) compute in `f32` for integer and bool inputs.
 * - Compare ops produce `bool`; logical ops take and produce `bool`.
 *
 * @module
 */
import { checkBoolean, checkNumber, describeValue } from "@weft/environment";
import type { DType, DTypeArrays } from "@weft/fusion";
import { DTypeError } from "../errors/tensor-errors.js";

export type { DType } from "@weft/fusion";

/** Every dtype the API knows, in promotion order (f16 last: it is optional per device). */
export const DTYPES: readonly DType[] = ["bool", "u32", "i32", "f32", "f16"];

/** Whether `value` names a dtype. */
export function isDType(value: unknown): value is DType {
  switch (value) {
    case "f32":
    case "f16":
    case "i32":
    case "u32":
    case "bool":
      return true;
    default:
      return false;
  }
}

/** `value` when it names a dtype; else a `DTypeError` naming `op` and the dtypes. */
export function checkDTypeName(op: string, value: unknown): DType {
  if (isDType(value)) return value;
  throw new DTypeError(op, `unknown dtype ${describeValue(value)}; use one of ${DTYPES.map((d) => `"${d}"`).join(", ")}`);
}

/** Floating-point dtypes. @throws DTypeError for a string that is not a dtype. */
export function isFloat(dtype: DType): boolean {
  if (dtype === "f32" || dtype === "f16") return true;
  if (!isDType(dtype)) checkDTypeName("isFloat", dtype);
  return false;
}

/** Integer dtypes (`bool` is not one). @throws DTypeError for a string that is not a dtype. */
export function isInteger(dtype: DType): boolean {
  if (dtype === "i32" || dtype === "u32") return true;
  if (!isDType(dtype)) checkDTypeName("isInteger", dtype);
  return false;
}

const RANK: Record<DType, number> = { bool: 0, u32: 1, i32: 2, f16: 3, f32: 4 };

/** The common dtype of two tensor operands; see the table in the module doc. */
export function promoteTypes(a: DType, b: DType): DType {
  if (a === b) return checkDTypeName("promoteTypes", a);
  checkDTypeName("promoteTypes", a);
  checkDTypeName("promoteTypes", b);
  if (a === "f16" || b === "f16") {
    const other = a === "f16" ? b : a;
    return other === "bool" ? "f16" : "f32";
  }
  return RANK[a] >= RANK[b] ? a : b;
}

/**
 * The dtype a tensor of `dtype` and the weak JS scalar `value` compute in (module doc rules).
 * `arithmetic` is true for ops whose result is a number (add, mul, …), false for compares.
 */
export function promoteWithScalar(dtype: DType, value: number, arithmetic: boolean): DType {
  checkDTypeName("promoteWithScalar", dtype);
  checkNumber("promoteWithScalar", "the scalar", value);
  checkBoolean("promoteWithScalar", "arithmetic", arithmetic);
  return scalarPromotion(dtype, value, arithmetic);
}

/**
 * {@link promoteWithScalar} without validating its arguments: for the library's ops, whose
 * arguments were validated where they entered (a recorded op pays no second check). Not exported
 * from the package.
 */
export function scalarPromotion(dtype: DType, value: number, arithmetic: boolean): DType {
  if (isFloat(dtype)) return dtype;
  if (!Number.isInteger(value)) return "f32";
  if (dtype === "bool" && (arithmetic || (value !== 0 && value !== 1))) return "i32";
  return dtype;
}

/**
 * The values an integer-like dtype holds, `[min, max]`: `bool` is `[0, 1]`, `u32` is
 * `[0, 2^32 - 1]`, `i32` is `[-2^31, 2^31 - 1]`; `undefined` for float dtypes.
 */
export function integerRange(dtype: DType): readonly [number, number] | undefined {
  switch (dtype) {
    case "bool":
      return BOOL_RANGE;
    case "u32":
      return U32_RANGE;
    case "i32":
      return I32_RANGE;
    case "f32":
    case "f16":
      return undefined;
    default:
      return dtype satisfies never;
  }
}

const BOOL_RANGE = [0, 1] as const;
const U32_RANGE = [0, 2 ** 32 - 1] as const;
const I32_RANGE = [-(2 ** 31), 2 ** 31 - 1] as const;

/** Whether the JS number `value` is exactly a value of `dtype` (any number fits a float dtype). */
export function fitsDType(value: number, dtype: DType): boolean {
  const range = integerRange(dtype);
  if (range === undefined) return true;
  return Number.isInteger(value) && value >= range[0] && value <= range[1];
}

/** The float dtype an op that only makes sense on floats computes in for `dtype`. */
export function floatTypeFor(dtype: DType): DType {
  return isFloat(dtype) ? dtype : "f32";
}

/** The typed-array constructor that holds `dtype` on the host. */
export function arrayConstructorFor(dtype: DType): {
  new (length: number): DTypeArrays[DType];
  from(values: ArrayLike<number>): DTypeArrays[DType];
} {
  switch (dtype) {
    case "f32":
      return Float32Array;
    case "f16":
      return Uint16Array;
    case "i32":
      return Int32Array;
    case "u32":
      return Uint32Array;
    case "bool":
      return Uint8Array;
    default:
      return dtype satisfies never;
  }
}

/** The dtype of a typed array the user passes to `tensor()`, or `undefined` for other kinds. */
export function dtypeOfArray(values: ArrayBufferView): DType | undefined {
  if (values instanceof Float32Array || values instanceof Float64Array) return "f32";
  if (values instanceof Int32Array || values instanceof Int16Array || values instanceof Int8Array) return "i32";
  // Unsigned arrays keep their values: canvas pixels (Uint8ClampedArray) are 0…255, not booleans.
  if (values instanceof Uint32Array || values instanceof Uint16Array || values instanceof Uint8Array || values instanceof Uint8ClampedArray) return "u32";
  return undefined;
}

/** Decodes one IEEE-754 half-precision value from its 16 bits. */
export function halfToFloat(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
  if (exponent === 0x1f) return fraction === 0 ? sign * Infinity : NaN;
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
}

/** Encodes `value` as the 16 bits of the nearest half-precision value (round to nearest even). */
export function floatToHalf(value: number): number {
  const f32 = new Float32Array([value]);
  const x = new Uint32Array(f32.buffer)[0] ?? 0;
  const sign = (x >> 16) & 0x8000;
  const exp = (x >> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant = (mant | 0x800000) >> (1 - e);
    const rounded = (mant + 0xfff + ((mant >> 13) & 1)) >> 13;
    return sign | rounded;
  }
  const rounded = mant + 0xfff + ((mant >> 13) & 1);
  if (rounded & 0x800000) {
    mant = 0;
    e += 1;
    if (e >= 0x1f) return sign | 0x7c00;
  } else {
    mant = rounded;
  }
  return sign | (e << 10) | (mant >> 13);
}
