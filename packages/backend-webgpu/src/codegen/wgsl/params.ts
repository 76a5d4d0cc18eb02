import { invariant } from "@weft/environment";
import type { DType } from "@weft/fusion";
import type { WgslBuilder } from "./builder.js";
import type { ExprGraph } from "./expr.js";
import { wgslType, type ValueType } from "./types.js";

/**
 * One runtime value of an expression graph (a scalar operand, a clamp bound, a fill value, an
 * arange start or step, a random key or bound): the value and the dtype the kernel reads it as.
 *
 * @remarks
 * **Why values are not in the shader text.** WGSL lets a compiler evaluate constant expressions
 * and assume finite math: a literal `0.0` divisor, `log(0.0)` or `1e30 * 1e30` is a
 * shader-creation error, and `x * 0.0` may be folded to `0` (losing NaN and ±Inf). A value read
 * from a uniform is unknown to the compiler, so neither can happen, and the kernel's key — its
 * structure only — is the same for every value: a loop with a new scalar each step compiles one
 * pipeline (docs/semantics.md, "Runtime values").
 */
export interface ParamValue {
  readonly value: number;
  readonly dtype: DType;
}

/** The WGSL type of a parameter's uniform field (`bool` as `u32`, `f16` as its bits in a `u32`). */
function fieldType(dtype: DType): string {
  switch (dtype) {
    case "f32":
      return "f32";
    case "i32":
      return "i32";
    case "u32":
    case "bool":
    case "f16":
      return "u32";
    default:
      return dtype satisfies never;
  }
}

/** The scalar WGSL expression of a uniform field holding a value of `dtype`. */
function readField(field: string, dtype: DType): string {
  switch (dtype) {
    case "f32":
    case "i32":
    case "u32":
      return field;
    case "bool":
      return `(${field} != 0u)`;
    case "f16":
      return `f16(unpack2x16float(${field}).x)`;
    default:
      return dtype satisfies never;
  }
}

/**
 * The uniform block of one kernel: the parameters of every expression graph the kernel evaluates
 * (an elementwise body, a reduction's prologue and epilogue, a matmul's epilogue), in one WGSL
 * struct bound after the storage buffers (the `WgslKernel` binding convention).
 *
 * @remarks
 * **Layout.** Field `p<g>_<slot>` is slot `slot` of the `g`-th graph added; every field is 4 bytes
 * (`f32`, `i32` or `u32`), so the struct is `4 × count` bytes and the server pads it to 16.
 * **Invariant.** The declaration depends only on the graphs' parameter dtypes (structure), never on
 * their values; {@link KernelParams.encode} writes the values in the same order.
 * **Bounded by** the parameters of one kernel's graphs (≤ 3 per fused op, ≤ 64 ops per block).
 */
export class KernelParams {
  /** Graphs added, in order (field prefix = index). */
  readonly #graphs: ExprGraph[] = [];

  /** Adds `graph`'s parameters; returns the accessor its {@link EmitContext} uses (`slot` → WGSL scalar). */
  add(graph: ExprGraph): (slot: number, t: ValueType) => string {
    const g = this.#graphs.length;
    this.#graphs.push(graph);
    return (slot, t) => {
      const p = graph.params[slot];
      invariant(p !== undefined, () => `parameter ${slot} of graph ${g} does not exist`);
      const scalar = readField(`params.p${g}_${slot}`, p.dtype);
      return t.width === 1 ? scalar : `${wgslType(t)}(${scalar})`;
    };
  }

  /** Number of parameters over every graph added. */
  get count(): number {
    let n = 0;
    for (const g of this.#graphs) n += g.params.length;
    return n;
  }

  /** Emits the struct and its `var<uniform>` at `binding` (nothing when there is no parameter). */
  declare(w: WgslBuilder, binding: number): void {
    if (this.count === 0) return;
    w.block("struct Params", (s) => {
      this.#graphs.forEach((graph, g) => graph.params.forEach((p, slot) => s.line(`p${g}_${slot}: ${fieldType(p.dtype)},`)));
    });
    w.line(`@group(0) @binding(${binding}) var<uniform> params: Params;`, "");
  }

  /** The uniform bytes of the current values (`undefined` when there is no parameter). */
  encode(): Uint8Array | undefined {
    return encodeParams(this.#graphs.flatMap((g) => g.params));
  }
}

/**
 * The uniform bytes of `params`, in order, each converted to its dtype with the CPU oracle's
 * rule (`docs/semantics.md`, "Scalars"): `f32` rounds; `i32`/`u32` truncate toward zero and
 * saturate, NaN → 0; `bool` is `value != 0` (NaN → true); `f16` is the nearest half's bits.
 * `undefined` for no parameter.
 */
export function encodeParams(params: readonly ParamValue[]): Uint8Array | undefined {
  if (params.length === 0) return undefined;
  const buffer = new ArrayBuffer(params.length * 4);
  const f32 = new Float32Array(buffer);
  const i32 = new Int32Array(buffer);
  const u32 = new Uint32Array(buffer);
  params.forEach((p, k) => writeParam(p.value, p.dtype, k, f32, i32, u32));
  return new Uint8Array(buffer);
}

/**
 * {@link encodeParams} for parallel arrays of values and dtypes (the replay path of the launch
 * cache keeps the dtypes of the first execution and collects fresh values).
 */
export function encodeParamValues(values: readonly number[], dtypes: readonly DType[]): Uint8Array | undefined {
  invariant(values.length === dtypes.length, () => `${values.length} parameter values for ${dtypes.length} parameters`);
  if (values.length === 0) return undefined;
  const buffer = new ArrayBuffer(values.length * 4);
  const f32 = new Float32Array(buffer);
  const i32 = new Int32Array(buffer);
  const u32 = new Uint32Array(buffer);
  for (let k = 0; k < values.length; k++) writeParam(values[k] as number, dtypes[k] as DType, k, f32, i32, u32);
  return new Uint8Array(buffer);
}

const I32_MIN = -2147483648;
const I32_MAX = 2147483647;
const U32_MAX = 4294967295;

function writeParam(value: number, dtype: DType, k: number, f32: Float32Array, i32: Int32Array, u32: Uint32Array): void {
  switch (dtype) {
    case "f32":
      f32[k] = value;
      return;
    case "i32":
      i32[k] = value !== value ? 0 : value <= I32_MIN ? I32_MIN : value >= I32_MAX ? I32_MAX : Math.trunc(value);
      return;
    case "u32":
      u32[k] = value !== value || value <= 0 ? 0 : value >= U32_MAX ? U32_MAX : Math.trunc(value);
      return;
    case "bool":
      u32[k] = value !== 0 ? 1 : 0;
      return;
    case "f16":
      u32[k] = halfBits(value);
      return;
    default:
      dtype satisfies never;
  }
}

/** The bits of the half-precision value nearest to `value` (round to nearest even; NaN, ±Inf kept). */
export function halfBits(value: number): number {
  const f = new Float32Array([value]);
  const x = new Uint32Array(f.buffer)[0] ?? 0;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant = (mant | 0x800000) >>> (1 - e);
    return sign | ((mant + 0xfff + ((mant >>> 13) & 1)) >>> 13);
  }
  const rounded = mant + 0xfff + ((mant >>> 13) & 1);
  if (rounded & 0x800000) {
    mant = 0;
    e += 1;
    if (e >= 0x1f) return sign | 0x7c00;
  } else {
    mant = rounded;
  }
  return sign | (e << 10) | (mant >>> 13);
}
