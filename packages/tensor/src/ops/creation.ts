/**
 * Creation ops: `tensor` (uploads host values), `zeros`/`ones`/`full`, `arange`, `linspace`,
 * `eye`, `rand`/`randn` (a counter-based generator on the device, keyed by a seed) and the
 * `*Like` variants.
 *
 * @remarks
 * **Seeds.** `rand`/`randn` take `{ seed }`; without one they take the next value of a global
 * counter, so two calls differ but a program that calls `seed(n)` first is reproducible. Both the
 * device under test and the CPU oracle use the same generator for the same seed.
 * **Default dtype.** `f32` everywhere (docs/design.md#user-api), `bool` when the values are booleans.
 *
 * @module
 */
import type { DType, TypedArray } from "@weft/fusion";
import { type Device, resolveDevice } from "../device/device.js";
import { arrayConstructorFor, dtypeOfArray, floatToHalf, isFloat } from "../dtype/dtype.js";
import { DTypeError, ShapeError, ValueError, formatShape } from "../errors/tensor-errors.js";
import { type NestedArray, checkShape, flattenNested, sizeOf } from "../shape/shape.js";
import { checkOperands, output, register, release } from "../tensor/record.js";
import { Tensor } from "../tensor/tensor.js";
import { binary, cast, checkDType } from "./elementwise.js";
import { reshapeUnchecked } from "./layout.js";

/** Options every creation op accepts. */
export interface CreationOptions {
  /** The element type (default `f32`; `bool` for boolean values). */
  readonly dtype?: DType;
  /** The device (default: the current one, `weft.device()`). */
  readonly device?: Device;
}

/** Options of {@link tensor}. */
export interface TensorOptions extends CreationOptions {
  /** The shape of flat values (a typed array or a flat list); checked against the length. */
  readonly shape?: readonly number[];
}

/** What {@link tensor} accepts: nested arrays, flat typed arrays, or one number/boolean. */
export type TensorLike = NestedArray | ArrayBufferView;

function toTyped(op: string, values: ArrayLike<number | boolean>, dtype: DType): TypedArray {
  const n = values.length;
  const out = new (arrayConstructorFor(dtype))(n);
  for (let i = 0; i < n; i++) {
    const raw = values[i];
    const v = typeof raw === "boolean" ? (raw ? 1 : 0) : (raw as number);
    switch (dtype) {
      case "bool":
        out[i] = v !== 0 && !Number.isNaN(v) ? 1 : 0;
        break;
      case "f16":
        out[i] = floatToHalf(v);
        break;
      case "f32":
        out[i] = v;
        break;
      case "i32":
      case "u32": {
        const lo = dtype === "i32" ? -(2 ** 31) : 0;
        const hi = dtype === "i32" ? 2 ** 31 - 1 : 2 ** 32 - 1;
        if (!Number.isInteger(v) || v < lo || v > hi) {
          throw new DTypeError(op, `value ${v} at flat index ${i} is not representable as ${dtype}; round it or use dtype "f32"`);
        }
        out[i] = v;
        break;
      }
      default:
        dtype satisfies never;
    }
  }
  return out;
}

/**
 * A tensor holding `values`: nested arrays (shape inferred, raggedness rejected), a typed array
 * (flat; `{ shape }` gives its shape, dtype inferred from its type: `Float32Array`/`Float64Array`
 * → f32, `Int32Array` → i32, `Uint32Array` → u32, `Uint8Array` → bool) or a single number/boolean.
 * @throws ShapeError for ragged arrays or a `shape` that does not match the element count.
 */
export function tensor(values: TensorLike, options: TensorOptions = {}): Tensor {
  const op = "tensor";
  const device = resolveDevice(op, options.device);
  let flat: ArrayLike<number | boolean>;
  let shape: number[];
  let inferred: DType;
  if (ArrayBuffer.isView(values)) {
    if (values instanceof DataView) throw new ValueError(op, "a DataView has no element type; pass a typed array");
    const kind = dtypeOfArray(values);
    if (kind === undefined) throw new ValueError(op, `${values.constructor.name} is not supported; pass a Float32Array, Int32Array, Uint32Array or Uint8Array`);
    flat = values as unknown as ArrayLike<number>;
    shape = [flat.length];
    inferred = kind;
  } else {
    const nested = flattenNested(op, values);
    flat = nested.flat;
    shape = nested.shape;
    inferred = nested.flat.length > 0 && nested.flat.every((v) => typeof v === "boolean") ? "bool" : "f32";
  }
  if (options.shape !== undefined) {
    const target = checkShape(op, options.shape);
    if (sizeOf(target) !== flat.length) {
      throw new ShapeError(op, [shape, target], `${flat.length} values do not fill shape ${formatShape(target)} (${sizeOf(target)} elements); pass a matching shape`);
    }
    shape = [...target];
  }
  const dtype = checkDType(op, options.dtype ?? inferred, device);
  const data = toTyped(op, flat, dtype);
  return Tensor.wrap(device.fusion.upload({ data, shape, dtype }), device);
}

function fill(op: string, shapeArg: readonly number[], value: number, options: CreationOptions, dflt: DType = "f32"): Tensor {
  const device = resolveDevice(op, options.device);
  const shape = checkShape(op, shapeArg);
  const dtype = checkDType(op, options.dtype ?? dflt, device);
  if (Number.isNaN(value) && !isFloat(dtype)) throw new DTypeError(op, `NaN does not fit dtype ${dtype}; use f32`);
  if ((dtype === "i32" || dtype === "u32") && !Number.isInteger(value)) {
    throw new DTypeError(op, `value ${value} is not an integer and does not fit dtype ${dtype}; use f32`);
  }
  const v = dtype === "bool" ? (value !== 0 ? 1 : 0) : value;
  return register(device, { kind: "full", value: v, out: output(device, shape, dtype) });
}

/** A tensor of zeros. */
export function zeros(shape: readonly number[], options: CreationOptions = {}): Tensor {
  return fill("zeros", shape, 0, options);
}

/** A tensor of ones. */
export function ones(shape: readonly number[], options: CreationOptions = {}): Tensor {
  return fill("ones", shape, 1, options);
}

/** A tensor filled with `value` (a boolean value gives a `bool` tensor by default). */
export function full(shape: readonly number[], value: number | boolean, options: CreationOptions = {}): Tensor {
  return fill("full", shape, typeof value === "boolean" ? (value ? 1 : 0) : value, options, typeof value === "boolean" ? "bool" : "f32");
}

/**
 * A rank-0 tensor (shape `[]`) holding `value`: `f32` by default, `bool` for a boolean; `{ dtype }`
 * and `{ device }` as for every creation op. Recorded like `full([], value)` (no upload).
 * @throws ValueError when `value` is not a number or a boolean (use `tensor` for arrays).
 */
export function scalar(value: number | boolean, options: CreationOptions = {}): Tensor {
  if (typeof value !== "number" && typeof value !== "boolean") {
    throw new ValueError("scalar", `expects a number or a boolean, got ${value === null ? "null" : typeof value}; use weft.tensor(values) for arrays`);
  }
  return fill("scalar", [], typeof value === "boolean" ? (value ? 1 : 0) : value, options, typeof value === "boolean" ? "bool" : "f32");
}

function likeOptions(op: string, x: Tensor, options: CreationOptions): CreationOptions {
  checkOperands(op, [x]);
  return { dtype: options.dtype ?? x.dtype, device: options.device ?? x.device };
}

/** Zeros with `x`'s shape, dtype and device. */
export function zerosLike(x: Tensor, options: CreationOptions = {}): Tensor {
  return fill("zerosLike", x.shape, 0, likeOptions("zerosLike", x, options));
}

/** Ones with `x`'s shape, dtype and device. */
export function onesLike(x: Tensor, options: CreationOptions = {}): Tensor {
  return fill("onesLike", x.shape, 1, likeOptions("onesLike", x, options));
}

/** `value` with `x`'s shape, dtype and device. */
export function fullLike(x: Tensor, value: number | boolean, options: CreationOptions = {}): Tensor {
  return fill("fullLike", x.shape, typeof value === "boolean" ? Number(value) : value, likeOptions("fullLike", x, options));
}

/**
 * `start, start + step, …` while `< stop` (or `> stop` for a negative step). With one argument,
 * `arange(n)` is `0 … n-1`.
 */
export function arange(start: number, stop?: number, step = 1, options: CreationOptions = {}): Tensor {
  const op = "arange";
  const device = resolveDevice(op, options.device);
  const [lo, hi] = stop === undefined ? [0, start] : [start, stop];
  if (![lo, hi, step].every(Number.isFinite)) throw new ValueError(op, `start ${lo}, stop ${hi} and step ${step} must be finite`);
  if (step === 0) throw new ValueError(op, "step must not be 0");
  const dtype = checkDType(op, options.dtype ?? "f32", device);
  if ((dtype === "i32" || dtype === "u32" || dtype === "bool") && !(Number.isInteger(lo) && Number.isInteger(step))) {
    throw new DTypeError(op, `start ${lo} and step ${step} must be integers for dtype ${dtype}; use f32`);
  }
  const n = Math.max(0, Math.ceil((hi - lo) / step));
  if (dtype === "u32" && n > 0 && lo + (n - 1) * step < 0) {
    throw new DTypeError(op, `the range reaches ${lo + (n - 1) * step}, which u32 cannot hold; use i32`);
  }
  return register(device, { kind: "arange", start: lo, step, out: output(device, [n], dtype) });
}

/** `num` evenly spaced values from `start` to `stop` inclusive (f32). */
export function linspace(start: number, stop: number, num: number, options: CreationOptions = {}): Tensor {
  const op = "linspace";
  const device = resolveDevice(op, options.device);
  if (!Number.isInteger(num) || num < 0) throw new ValueError(op, `num ${num} must be a non-negative integer`);
  if (!Number.isFinite(start) || !Number.isFinite(stop)) throw new ValueError(op, `start ${start} and stop ${stop} must be finite`);
  const dtype = checkDType(op, options.dtype ?? "f32", device);
  if (!isFloat(dtype)) throw new DTypeError(op, `dtype ${dtype} cannot hold evenly spaced values; use f32 and cast`);
  const step = num > 1 ? (stop - start) / (num - 1) : 0;
  return register(device, { kind: "arange", start, step, out: output(device, [num], dtype) });
}

/** An `n × m` identity matrix (`m` defaults to `n`), composed as `arange(n)[:, None] == arange(m)`. */
export function eye(n: number, m = n, options: CreationOptions = {}): Tensor {
  const op = "eye";
  const device = resolveDevice(op, options.device);
  if (!Number.isInteger(n) || n < 0 || !Number.isInteger(m) || m < 0) throw new ValueError(op, `sizes ${n} × ${m} must be non-negative integers`);
  const dtype = checkDType(op, options.dtype ?? "f32", device);
  const rows = arange(0, n, 1, { dtype: "i32", device });
  const cols = arange(0, m, 1, { dtype: "i32", device });
  const column = reshapeUnchecked(rows, [n, 1]);
  const mask = binary("eq", column, cols);
  const out = cast(mask, dtype);
  release(rows, cols, column, mask);
  return out;
}

/** The global seed counter behind `rand`/`randn` without `{ seed }`. Only grows between `seed()` calls. */
let seedCounter = 0x5eed;

/** Sets the seed the next `rand`/`randn` without an explicit seed uses (later calls count up from it). */
export function seed(value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new ValueError("seed", `seed ${value} must be a non-negative integer`);
  seedCounter = value;
}

/** Options of `rand`/`randn`. */
export interface RandomOptions extends CreationOptions {
  /** The generator's key; the same seed and shape give the same values on every backend. */
  readonly seed?: number;
}

function random(op: string, shapeArg: readonly number[], distribution: "uniform" | "normal", a: number, b: number, options: RandomOptions): Tensor {
  const device = resolveDevice(op, options.device);
  const shape = checkShape(op, shapeArg);
  const dtype = checkDType(op, options.dtype ?? "f32", device);
  if (!isFloat(dtype)) throw new DTypeError(op, `random values need a float dtype, got ${dtype}; cast the result instead`);
  if (options.seed !== undefined && (!Number.isSafeInteger(options.seed) || options.seed < 0)) {
    throw new ValueError(op, `seed ${options.seed} must be a non-negative integer`);
  }
  const s = options.seed ?? seedCounter++;
  return register(device, { kind: "random", distribution, seed: s >>> 0, a, b, out: output(device, shape, dtype) });
}

/** Uniform values on `[0, 1)`. */
export function rand(shape: readonly number[], options: RandomOptions = {}): Tensor {
  return random("rand", shape, "uniform", 0, 1, options);
}

/** Standard normal values (mean 0, std 1). */
export function randn(shape: readonly number[], options: RandomOptions = {}): Tensor {
  return random("randn", shape, "normal", 0, 1, options);
}

/** Uniform values with `x`'s shape and device. */
export function randLike(x: Tensor, options: RandomOptions = {}): Tensor {
  checkOperands("randLike", [x]);
  return random("randLike", x.shape, "uniform", 0, 1, { ...options, device: options.device ?? x.device });
}

/** Normal values with `x`'s shape and device. */
export function randnLike(x: Tensor, options: RandomOptions = {}): Tensor {
  checkOperands("randnLike", [x]);
  return random("randnLike", x.shape, "normal", 0, 1, { ...options, device: options.device ?? x.device });
}
