/**
 * The user-facing `Tensor`.
 *
 * @module
 */
import { ValueError, checkFunction, describeValue } from "@weft/environment";
import { inheritOwner } from "@weft/fusion";
import type { BinaryOp, DType, FusionTensor, TypedArray, UnaryOp } from "@weft/fusion";
import { FUSION_TENSOR } from "@weft/fusion/internal";
import type { Device } from "../device/device.js";
import { halfToFloat } from "../dtype/dtype.js";
import { DTypeError, DeviceMismatchError, ShapeError, SyncReadError, formatShape } from "../errors/tensor-errors.js";
import { nest } from "../shape/shape.js";
import { type PrintOptions, checkFormatOptions, formatValues } from "../format/format.js";
import { checkTensorList } from "./arguments.js";
import { cast, clamp, type Operand, binary, powScalar, unary, where } from "../ops/elementwise.js";
import {
  type Axes,
  type ReduceOptions,
  type VarianceOptions,
  argReduce,
  logSoftmax,
  logSumExp,
  reduce,
  softmax,
  std,
  variance,
} from "../ops/reduce.js";
import { matmul } from "../ops/matmul.js";
import { elu, floorDiv, isFinite, isInf, isNaN, leakyRelu, log2, selu, softplus } from "../ops/math.js";
import { type OneHotOptions, oneHot, repeat, tile, tril, triu } from "../ops/structure.js";
import { type LayerNormOptions, layerNorm } from "../ops/normalization.js";
import { cumprod, cumsum } from "../ops/scan.js";
import { type SortOptions, type SortResult, type TopKOptions, argsort, sort, topk } from "../ops/sort.js";
import { scatter, scatterAdd } from "../ops/scatter.js";
import {
  type AvgPool2dOptions,
  type Conv1dOptions,
  type Conv2dOptions,
  type MaxPool2dOptions,
  type Size2,
  avgPool2d,
  conv1d,
  conv2d,
  maxPool2d,
} from "../ops/convolution.js";
import {
  type SliceSpec,
  concat,
  expand,
  flatten,
  flip,
  gather,
  pad,
  permute,
  reshape,
  slice,
  split,
  squeeze,
  transpose,
  unsqueeze,
} from "../ops/layout.js";

/** Node's `util.inspect.custom` key (a `Symbol.for`, so no Node import is needed). */
const INSPECT: unique symbol = Symbol.for("nodejs.util.inspect.custom") as never;

/** Reads a tensor's fusion tensor (set once, by `Tensor`'s static block). */
let innerOf: (t: Tensor) => FusionTensor;

/**
 * The `FusionTensor` behind `t`, for the library's own ops and sibling packages
 * (`@weft/tensor/internal`); not part of the user API.
 */
export function fusionTensorOf(t: Tensor): FusionTensor {
  return innerOf(t);
}

/** What `data()` resolves to per dtype: `f16` is widened to `Float32Array`. */
export type DataArray = Float32Array | Int32Array | Uint32Array | Uint8Array;

/** Options of {@link Tensor.data}. */
export interface DataOptions {
  /**
   * Caller-owned memory the values are written into (the first `size` elements), and which the
   * read resolves to: the array type `data()` gives for the dtype (`Float32Array` for f32 and
   * f16, `Int32Array`, `Uint32Array`, `Uint8Array` for bool), at least `size` long. Reusing one
   * array across reads spares a fresh allocation (and its page faults) per read: on WebGPU the
   * values are copied once, from the mapped staging buffer straight into it.
   */
  readonly into?: DataArray;
}

/**
 * An n-dimensional array on a {@link Device}: the user's handle to one lazily computed value.
 *
 * @remarks
 * **What it is.** A thin wrapper over one `FusionTensor` plus the `Device` it lives on. The
 * fusion tensor is not part of the public type: `tidy` reaches it through the engine's internal
 * `FUSION_TENSOR` key, sibling packages through `fusionTensorOf` (`@weft/tensor/internal`).
 * Every method validates its arguments first and then records operations on the current stream;
 * nothing runs until a read (`data()`, `array()`, `item()`), a `sync`, or the engine decides to.
 * **Ownership.** A `Tensor` owns one reference: `dispose()` (or `using`, or `tidy`) gives it
 * back. Ops *borrow* their inputs, so `a.add(b)` leaves `a` and `b` alive. `clone()` is a cheap
 * new reference to the same value.
 * **Invariants.** `shape` and `dtype` never change; after `dispose()` every use throws the
 * fusion engine's `DisposedTensorError` naming the op, and `dispose()` again is a no-op. The value
 * changes only through {@link Tensor.assign} (same shape and dtype).
 */
export class Tensor {
  /** The fusion tensor this reference holds; replaced only by {@link Tensor.assign}. */
  #inner: FusionTensor;
  /** The device this tensor lives on. */
  readonly device: Device;

  static {
    innerOf = (t) => t.#inner;
  }

  private constructor(inner: FusionTensor, device: Device) {
    this.#inner = inner;
    this.device = device;
  }

  /**
   * Wraps a fusion tensor that `device` produced, taking over its reference. For the library's
   * ops; users create tensors with `tensor()`, `zeros()`, ….
   * @internal
   */
  static wrap(inner: FusionTensor, device: Device): Tensor {
    return new Tensor(inner, device);
  }

  /** @internal The fusion tensor behind this one: what the engine's `tidy` follows. */
  get [FUSION_TENSOR](): FusionTensor {
    return this.#inner;
  }

  /** The sizes of each dimension (`[]` for a scalar). */
  get shape(): readonly number[] {
    return this.#inner.shape;
  }

  /** The element type. */
  get dtype(): DType {
    return this.#inner.dtype;
  }

  /** The number of dimensions. */
  get rank(): number {
    return this.#inner.shape.length;
  }

  /** The number of elements. */
  get size(): number {
    let n = 1;
    for (const d of this.#inner.shape) n *= d;
    return n;
  }

  /** Whether this reference was given back. */
  get disposed(): boolean {
    return this.#inner.disposed;
  }

  // ── lifetimes ───────────────────────────────────────────────────────────────────────────────

  /** Gives this reference back; the value is freed when its last reference and use are gone. Idempotent. */
  dispose(): void {
    if (!this.#inner.disposed) this.#inner.dispose();
  }

  /** `using t = …` disposes at the end of the block. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  /** A new reference to the same value (no copy); dispose each independently. */
  clone(): Tensor {
    if (this.#inner.disposed) this.#inner.intoIr("clone");
    return new Tensor(this.#inner.clone(), this.device);
  }

  /**
   * Makes this tensor hold `value`'s value from now on, in place: the object the caller holds (a
   * model parameter) sees the new value. What the optimizers of `weft.optim` update parameters with.
   *
   * @remarks
   * **What changes.** This reference becomes a new reference to `value`'s value (`value` stays
   * usable and is disposed independently, like a `clone()`); the old value loses this reference,
   * so it is freed once nothing else holds it, and its last pending use becomes its consuming one:
   * an update computed from it (`p.assign(p.sub(g))`) may be written into its buffer. References
   * taken earlier with `clone()` keep the old value.
   * **Ownership.** The tensor keeps its owner: the `tidy` or `scope` that would have disposed it
   * disposes it with its new value, and a tensor nothing owns (created outside every scope, or
   * kept) stays unowned — so an update inside a training step's `tidy` outlives the step.
   * @throws ShapeError / DTypeError when `value`'s shape or dtype differ (a tensor's shape and
   *   dtype never change); DeviceMismatchError across devices; the engine's DisposedTensorError
   *   when either tensor was disposed. Nothing changes when it throws.
   */
  assign(value: Tensor): void {
    if (this.#inner.disposed) this.#inner.intoIr("assign");
    if (!(value instanceof Tensor)) throw new ValueError("assign", `pass a Tensor (weft.tensor(values) makes one), not ${describeValue(value)}`);
    if (value.#inner.disposed) value.#inner.intoIr("assign");
    if (value.device !== this.device) throw new DeviceMismatchError("assign", this.device.label, value.device.label);
    const shape = this.shape;
    if (value.shape.length !== shape.length || value.shape.some((d, i) => d !== shape[i])) {
      throw new ShapeError("assign", [shape, value.shape], `cannot assign a ${formatShape(value.shape)} value to a ${formatShape(shape)} tensor; a tensor's shape never changes (reshape the value first)`);
    }
    if (value.dtype !== this.dtype) {
      throw new DTypeError("assign", `cannot assign a ${value.dtype} value to a ${this.dtype} tensor; cast it first, e.g. \`value.cast("${this.dtype}")\``);
    }
    if (value.#inner === this.#inner) return;
    const previous = this.#inner;
    const next = value.#inner.clone();
    inheritOwner(previous as FusionTensor, next as FusionTensor);
    this.#inner = next;
    previous.dispose();
  }

  // ── data ────────────────────────────────────────────────────────────────────────────────────

  /**
   * The values, row-major: `Float32Array` (f32, and f16 widened), `Int32Array`, `Uint32Array`, or
   * `Uint8Array` (bool, 0/1). Waits for the work this tensor depends on; rejects with the
   * computation error when that work failed.
   */
  data(options?: DataOptions): Promise<DataArray> {
    // Not an async function: the read's own promise is returned as is, so a read costs no extra
    // promise and no extra turn (under promise hooks, as `Stream.spawn`'s `AsyncLocalStorage`
    // installs, each await allocated one). Every failure, a bad argument included, still rejects.
    try {
      if (this.#inner.disposed) this.#inner.intoIr("data");
      const into = options?.into;
      // f16 is stored as 16-bit words: read them, then widen (into the caller's array when given).
      if (into === undefined) return this.dtype === "f16" ? this.#inner.read().then((v) => widen("f16", v)) : (this.#inner.read() as Promise<DataArray>);
      checkInto(this.dtype, this.shape, into);
      if (this.dtype === "f16") return this.#inner.read().then((v) => widenInto(v, into as Float32Array));
      return this.#inner.read(into) as Promise<DataArray>;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The values as nested JS arrays (booleans for `bool`; a number or boolean for a scalar). */
  async array(): Promise<unknown> {
    if (this.#inner.disposed) this.#inner.intoIr("array");
    const values = await this.data();
    return nest<number | boolean>(this.dtype === "bool" ? Array.from(values, (v) => v !== 0) : values, this.shape);
  }

  /**
   * The values now, where the device can answer synchronously (the CPU backend).
   * @throws SyncReadError on devices that read asynchronously (WebGPU): use `await data()`.
   */
  dataSync(): DataArray {
    if (this.#inner.disposed) this.#inner.intoIr("dataSync");
    if (!this.device.syncReads) throw new SyncReadError("dataSync", this.device.label);
    const values = this.#inner.readSync();
    if (values === undefined) throw new SyncReadError("dataSync", this.device.label);
    return widen(this.dtype, values);
  }

  /** The nested values now; see {@link Tensor.dataSync}. */
  arraySync(): unknown {
    const values = this.dataSync();
    return nest<number | boolean>(this.dtype === "bool" ? Array.from(values, (v) => v !== 0) : values, this.shape);
  }

  /** The single value of a one-element tensor (a boolean for `bool`). */
  async item(): Promise<number | boolean> {
    if (this.#inner.disposed) this.#inner.intoIr("item");
    if (this.size !== 1) {
      throw new ShapeError("item", [this.shape], `needs exactly one element, got ${this.size} in ${formatShape(this.shape)}; reduce or slice first`);
    }
    const v = (await this.data())[0] ?? 0;
    return this.dtype === "bool" ? v !== 0 : v;
  }

  /**
   * `Tensor([2, 2], f32, cpu#1)`: shape, dtype and device name (plus `, disposed` after dispose).
   * Synchronous: reads no data and runs nothing. `console.log(t)` in Node prints the same.
   */
  toString(): string {
    return `Tensor(${formatShape(this.shape)}, ${this.dtype}, ${this.device.name}${this.disposed ? ", disposed" : ""})`;
  }

  /** What Node's `console.log`/`util.inspect` show: {@link Tensor.toString}. */
  [INSPECT](): string {
    return this.toString();
  }

  /**
   * Prints {@link Tensor.toString} and the values, NumPy-style (nested brackets, aligned columns,
   * `...` past `threshold` elements), with `console.log` or `options.log`. Waits for the values
   * like `data()`, and rejects like it when their computation failed.
   */
  async print(options: PrintOptions = {}): Promise<void> {
    if (this.#inner.disposed) this.#inner.intoIr("print");
    checkFormatOptions("print", options, ["threshold", "edgeItems", "precision", "log"]);
    if (options.log !== undefined) checkFunction("print", "options.log", options.log);
    const { log, ...format } = options;
    const values = await this.data();
    const text = `${this.toString()}\n${formatValues(values, this.shape, this.dtype, format)}`;
    (log ?? ((line: string) => console.log(line)))(text);
  }

  // ── dtype ───────────────────────────────────────────────────────────────────────────────────

  /** Converts to `dtype` (float → int truncates toward zero; bool is `x != 0`). */
  cast(dtype: DType): Tensor {
    return cast(this, dtype);
  }

  // ── unary ───────────────────────────────────────────────────────────────────────────────────

  /** Any unary function by name. */
  unary(op: UnaryOp): Tensor { return unary(op, this); }
  neg(): Tensor { return unary("neg", this); }
  abs(): Tensor { return unary("abs", this); }
  exp(): Tensor { return unary("exp", this); }
  log(): Tensor { return unary("log", this); }
  log1p(): Tensor { return unary("log1p", this); }
  expm1(): Tensor { return unary("expm1", this); }
  sqrt(): Tensor { return unary("sqrt", this); }
  rsqrt(): Tensor { return unary("rsqrt", this); }
  sin(): Tensor { return unary("sin", this); }
  cos(): Tensor { return unary("cos", this); }
  tan(): Tensor { return unary("tan", this); }
  tanh(): Tensor { return unary("tanh", this); }
  sigmoid(): Tensor { return unary("sigmoid", this); }
  relu(): Tensor { return unary("relu", this); }
  gelu(): Tensor { return unary("gelu", this); }
  silu(): Tensor { return unary("silu", this); }
  erf(): Tensor { return unary("erf", this); }
  floor(): Tensor { return unary("floor", this); }
  ceil(): Tensor { return unary("ceil", this); }
  round(): Tensor { return unary("round", this); }
  sign(): Tensor { return unary("sign", this); }
  reciprocal(): Tensor { return unary("reciprocal", this); }
  square(): Tensor { return unary("square", this); }
  /** Logical not of a `bool` tensor. */
  not(): Tensor { return unary("not", this); }
  /** The base-2 logarithm. */
  log2(): Tensor { return log2(this); }
  /** `x` where `x > 0`, else `alpha · x` (default `alpha = 0.01`). */
  leakyRelu(alpha?: number): Tensor { return leakyRelu(this, alpha); }
  /** `x` where `x > 0`, else `alpha · (eˣ − 1)` (default `alpha = 1`). */
  elu(alpha?: number): Tensor { return elu(this, alpha); }
  /** Scaled ELU with SELU's fixed constants. */
  selu(): Tensor { return selu(this); }
  /** `log(1 + eˣ)`, stable for large `|x|`. */
  softplus(beta?: number, threshold?: number): Tensor { return softplus(this, beta, threshold); }
  /** `true` where NaN (bool). */
  isNaN(): Tensor { return isNaN(this); }
  /** `true` where ±Inf (bool). */
  isInf(): Tensor { return isInf(this); }
  /** `true` where neither NaN nor ±Inf (bool). */
  isFinite(): Tensor { return isFinite(this); }
  /** `min(max(x, lo), hi)`; an omitted bound is unbounded. */
  clamp(lo?: number, hi?: number): Tensor { return clamp(this, lo, hi); }

  // ── binary ──────────────────────────────────────────────────────────────────────────────────

  /** Any binary function by name, broadcast. */
  binary(op: BinaryOp, other: Operand): Tensor { return binary(op, this, other); }
  add(other: Operand): Tensor { return binary("add", this, other); }
  sub(other: Operand): Tensor { return binary("sub", this, other); }
  mul(other: Operand): Tensor { return binary("mul", this, other); }
  /** True division; integers compute in f32. */
  div(other: Operand): Tensor { return binary("div", this, other); }
  /** `this ** other`; integers compute in f32. */
  pow(other: Operand): Tensor { return typeof other === "number" ? powScalar(this, other) : binary("pow", this, other); }
  maximum(other: Operand): Tensor { return binary("maximum", this, other); }
  minimum(other: Operand): Tensor { return binary("minimum", this, other); }
  mod(other: Operand): Tensor { return binary("mod", this, other); }
  atan2(other: Operand): Tensor { return binary("atan2", this, other); }
  /** Floor division `this // other` (NumPy `floor_divide`; integers stay integers). */
  floorDiv(other: Operand): Tensor { return floorDiv(this, other); }
  eq(other: Operand): Tensor { return binary("eq", this, other); }
  ne(other: Operand): Tensor { return binary("ne", this, other); }
  lt(other: Operand): Tensor { return binary("lt", this, other); }
  le(other: Operand): Tensor { return binary("le", this, other); }
  gt(other: Operand): Tensor { return binary("gt", this, other); }
  ge(other: Operand): Tensor { return binary("ge", this, other); }
  and(other: Operand): Tensor { return binary("and", this, other); }
  or(other: Operand): Tensor { return binary("or", this, other); }
  xor(other: Operand): Tensor { return binary("xor", this, other); }
  /** `this` (a bool condition) ? `a` : `b`. */
  where(a: Operand, b: Operand): Tensor { return where(this, a, b); }

  // ── reductions ──────────────────────────────────────────────────────────────────────────────

  sum(axes?: Axes, options?: ReduceOptions): Tensor { return reduce("sum", this, axes, options); }
  mean(axes?: Axes, options?: ReduceOptions): Tensor { return reduce("mean", this, axes, options); }
  max(axes?: Axes, options?: ReduceOptions): Tensor { return reduce("max", this, axes, options); }
  min(axes?: Axes, options?: ReduceOptions): Tensor { return reduce("min", this, axes, options); }
  prod(axes?: Axes, options?: ReduceOptions): Tensor { return reduce("prod", this, axes, options); }
  any(axes?: Axes, options?: ReduceOptions): Tensor { return reduce("any", this, axes, options); }
  all(axes?: Axes, options?: ReduceOptions): Tensor { return reduce("all", this, axes, options); }
  argmax(axis?: number, options?: ReduceOptions): Tensor { return argReduce("argmax", this, axis, options); }
  argmin(axis?: number, options?: ReduceOptions): Tensor { return argReduce("argmin", this, axis, options); }
  variance(axes?: Axes, options?: VarianceOptions): Tensor { return variance(this, axes, options); }
  std(axes?: Axes, options?: VarianceOptions): Tensor { return std(this, axes, options); }
  logSumExp(axes?: Axes, options?: ReduceOptions): Tensor { return logSumExp(this, axes, options); }
  softmax(axis = -1): Tensor { return softmax(this, axis); }
  logSoftmax(axis = -1): Tensor { return logSoftmax(this, axis); }
  /** The running sum along `axis` (the flattened tensor without one). */
  cumsum(axis?: number): Tensor { return cumsum(this, axis); }
  /** The running product along `axis` (the flattened tensor without one). */
  cumprod(axis?: number): Tensor { return cumprod(this, axis); }
  /** Sorted along `axis` (default the last); stable; NaN last (first when descending). */
  sort(axis?: number, options?: SortOptions): Tensor { return sort(this, axis, options); }
  /** The `i32` positions that sort along `axis` (default the last); stable. */
  argsort(axis?: number, options?: SortOptions): Tensor { return argsort(this, axis, options); }
  /** The `k` largest (or smallest) along the last axis, with their `i32` positions. */
  topk(k: number, options?: TopKOptions): SortResult { return topk(this, k, options); }
  /** Layer normalisation over `axes` (default the last), with optional `eps`, `weight`, `bias`. */
  layerNorm(axes?: number | readonly number[], options?: LayerNormOptions): Tensor { return layerNorm(this, axes, options); }

  // ── linear algebra and layout ───────────────────────────────────────────────────────────────

  /** Matrix product (NumPy `matmul` rules). */
  matmul(other: Tensor): Tensor { return matmul(this, other); }
  reshape(shape: readonly number[]): Tensor { return reshape(this, shape); }
  flatten(start?: number, end?: number): Tensor { return flatten(this, start, end); }
  /** Swaps two axes (default the last two). */
  transpose(a?: number, b?: number): Tensor { return transpose(this, a, b); }
  permute(axes: readonly number[]): Tensor { return permute(this, axes); }
  expand(shape: readonly number[]): Tensor { return expand(this, shape); }
  squeeze(axes?: number | readonly number[]): Tensor { return squeeze(this, axes); }
  unsqueeze(axis: number): Tensor { return unsqueeze(this, axis); }
  slice(specs: readonly SliceSpec[]): Tensor { return slice(this, specs); }
  split(sections: number | readonly number[], axis?: number): Tensor[] { return split(this, sections, axis); }
  concat(others: readonly Tensor[], axis?: number): Tensor { return concat([this, ...checkTensorList("concat", "others", others)], axis); }
  gather(indices: Tensor, axis: number): Tensor { return gather(this, indices, axis); }
  pad(padding: readonly (readonly [number, number])[], value?: number): Tensor { return pad(this, padding, value); }
  /** Reverses the order along `axes` (default every axis). */
  flip(axes?: number | readonly number[]): Tensor { return flip(this, axes); }
  /** Repeats the whole tensor `reps` times per dim (NumPy `tile`). */
  tile(reps: number | readonly number[]): Tensor { return tile(this, reps); }
  /** Repeats each element along `axis` (NumPy `repeat`; the flattened tensor without an axis). */
  repeat(repeats: number | readonly number[], axis?: number): Tensor { return repeat(this, repeats, axis); }
  /** The lower triangle of the last two dims (`column − row ≤ k`). */
  tril(k?: number): Tensor { return tril(this, k); }
  /** The upper triangle of the last two dims (`column − row ≥ k`). */
  triu(k?: number): Tensor { return triu(this, k); }
  /** A copy with `src` written at `indices` along `axis` (duplicates: the last source wins). */
  scatter(indices: Tensor, src: Tensor | number, axis: number): Tensor { return scatter(this, indices, src, axis); }
  /** A copy with every `src` element added at its index along `axis`. */
  scatterAdd(indices: Tensor, src: Tensor | number, axis: number): Tensor { return scatterAdd(this, indices, src, axis); }
  /** 1-D convolution of this `[N, C, L]` input with `weight [O, C / groups, K]`. */
  conv1d(weight: Tensor, options?: Conv1dOptions): Tensor { return conv1d(this, weight, options); }
  /** 2-D convolution of this NCHW input with `weight [O, C / groups, KH, KW]`. */
  conv2d(weight: Tensor, options?: Conv2dOptions): Tensor { return conv2d(this, weight, options); }
  /** The maximum over each `kernel` window of this NCHW input. */
  maxPool2d(kernel: Size2, options?: MaxPool2dOptions): Tensor { return maxPool2d(this, kernel, options); }
  /** The mean over each `kernel` window of this NCHW input. */
  avgPool2d(kernel: Size2, options?: AvgPool2dOptions): Tensor { return avgPool2d(this, kernel, options); }
  /** These integer indices one-hot encoded along a new last dim of size `depth`. */
  oneHot(depth: number, options?: OneHotOptions): Tensor { return oneHot(this, depth, options); }
}

/** The array type `data()` gives for `dtype`, by name, for {@link checkInto}'s message. */
function dataArrayName(dtype: DType): string {
  switch (dtype) {
    case "f32":
    case "f16":
      return "Float32Array";
    case "i32":
      return "Int32Array";
    case "u32":
      return "Uint32Array";
    case "bool":
      return "Uint8Array";
  }
}

/**
 * Throws a `ValueError` naming `data`, the tensor's shape and dtype and the fix when `into` is not
 * the array type `data()` gives for `dtype` or holds fewer than `shape`'s elements.
 */
function checkInto(dtype: DType, shape: readonly number[], into: unknown): void {
  const want = dataArrayName(dtype);
  const size = shape.reduce((a, b) => a * b, 1);
  const got = (into as { constructor?: { name?: string } } | null)?.constructor?.name ?? typeof into;
  if (got !== want || !ArrayBuffer.isView(into)) {
    throw new ValueError("data", `{ into } must be a ${want} for a ${dtype} ${formatShape(shape)} tensor, got ${got}; pass e.g. \`new ${want}(${size})\``);
  }
  const length = (into as DataArray).length;
  if (length < size) {
    throw new ValueError("data", `{ into } holds ${length} elements, the ${dtype} ${formatShape(shape)} tensor has ${size}; pass an array of at least ${size}`);
  }
}

/** Widens f16 words into `into` (its first `values.length` elements). */
function widenInto(values: TypedArray, into: Float32Array): Float32Array {
  for (let i = 0; i < values.length; i++) into[i] = halfToFloat(values[i] ?? 0);
  return into;
}

function widen(dtype: DType, values: TypedArray): DataArray {
  if (dtype !== "f16") return values as DataArray;
  const out = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = halfToFloat(values[i] ?? 0);
  return out;
}
