/**
 * The scalar semantics of every elementwise op, per dtype: the single definition both the
 * unfused kernels and the fused elementwise kernel evaluate, so fused and unfused results are
 * bit-identical.
 *
 * @remarks
 * **Value domain.** Values travel as JS numbers. After every op the result is brought into the
 * output dtype's domain by {@link convert}: `f32` values are rounded to f32 (`Math.fround`), so a
 * fused chain rounds exactly where the unfused ops would store; `i32`/`u32` hold integers in range;
 * `bool` holds 0 or 1.
 * **The semantics table.** Every rule here is a row of `docs/semantics.md`, the one table every
 * backend follows (the WebGPU backend implements the same rows in WGSL); change both or neither.
 * Anyone rewriting the CPU kernels calls these functions (or reproduces them exactly).
 * **Floats follow IEEE 754** (NaN and ±Inf propagate; `x / 0` is ±Inf or NaN; `pow` follows
 * C99 Annex F / NumPy: `pow(x, ±0) = 1` and `pow(1, y) = 1` even for NaN, `pow(-1, ±Inf) = 1`);
 * float `mod` is floored (NumPy's `np.mod`: the sign of the divisor; NaN for a zero divisor or an
 * infinite dividend; `a mod ±Inf` is `a` when `a` has the divisor's sign, else `±Inf`; a zero
 * result has the divisor's sign); float `floorDiv` is NumPy's `npy_floor_divide`, step by step in
 * f32 ({@link numpyFloorDiv}).
 * **Integer arithmetic wraps** (two's complement, like WGSL): `add`/`sub`/`mul`/`neg`/`pow`.
 * Integer `div` truncates toward zero, integer `mod` and `floorDiv` are floored; all three give 0
 * for a zero divisor (NumPy's answer for `//` and `%`), and `MIN / -1` wraps to `MIN`.
 * **Conversions** (`cast`, and float results stored into an integer dtype) truncate toward zero and
 * saturate (NaN → 0); integer-to-integer casts wrap; anything to `bool` is `!= 0` (NaN → true).
 *
 * @module
 */
import type { BinaryOp, DType, UnaryOp } from "@weft/fusion";
import { UnsupportedError } from "@weft/environment";
import { erf, gelu, roundHalfEven } from "./special.js";

/** A scalar function of one value. */
export type UnaryFn = (x: number) => number;
/** A scalar function of two values. */
export type BinaryFn = (a: number, b: number) => number;

const I32_MIN = -2147483648;
const I32_MAX = 2147483647;
const U32_MAX = 4294967295;

/** Whether `dtype` is an integer type for arithmetic (`bool` counts as one). */
export function isIntegerDType(dtype: DType): boolean {
  return dtype === "i32" || dtype === "u32" || dtype === "bool";
}

/** Throws the backend's `f16` refusal (see the package README). */
export function rejectF16(what: string): never {
  throw new UnsupportedError("f16 on the CPU backend", `${what}: use f32 (the CPU backend stores f32, i32, u32 and bool)`);
}

/** {@link convert} into i32: truncate toward zero, saturate, NaN → 0. */
function toI32(x: number): number {
  if (x !== x) return 0;
  return x <= I32_MIN ? I32_MIN : x >= I32_MAX ? I32_MAX : Math.trunc(x) | 0;
}

/** {@link convert} into u32: truncate toward zero, saturate, NaN → 0. */
function toU32(x: number): number {
  if (x !== x) return 0;
  return x <= 0 ? 0 : x >= U32_MAX ? U32_MAX : Math.trunc(x) >>> 0;
}

/** {@link convert} into bool: `x != 0` (NaN → true). */
function toBool(x: number): number {
  return x !== 0 ? 1 : 0;
}

/**
 * Brings any number into `dtype`'s domain with cast semantics: f32 rounds; i32/u32 truncate
 * toward zero and saturate (NaN → 0); bool is `x != 0` (NaN → true).
 */
export function convert(x: number, dtype: DType): number {
  switch (dtype) {
    case "f32":
      return Math.fround(x);
    case "i32":
      return toI32(x);
    case "u32":
      return toU32(x);
    case "bool":
      return toBool(x);
    case "f16":
      return rejectF16("convert");
    default:
      return dtype satisfies never;
  }
}

/**
 * {@link convert} for one `dtype`, as a function of one value: the same definitions, without the
 * per-call switch, so a kernel's hot loop (generated code or the interpreter) can call it per
 * element and V8 inlines it.
 */
export function converter(dtype: DType): UnaryFn {
  switch (dtype) {
    case "f32":
      return Math.fround;
    case "i32":
      return toI32;
    case "u32":
      return toU32;
    case "bool":
      return toBool;
    case "f16":
      return rejectF16("convert");
    default:
      return dtype satisfies never;
  }
}

/** Wraps an exact integer into `dtype` (two's complement for i32, modulo 2³² for u32). */
function wrap(x: number, dtype: DType): number {
  return dtype === "i32" ? x | 0 : dtype === "u32" ? x >>> 0 : x !== 0 ? 1 : 0;
}

/** The `cast` of a value of `from` into `to` (see the module doc for the rules). */
export function castFn(from: DType, to: DType): UnaryFn {
  if (from === "f16" || to === "f16") rejectF16("cast");
  if (isIntegerDType(from) && to !== "f32" && to !== "bool") return (x) => wrap(x, to);
  return converter(to);
}

function floatUnary(op: UnaryOp): UnaryFn {
  switch (op) {
    case "neg": return (x) => -x;
    case "abs": return Math.abs;
    case "exp": return Math.exp;
    case "log": return Math.log;
    case "log2": return Math.log2;
    case "log1p": return Math.log1p;
    case "expm1": return Math.expm1;
    case "sqrt": return Math.sqrt;
    case "rsqrt": return (x) => 1 / Math.sqrt(x);
    case "sin": return Math.sin;
    case "cos": return Math.cos;
    case "tan": return Math.tan;
    case "tanh": return Math.tanh;
    case "sigmoid": return (x) => 1 / (1 + Math.exp(-x));
    case "relu": return (x) => (x > 0 ? x : x !== x ? x : 0);
    case "gelu": return gelu;
    case "silu": return (x) => x * (1 / (1 + Math.exp(-x)));
    case "erf": return erf;
    case "floor": return Math.floor;
    case "ceil": return Math.ceil;
    case "round": return roundHalfEven;
    case "sign": return (x) => (x > 0 ? 1 : x < 0 ? -1 : x);
    case "reciprocal": return (x) => 1 / x;
    case "square": return (x) => x * x;
    case "not": return (x) => (x === 0 ? 1 : 0);
    default: return op satisfies never;
  }
}

function integerUnary(op: UnaryOp, dtype: DType): UnaryFn {
  const signed = dtype === "i32";
  switch (op) {
    case "neg": return (x) => wrap(-x, dtype);
    case "abs": return signed ? (x) => Math.abs(x) | 0 : (x) => x;
    case "square": return (x) => wrap(Math.imul(x, x), dtype);
    case "relu": return (x) => (x > 0 ? x : 0);
    case "sign": return (x) => (x > 0 ? 1 : x < 0 ? -1 : 0);
    case "floor":
    case "ceil":
    case "round": return (x) => x;
    case "reciprocal": return (x) => integerDiv(1, x, dtype);
    case "not": return (x) => (x === 0 ? 1 : 0);
    default: return floatUnary(op); // transcendental of an integer: computed in f64, then converted
  }
}

/** The function computing `op` on values of `dtype` (before conversion to the output dtype). */
export function unaryFn(op: UnaryOp, dtype: DType): UnaryFn {
  if (dtype === "f16") rejectF16(`unary ${op}`);
  return dtype === "f32" ? floatUnary(op) : integerUnary(op, dtype);
}

function integerDiv(a: number, b: number, dtype: DType): number {
  if (b === 0) return 0;
  return wrap(Math.trunc(a / b), dtype);
}

/**
 * `x ** y` with IEEE 754 / C99 Annex F special cases (NumPy's), which differ from JavaScript's
 * `Math.pow` in three places: `pow(1, y) = 1` for every `y` (NaN and ±Inf included) and
 * `pow(-1, ±Inf) = 1` (JavaScript gives NaN for all three).
 */
export function ieeePow(x: number, y: number): number {
  if (x === 1) return 1;
  if (x === -1 && (y === Infinity || y === -Infinity)) return 1;
  return Math.pow(x, y);
}

/** Floored modulo; a zero result takes the divisor's sign (`-7 mod 7 = +0`, `7 mod -7 = -0`), as NumPy's `npy_divmod`. */
function flooredMod(a: number, b: number): number {
  const r = a % b;
  if (r === 0) return b < 0 || Object.is(b, -0) ? -0 : 0;
  return r < 0 !== b < 0 ? r + b : r;
}

/**
 * NumPy's float `floor_divide` (`npy_floor_divide` → `npy_divmod` in `npymath`), every step
 * rounded to f32 as NumPy's `float32` loop rounds it, for f32 operands `a`, `b`:
 * `b == 0` gives `a / b`; else `mod = fmod(a, b)`, `div = (a − mod) / b`, minus 1 when `mod ≠ 0`
 * has the other sign than `b`; then `floor(div)`, plus 1 when `div − floor(div) > 0.5`; a zero
 * quotient is `copysign(0, a / b)`. So `1 // 0.1` is 9 (the exact remainder is `0.09999999`),
 * `±Inf // x` is NaN and `-3 // Inf` is -1.
 *
 * @remarks
 * **Why it is exact in JavaScript.** `a % b` on two f32 values is the exact `fmod` (the remainder
 * is always representable), and every other step is one `+`, `−` or `/` of two f32 values
 * computed in f64 and then rounded to f32, which equals the correctly rounded f32 operation
 * (double rounding is innocuous for `+ − × ÷` when 53 ≥ 2·24 + 2, Figueroa 1995).
 */
export function numpyFloorDiv(a: number, b: number): number {
  if (b === 0 || a !== a || b !== b) return a / b;
  const f = Math.fround;
  const mod = a % b;
  let div = f(f(a - mod) / b);
  if (mod !== 0 && (b < 0) !== (mod < 0)) div = f(div - 1);
  if (div === 0) return (a < 0 || Object.is(a, -0)) !== (b < 0) ? -0 : 0;
  let floored = Math.floor(div);
  if (f(div - floored) > 0.5) floored = f(floored + 1);
  return floored;
}

function integerPow(base: number, exp: number, dtype: DType): number {
  if (exp < 0) return base === 1 ? 1 : base === -1 ? (exp % 2 === 0 ? 1 : -1) : 0;
  let result = 1;
  let b = base;
  let e = exp;
  while (e > 0) {
    if (e & 1) result = wrap(Math.imul(result, b), dtype);
    b = wrap(Math.imul(b, b), dtype);
    e = Math.floor(e / 2);
  }
  return result;
}

/**
 * IEEE 754-2019 `maximum`/`minimum` (NaN propagates, +0 above -0): exactly JavaScript's
 * `Math.max`/`Math.min` of two arguments. Wrappers that returned the global `NaN` made V8 box
 * every result of a kernel's loop into a heap number (one allocation per element).
 */
const nanMax: BinaryFn = (a, b) => Math.max(a, b);
const nanMin: BinaryFn = (a, b) => Math.min(a, b);

function sharedBinary(op: BinaryOp): BinaryFn | undefined {
  switch (op) {
    case "eq": return (a, b) => (a === b ? 1 : 0);
    case "ne": return (a, b) => (a !== b ? 1 : 0);
    case "lt": return (a, b) => (a < b ? 1 : 0);
    case "le": return (a, b) => (a <= b ? 1 : 0);
    case "gt": return (a, b) => (a > b ? 1 : 0);
    case "ge": return (a, b) => (a >= b ? 1 : 0);
    case "and": return (a, b) => (a !== 0 && b !== 0 ? 1 : 0);
    case "or": return (a, b) => (a !== 0 || b !== 0 ? 1 : 0);
    case "xor": return (a, b) => ((a !== 0) !== (b !== 0) ? 1 : 0);
    case "atan2": return Math.atan2;
    default: return undefined;
  }
}

/** The function computing `op` on two values of `dtype` (before conversion to the output dtype). */
export function binaryFn(op: BinaryOp, dtype: DType): BinaryFn {
  if (dtype === "f16") rejectF16(`binary ${op}`);
  const shared = sharedBinary(op);
  if (shared !== undefined) return shared;
  if (dtype === "f32") {
    switch (op) {
      case "add": return (a, b) => a + b;
      case "sub": return (a, b) => a - b;
      case "mul": return (a, b) => a * b;
      case "div": return (a, b) => a / b;
      case "pow": return ieeePow;
      case "maximum": return nanMax;
      case "minimum": return nanMin;
      case "mod": return flooredMod;
      case "floorDiv": return numpyFloorDiv;
      default: throw new UnsupportedError(`binary ${op} on f32`);
    }
  }
  switch (op) {
    case "add": return (a, b) => wrap(a + b, dtype);
    case "sub": return (a, b) => wrap(a - b, dtype);
    case "mul": return (a, b) => wrap(Math.imul(a, b), dtype);
    case "div": return (a, b) => integerDiv(a, b, dtype);
    case "pow": return (a, b) => integerPow(a, b, dtype);
    case "maximum": return Math.max;
    case "minimum": return Math.min;
    case "mod": return (a, b) => (b === 0 ? 0 : wrap(flooredMod(a, b), dtype));
    // Exact: |a / b| < 2^32, so the f64 quotient never rounds across an integer.
    case "floorDiv": return (a, b) => (b === 0 ? 0 : wrap(Math.floor(a / b), dtype));
    default: throw new UnsupportedError(`binary ${op} on ${dtype}`);
  }
}
