import { UnsupportedError } from "@weft/environment";
import type { BinaryOp, OperationIr, UnaryOp } from "../ir/operation-ir.js";
import type { DType, TypedArray } from "../ir/tensor-ir.js";
import { numElements } from "../ir/tensor-ir.js";

/** Host implementations of the unary ops the test runtime supports. */
const UNARY: Partial<Record<UnaryOp, (x: number) => number>> = {
  neg: (x) => -x,
  abs: Math.abs,
  exp: Math.exp,
  log: Math.log,
  sqrt: Math.sqrt,
  sin: Math.sin,
  cos: Math.cos,
  tanh: Math.tanh,
  relu: (x) => (x > 0 ? x : 0),
  sigmoid: (x) => 1 / (1 + Math.exp(-x)),
  square: (x) => x * x,
  reciprocal: (x) => 1 / x,
  floor: Math.floor,
  ceil: Math.ceil,
  not: (x) => (x ? 0 : 1),
};

/** Host implementations of the binary ops the test runtime supports. */
const BINARY: Partial<Record<BinaryOp, (a: number, b: number) => number>> = {
  add: (a, b) => a + b,
  sub: (a, b) => a - b,
  mul: (a, b) => a * b,
  div: (a, b) => a / b,
  pow: Math.pow,
  maximum: Math.max,
  minimum: Math.min,
  eq: (a, b) => (a === b ? 1 : 0),
  lt: (a, b) => (a < b ? 1 : 0),
  gt: (a, b) => (a > b ? 1 : 0),
};

/** Rounds `v` to what `dtype` can hold. */
export function coerce(v: number, dtype: DType): number {
  switch (dtype) {
    case "f32":
    case "f16":
      return Math.fround(v);
    case "i32":
      return Math.trunc(v) | 0;
    case "u32":
      return Math.trunc(v) >>> 0;
    case "bool":
      return v ? 1 : 0;
    default:
      return dtype satisfies never;
  }
}

/** Copies host values into the typed array of `dtype` (reads). */
export function toTyped(values: Float64Array, dtype: DType): TypedArray {
  switch (dtype) {
    case "f32":
      return Float32Array.from(values);
    case "f16":
      throw new UnsupportedError("f16 in the test runtime");
    case "i32":
      return Int32Array.from(values);
    case "u32":
      return Uint32Array.from(values);
    case "bool":
      return Uint8Array.from(values);
    default:
      return dtype satisfies never;
  }
}

/** The flat index into `inShape` that broadcasting maps output flat index `o` of `outShape` to. */
function broadcastIndex(o: number, inShape: readonly number[], outShape: readonly number[]): number {
  let index = 0;
  let stride = 1;
  let rest = o;
  const offset = outShape.length - inShape.length;
  for (let d = outShape.length - 1; d >= 0; d--) {
    const size = outShape[d] ?? 1;
    const coord = rest % size;
    rest = Math.floor(rest / size);
    const inDim = d - offset;
    if (inDim >= 0) {
      const inSize = inShape[inDim] ?? 1;
      index += (inSize === 1 ? 0 : coord) * stride;
      stride *= inSize;
    }
  }
  return index;
}

/**
 * Evaluates one operation on host values (`inputs` in `operationInputs` order). The reference
 * semantics of the test runtime and of the testing fusers.
 * @throws UnsupportedError for ops the test runtime does not implement (matmul, gather, …).
 */
export function evaluate(op: OperationIr, inputs: readonly Float64Array[]): Float64Array {
  if (op.kind === "drop" || op.kind === "init") throw new UnsupportedError(`evaluating ${op.kind}`, "it computes nothing");
  const out = new Float64Array(numElements(op.out.shape));
  const dtype = op.out.dtype;
  const input = (i: number): Float64Array => {
    const v = inputs[i];
    if (v === undefined) throw new RangeError(`${op.kind}: missing input ${i}`);
    return v;
  };
  const map = (f: (o: number) => number): Float64Array => {
    for (let o = 0; o < out.length; o++) out[o] = coerce(f(o), dtype);
    return out;
  };
  switch (op.kind) {
    case "full":
      return map(() => op.value);
    case "arange":
      return map((o) => op.start + o * op.step);
    case "unary": {
      const f = UNARY[op.op];
      if (f === undefined) throw new UnsupportedError(`unary ${op.op} in the test runtime`);
      const x = input(0);
      return map((o) => f(x[broadcastIndex(o, op.input.shape, op.out.shape)] ?? NaN));
    }
    case "binary": {
      const f = BINARY[op.op];
      if (f === undefined) throw new UnsupportedError(`binary ${op.op} in the test runtime`);
      const a = input(0);
      const b = input(1);
      return map((o) =>
        f(a[broadcastIndex(o, op.lhs.shape, op.out.shape)] ?? NaN, b[broadcastIndex(o, op.rhs.shape, op.out.shape)] ?? NaN),
      );
    }
    case "binary-scalar": {
      const f = BINARY[op.op];
      if (f === undefined) throw new UnsupportedError(`binary ${op.op} in the test runtime`);
      const a = input(0);
      return map((o) => {
        const x = a[broadcastIndex(o, op.lhs.shape, op.out.shape)] ?? NaN;
        return op.scalarFirst ? f(op.scalar, x) : f(x, op.scalar);
      });
    }
    case "clamp": {
      const a = input(0);
      return map((o) => Math.min(op.max, Math.max(op.min, a[o] ?? NaN)));
    }
    case "cast":
    case "reshape": {
      const a = input(0);
      return map((o) => a[o] ?? NaN);
    }
    case "where": {
      const [c, a, b] = [input(0), input(1), input(2)];
      return map((o) =>
        (c[broadcastIndex(o, op.condition.shape, op.out.shape)] ?? 0)
          ? (a[broadcastIndex(o, op.lhs.shape, op.out.shape)] ?? NaN)
          : (b[broadcastIndex(o, op.rhs.shape, op.out.shape)] ?? NaN),
      );
    }
    case "reduce": {
      if (op.op !== "sum" && op.op !== "max" && op.op !== "min" && op.op !== "mean") {
        throw new UnsupportedError(`reduce ${op.op} in the test runtime`);
      }
      const x = input(0);
      const shape = op.input.shape;
      const kept = shape.map((d, i) => (op.axes.includes(i) ? 1 : d));
      const acc = new Float64Array(out.length).fill(op.op === "max" ? -Infinity : op.op === "min" ? Infinity : 0);
      for (let i = 0; i < x.length; i++) {
        // Flat index of i's coordinates with the reduced axes set to 0.
        let rest = i;
        let index = 0;
        let stride = 1;
        for (let d = shape.length - 1; d >= 0; d--) {
          const size = shape[d] ?? 1;
          const coord = rest % size;
          rest = Math.floor(rest / size);
          const k = kept[d] ?? 1;
          index += (k === 1 ? 0 : coord) * stride;
          stride *= k;
        }
        const v = x[i] ?? NaN;
        const a = acc[index] ?? 0;
        acc[index] = op.op === "max" ? Math.max(a, v) : op.op === "min" ? Math.min(a, v) : a + v;
      }
      const count = x.length / Math.max(1, out.length);
      return map((o) => (op.op === "mean" ? (acc[o] ?? NaN) / count : (acc[o] ?? NaN)));
    }
    case "random":
    case "matmul":
    case "permute":
    case "expand":
    case "slice":
    case "concat":
    case "gather":
    case "pad":
    case "sort":
    case "scan":
    case "scatter":
      throw new UnsupportedError(`${op.kind} in the test runtime`, "use @weft/backend-cpu for numerics");
    default:
      return op satisfies never;
  }
}
