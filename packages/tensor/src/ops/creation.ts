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
import { UnsupportedError, checkInteger, checkNumber, checkOptions, describeValue } from "@weft/environment";
import { ArangeOpIr, FullOpIr, RandomOpIr, type DType, type TypedArray } from "@weft/fusion";
import { type Device, resolveDevice } from "../device/device.js";
import { arrayConstructorFor, dtypeOfArray, fitsDType, floatToHalf, integerRange, isFloat } from "../dtype/dtype.js";
import { DTypeError, ShapeError, ValueError, formatShape } from "../errors/tensor-errors.js";
import { type NestedArray, checkShape, flattenNested, sizeOf } from "../shape/shape.js";
import { checkDeviceOption, checkTensor } from "../tensor/arguments.js";
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
        out[i] = v !== 0 ? 1 : 0; // `x != 0`, as a cast: NaN is true
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
 * (flat; `{ shape }` gives its shape) or a single number/boolean.
 *
 * @remarks
 * **Typed arrays keep their values** (`README.md` "Typed arrays"): `Float32Array`/`Float64Array` →
 * `f32` (Float64 rounds to the nearest f32), `Int8Array`/`Int16Array`/`Int32Array` → `i32`,
 * `Uint8Array`/`Uint8ClampedArray`/`Uint16Array`/`Uint32Array` → `u32` (canvas pixels stay
 * 0…255). `{ dtype }` converts instead (`{ dtype: "bool" }` gives `value != 0`); a value the
 * dtype cannot hold is a `DTypeError`. `BigInt64Array`/`BigUint64Array` throw `UnsupportedError`
 * (no 64-bit integer dtype).
 * @throws ShapeError for ragged arrays or a `shape` that does not match the element count.
 */
export function tensor(values: TensorLike, options: TensorOptions = {}): Tensor {
  const op = "tensor";
  const opts = checkOptions(op, options, ["dtype", "device", "shape"]);
  const device = resolveDevice(op, checkDeviceOption(op, opts.device));
  let flat: ArrayLike<number | boolean>;
  let shape: number[];
  let inferred: DType;
  if (ArrayBuffer.isView(values)) {
    if (values instanceof DataView) throw new ValueError(op, "a DataView has no element type; pass a typed array");
    if (values instanceof BigInt64Array || values instanceof BigUint64Array) {
      throw new UnsupportedError(
        "64-bit integer tensors",
        `${op}: ${values.constructor.name} has no matching dtype; convert it first, e.g. Int32Array.from(values, Number) when every value fits 32 bits, or Float32Array.from(values, Number)`,
      );
    }
    const kind = dtypeOfArray(values);
    if (kind === undefined) throw new ValueError(op, `${values.constructor.name} is not supported; pass a Float32Array, Float64Array, Int8/16/32Array or Uint8/8Clamped/16/32Array`);
    flat = values as unknown as ArrayLike<number>;
    shape = [flat.length];
    inferred = kind;
  } else if (typeof values !== "number" && typeof values !== "boolean" && !Array.isArray(values)) {
    throw new ValueError(op, `pass values as a number, a boolean, a nested array of them or a typed array, not ${describeValue(values)}`);
  } else {
    const nested = flattenNested(op, values);
    flat = nested.flat;
    shape = nested.shape;
    inferred = nested.flat.length > 0 && nested.flat.every((v) => typeof v === "boolean") ? "bool" : "f32";
  }
  if (opts.shape !== undefined) {
    const target = checkShape(op, opts.shape as readonly number[]);
    if (sizeOf(target) !== flat.length) {
      throw new ShapeError(op, [shape, target], `${flat.length} values do not fill shape ${formatShape(target)} (${sizeOf(target)} elements); pass a matching shape`);
    }
    shape = [...target];
  }
  const dtype = checkDType(op, opts.dtype ?? inferred, device);
  // A Float32Array for f32 (Int32Array for i32, Uint32Array for u32) holds exactly the values
  // `toTyped` would produce, so it goes to the upload as it is: every upload copies its data
  // before it returns (`FusionClient.upload`), so the tensor never aliases the caller's array,
  // and a serving request's input is not copied twice. (f16's Uint16Array and bool's Uint8Array
  // hold numbers that `toTyped` converts.)
  const data = sameValues(flat, dtype) ? flat : toTyped(op, flat, dtype);
  return Tensor.wrap(device.fusion.upload({ data, shape, dtype }), device);
}

/** Whether `flat` is a typed array whose elements are already `dtype`'s stored values. */
function sameValues(flat: ArrayLike<number | boolean>, dtype: DType): flat is TypedArray {
  return (dtype === "f32" && flat instanceof Float32Array) || (dtype === "i32" && flat instanceof Int32Array) || (dtype === "u32" && flat instanceof Uint32Array);
}

/** The fill value of `full`-like ops: a number or a boolean (as 0/1). */
function fillValue(op: string, value: unknown): number {
  if (typeof value === "boolean") return value ? 1 : 0;
  return checkNumber(op, "the fill value", value);
}

/**
 * `value` converted to `dtype` as `tensor([value], { dtype })` converts it: `bool` is `value != 0`
 * (NaN counts as true, as in NumPy); an integer dtype needs an integer in its range; floats take
 * any number (rounded to the dtype).
 * @throws DTypeError for a value an integer dtype cannot hold, naming the value, the range and the fix.
 */
export function convertScalar(op: string, value: number, dtype: DType): number {
  if (dtype === "bool") return value !== 0 ? 1 : 0;
  if (fitsDType(value, dtype)) return value;
  const [lo, hi] = integerRange(dtype) ?? [0, 0];
  throw new DTypeError(op, `value ${value} is not representable as ${dtype} (integers in [${lo}, ${hi}]); use an in-range integer or dtype "f32"`);
}

/** The creation options `fill`-like ops take, checked. */
function creationOptions(op: string, options: unknown): { dtype?: unknown; device?: Device } {
  const opts = checkOptions(op, options, ["dtype", "device"]);
  const device = checkDeviceOption(op, opts.device);
  return device === undefined ? { dtype: opts.dtype } : { dtype: opts.dtype, device };
}

function fill(op: string, shapeArg: readonly number[], value: number, options: CreationOptions, dflt: DType = "f32"): Tensor {
  const opts = creationOptions(op, options);
  const device = resolveDevice(op, opts.device);
  const shape = checkShape(op, shapeArg);
  const dtype = checkDType(op, opts.dtype ?? dflt, device);
  const v = convertScalar(op, value, dtype);
  return register(device, new FullOpIr(output(device, shape, dtype), v));
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
  return fill("full", shape, fillValue("full", value), options, typeof value === "boolean" ? "bool" : "f32");
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
  checkTensor(op, "the input", x);
  checkOperands(op, [x]);
  const opts = creationOptions(op, options);
  return { dtype: (opts.dtype as DType | undefined) ?? x.dtype, device: opts.device ?? x.device };
}

/** Zeros with `x`'s shape, dtype and device. */
export function zerosLike(x: Tensor, options: CreationOptions = {}): Tensor {
  const like = likeOptions("zerosLike", x, options);
  return fill("zerosLike", x.shape, 0, like);
}

/** Ones with `x`'s shape, dtype and device. */
export function onesLike(x: Tensor, options: CreationOptions = {}): Tensor {
  const like = likeOptions("onesLike", x, options);
  return fill("onesLike", x.shape, 1, like);
}

/** `value` with `x`'s shape, dtype and device. */
export function fullLike(x: Tensor, value: number | boolean, options: CreationOptions = {}): Tensor {
  const like = likeOptions("fullLike", x, options);
  return fill("fullLike", x.shape, fillValue("fullLike", value), like);
}

/**
 * `start, start + step, …` while `< stop` (or `> stop` for a negative step). With one argument,
 * `arange(n)` is `0 … n-1`.
 */
export function arange(start: number, stop?: number, step = 1, options: CreationOptions = {}): Tensor {
  const op = "arange";
  const opts = creationOptions(op, options);
  checkNumber(op, "start", start);
  if (stop !== undefined) checkNumber(op, "stop", stop);
  checkNumber(op, "step", step);
  const device = resolveDevice(op, opts.device);
  const [lo, hi] = stop === undefined ? [0, start] : [start, stop];
  if (![lo, hi, step].every(Number.isFinite)) throw new ValueError(op, `start ${lo}, stop ${hi} and step ${step} must be finite; pass finite numbers`);
  if (step === 0) throw new ValueError(op, "step 0 never reaches stop; pass a non-zero step");
  const dtype = checkDType(op, opts.dtype ?? "f32", device);
  if ((dtype === "i32" || dtype === "u32" || dtype === "bool") && !(Number.isInteger(lo) && Number.isInteger(step))) {
    throw new DTypeError(op, `start ${lo} and step ${step} must be integers for dtype ${dtype}; use f32`);
  }
  const n = Math.max(0, Math.ceil((hi - lo) / step));
  if (!Number.isSafeInteger(n)) throw new ValueError(op, `the range from ${lo} to ${hi} by ${step} has ${n} elements; use a larger step`);
  if (n > 0) {
    const last = lo + (n - 1) * step;
    for (const v of [lo, last]) {
      if (!fitsDType(v, dtype)) {
        const [a, b] = integerRange(dtype) ?? [0, 0];
        throw new DTypeError(op, `the range reaches ${v}, which ${dtype} cannot hold (integers in [${a}, ${b}]); use ${dtype === "u32" ? '"i32" or ' : ""}"f32"`);
      }
    }
  }
  return register(device, new ArangeOpIr(output(device, [n], dtype), lo, step));
}

/** `num` evenly spaced values from `start` to `stop` inclusive (f32). */
export function linspace(start: number, stop: number, num: number, options: CreationOptions = {}): Tensor {
  const op = "linspace";
  const opts = creationOptions(op, options);
  const device = resolveDevice(op, opts.device);
  checkInteger(op, "num", num, 0);
  checkNumber(op, "start", start, true);
  checkNumber(op, "stop", stop, true);
  const dtype = checkDType(op, opts.dtype ?? "f32", device);
  if (!isFloat(dtype)) throw new DTypeError(op, `dtype ${dtype} cannot hold evenly spaced values; use f32 and cast`);
  const step = num > 1 ? (stop - start) / (num - 1) : 0;
  return register(device, new ArangeOpIr(output(device, [num], dtype), start, step));
}

/** An `n × m` identity matrix (`m` defaults to `n`), composed as `arange(n)[:, None] == arange(m)`. */
export function eye(n: number, m = n, options: CreationOptions = {}): Tensor {
  const op = "eye";
  const opts = creationOptions(op, options);
  const device = resolveDevice(op, opts.device);
  checkInteger(op, "n", n, 0, 2 ** 31 - 1);
  checkInteger(op, "m", m, 0, 2 ** 31 - 1);
  const dtype = checkDType(op, opts.dtype ?? "f32", device);
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
  seedCounter = checkInteger("seed", "the seed", value, 0);
}

/** Options of `rand`/`randn`. */
export interface RandomOptions extends CreationOptions {
  /** The generator's key; the same seed and shape give the same values on every backend. */
  readonly seed?: number;
}

function random(op: string, shapeArg: readonly number[], distribution: "uniform" | "normal", a: number, b: number, options: RandomOptions): Tensor {
  const opts = checkOptions(op, options, ["dtype", "device", "seed"]);
  const device = resolveDevice(op, checkDeviceOption(op, opts.device));
  const shape = checkShape(op, shapeArg);
  const dtype = checkDType(op, opts.dtype ?? "f32", device);
  if (!isFloat(dtype)) throw new DTypeError(op, `random values need a float dtype, got ${dtype}; cast the result instead`);
  const explicit = opts.seed === undefined ? undefined : checkInteger(op, "the seed", opts.seed, 0);
  const s = explicit ?? seedCounter++;
  return register(device, new RandomOpIr(output(device, shape, dtype), distribution, s >>> 0, a, b));
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
  checkTensor("randLike", "the input", x);
  checkOperands("randLike", [x]);
  const opts = checkOptions("randLike", options, ["dtype", "device", "seed"]);
  return random("randLike", x.shape, "uniform", 0, 1, { ...opts, device: checkDeviceOption("randLike", opts.device) ?? x.device } as RandomOptions);
}

/** Normal values with `x`'s shape and device. */
export function randnLike(x: Tensor, options: RandomOptions = {}): Tensor {
  checkTensor("randnLike", "the input", x);
  checkOperands("randnLike", [x]);
  const opts = checkOptions("randnLike", options, ["dtype", "device", "seed"]);
  return random("randnLike", x.shape, "normal", 0, 1, { ...opts, device: checkDeviceOption("randnLike", opts.device) ?? x.device } as RandomOptions);
}
