/**
 * Elementwise ops: unary functions, binary arithmetic with broadcasting, compares, logical ops,
 * `where`, `clamp` and `cast`. Each records one fusion-friendly operation (plus `cast`s where the
 * promotion table of `dtype/dtype.ts` asks for them).
 *
 * @module
 */
import { UnsupportedError } from "@weft/environment";
import type { BinaryOp, DType, UnaryOp } from "@weft/fusion";
import type { Device } from "../device/device.js";
import { floatTypeFor, isDType, isFloat, promoteTypes, promoteWithScalar } from "../dtype/dtype.js";
import { DTypeError, ValueError } from "../errors/tensor-errors.js";
import { broadcastShapes } from "../shape/shape.js";
import { castUnchecked, checkOperand, checkOperands, output, register, release, use, withDType } from "../tensor/record.js";
import { Tensor } from "../tensor/tensor.js";

/** A right-hand operand: a tensor or a weak JS scalar (booleans count as 0 and 1). */
export type Operand = Tensor | number | boolean;

/** Unary functions defined on floats only: integer and bool inputs compute in `f32`. */
const FLOAT_UNARY: ReadonlySet<UnaryOp> = new Set<UnaryOp>([
  "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
  "sigmoid", "gelu", "silu", "erf", "reciprocal",
]);

/** Unary functions that are the identity on integers (no op recorded, a new reference returned). */
const INTEGER_IDENTITY: ReadonlySet<UnaryOp> = new Set<UnaryOp>(["floor", "ceil", "round"]);

/** Elementwise `op(x)`. Float functions on integers promote to `f32`; `not` needs `bool`. */
export function unary(op: UnaryOp, x: Tensor): Tensor {
  checkOperand(op, x);
  if (op === "not") {
    if (x.dtype !== "bool") {
      throw new DTypeError(op, `expects a bool tensor, got ${x.dtype}; compare first, e.g. \`x.ne(0).not()\``);
    }
    return emitUnary(op, x);
  }
  if (FLOAT_UNARY.has(op)) {
    const compute = floatTypeFor(x.dtype);
    return compute === x.dtype ? emitUnary(op, x) : withDType(x, compute, (xf) => emitUnary(op, xf));
  }
  if (x.dtype === "bool") {
    throw new DTypeError(op, `dtype bool is not allowed; cast first, e.g. \`x.cast("i32").${op}()\``);
  }
  if (!isFloat(x.dtype) && INTEGER_IDENTITY.has(op)) return x.clone();
  if (x.dtype === "u32" && (op === "abs" || op === "relu")) return x.clone();
  if (x.dtype === "u32" && op === "neg") {
    throw new DTypeError(op, `dtype u32 has no negatives; cast first, e.g. \`x.cast("i32").neg()\``);
  }
  return emitUnary(op, x);
}

function emitUnary(op: UnaryOp, x: Tensor): Tensor {
  const input = use(op, x);
  return register(x.device, { kind: "unary", op, input, out: output(x.device, x.shape, x.dtype) });
}

/** How a binary op treats dtypes. */
type BinaryFamily = "arithmetic" | "float" | "compare" | "logical";

const FAMILY: Record<BinaryOp, BinaryFamily> = {
  add: "arithmetic", sub: "arithmetic", mul: "arithmetic", maximum: "arithmetic", minimum: "arithmetic",
  mod: "arithmetic", div: "float", pow: "float", atan2: "float",
  eq: "compare", ne: "compare", lt: "compare", le: "compare", gt: "compare", ge: "compare",
  and: "logical", or: "logical", xor: "logical",
};

function scalarValue(op: string, value: number | boolean): number {
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value !== "number") throw new ValueError(op, `expected a tensor or a number, got ${typeof value}`);
  return value;
}

/**
 * `lhs op rhs` with NumPy broadcasting; either side may be a JS scalar (weak: it takes the
 * tensor's dtype, see `dtype/dtype.ts`).
 * @throws ShapeError when the shapes cannot broadcast; DTypeError for a dtype the op refuses.
 */
export function binary(op: BinaryOp, lhs: Operand, rhs: Operand): Tensor {
  if (lhs instanceof Tensor && rhs instanceof Tensor) return binaryTensors(op, lhs, rhs);
  if (lhs instanceof Tensor) return binaryScalar(op, lhs, scalarValue(op, rhs as number | boolean), false);
  if (rhs instanceof Tensor) return binaryScalar(op, rhs, scalarValue(op, lhs), true);
  throw new ValueError(op, "needs at least one tensor operand; wrap a scalar with weft.tensor(x)");
}

function computeType(op: BinaryOp, a: DType, b: DType, aShape: readonly number[], bShape: readonly number[]): DType {
  const family = FAMILY[op];
  if (family === "logical") {
    if (a !== "bool" || b !== "bool") {
      throw new DTypeError(op, `expects bool operands, got ${a} ${JSON.stringify(aShape)} and ${b} ${JSON.stringify(bShape)}; compare first, e.g. \`x.ne(0)\``);
    }
    return "bool";
  }
  const common = promoteTypes(a, b);
  if (family === "float") return floatTypeFor(common);
  if (family === "arithmetic" && common === "bool") {
    throw new DTypeError(op, `arithmetic on two bool tensors is not defined; cast one first, e.g. \`x.cast("i32")\`, or use and/or/xor`);
  }
  return common;
}

function binaryTensors(op: BinaryOp, lhs: Tensor, rhs: Tensor): Tensor {
  const device = checkOperands(op, [lhs, rhs]);
  const shape = broadcastShapes(op, lhs.shape, rhs.shape);
  const compute = computeType(op, lhs.dtype, rhs.dtype, lhs.shape, rhs.shape);
  const outType = FAMILY[op] === "compare" ? "bool" : compute;
  const l = lhs.dtype === compute ? lhs : castUnchecked(lhs, compute);
  const r = rhs.dtype === compute ? rhs : castUnchecked(rhs, compute);
  const lIr = use(op, l);
  const rIr = use(op, r);
  const out = register(device, { kind: "binary", op, lhs: lIr, rhs: rIr, out: output(device, shape, outType) });
  release(l === lhs ? undefined : l, r === rhs ? undefined : r);
  return out;
}

function binaryScalar(op: BinaryOp, t: Tensor, scalar: number, scalarFirst: boolean): Tensor {
  checkOperand(op, t);
  const family = FAMILY[op];
  let compute: DType;
  if (family === "logical") {
    if (t.dtype !== "bool") {
      throw new DTypeError(op, `expects a bool tensor, got ${t.dtype} ${JSON.stringify(t.shape)}; compare first, e.g. \`x.ne(0)\``);
    }
    compute = "bool";
    scalar = scalar !== 0 && !Number.isNaN(scalar) ? 1 : 0;
  } else {
    compute = promoteWithScalar(t.dtype, scalar, family !== "compare");
    if (family === "float") compute = floatTypeFor(compute);
  }
  const outType = family === "compare" ? "bool" : compute;
  // The common case (no promotion) records directly: no closure, no temporary.
  if (t.dtype === compute) return emitBinaryScalar(op, t, scalar, scalarFirst, outType);
  return withDType(t, compute, (x) => emitBinaryScalar(op, x, scalar, scalarFirst, outType));
}

function emitBinaryScalar(op: BinaryOp, x: Tensor, scalar: number, scalarFirst: boolean, outType: DType): Tensor {
  const lhs = use(op, x);
  return register(x.device, { kind: "binary-scalar", op, lhs, scalar, scalarFirst, out: output(x.device, x.shape, outType) });
}

/** `x ** exponent` for a scalar exponent (`pow` on integers computes in `f32`). */
export function powScalar(x: Tensor, exponent: number): Tensor {
  return binary("pow", x, exponent);
}

/**
 * `min(max(x, lo), hi)`. An omitted bound is unbounded (records `maximum`/`minimum` only).
 * Integer tensors with a non-integer bound promote to `f32`.
 * @throws ValueError when `lo > hi` or a bound is NaN.
 */
export function clamp(x: Tensor, lo?: number, hi?: number): Tensor {
  checkOperands("clamp", [x]);
  if (lo !== undefined && Number.isNaN(lo)) throw new ValueError("clamp", "the lower bound is NaN; pass a number or undefined");
  if (hi !== undefined && Number.isNaN(hi)) throw new ValueError("clamp", "the upper bound is NaN; pass a number or undefined");
  if (lo !== undefined && hi !== undefined && lo > hi) {
    throw new ValueError("clamp", `lower bound ${lo} exceeds upper bound ${hi}; swap them`);
  }
  if (x.dtype === "bool") throw new DTypeError("clamp", `dtype bool is not allowed; cast first, e.g. \`x.cast("i32")\``);
  if (lo === undefined && hi === undefined) return x.clone();
  if (lo === undefined) return binary("minimum", x, hi as number);
  if (hi === undefined) return binary("maximum", x, lo);
  let compute = promoteWithScalar(x.dtype, lo, true);
  compute = promoteTypes(compute, promoteWithScalar(x.dtype, hi, true));
  return withDType(x, compute, (xc) => {
    const input = use("clamp", xc);
    return register(xc.device, { kind: "clamp", input, min: lo, max: hi, out: output(xc.device, xc.shape, compute) });
  });
}

/** Checks that `dtype` is a dtype `device` can hold, naming `op`. */
export function checkDType(op: string, dtype: unknown, device: Device): DType {
  if (!isDType(dtype)) {
    throw new DTypeError(op, `unknown dtype ${JSON.stringify(dtype)}; use one of "f32", "i32", "u32", "bool"${device.supports("f16") ? ', "f16"' : ""}`);
  }
  if (!device.supports(dtype)) {
    throw new UnsupportedError(`${dtype} on ${device.label}`, `${op}: this device does not store ${dtype}; use f32`);
  }
  return dtype;
}

/** Converts `x` to `dtype` (a new reference when it already has it). Float → int truncates toward 0. */
export function cast(x: Tensor, dtype: DType): Tensor {
  checkOperands("cast", [x]);
  checkDType("cast", dtype, x.device);
  if (x.dtype === dtype) return x.clone();
  return castUnchecked(x, dtype);
}

/**
 * `condition ? a : b`, broadcast over all three. `condition` must be `bool`; scalar branches are
 * weak (they take the other branch's dtype).
 */
export function where(condition: Tensor, a: Operand, b: Operand): Tensor {
  const tensors = [condition, a, b].filter((x): x is Tensor => x instanceof Tensor);
  const device = checkOperands("where", tensors);
  if (condition.dtype !== "bool") {
    throw new DTypeError("where", `the condition must be bool, got ${condition.dtype}; compare first, e.g. \`x.gt(0)\``);
  }
  const av = a instanceof Tensor ? undefined : scalarValue("where", a);
  const bv = b instanceof Tensor ? undefined : scalarValue("where", b);
  let dtype: DType;
  if (a instanceof Tensor && b instanceof Tensor) dtype = promoteTypes(a.dtype, b.dtype);
  else if (a instanceof Tensor) dtype = promoteWithScalar(a.dtype, bv as number, false);
  else if (b instanceof Tensor) dtype = promoteWithScalar(b.dtype, av as number, false);
  else dtype = Number.isInteger(av) && Number.isInteger(bv) ? "i32" : "f32";
  if (typeof a === "boolean" && typeof b === "boolean") dtype = "bool";
  const shape = broadcastShapes(
    "where",
    condition.shape,
    a instanceof Tensor ? a.shape : [],
    b instanceof Tensor ? b.shape : [],
  );
  const branch = (x: Tensor | undefined, v: number | undefined): Tensor => {
    if (x === undefined) return register(device, { kind: "full", value: v ?? 0, out: output(device, [], dtype) });
    return x.dtype === dtype ? x : castUnchecked(x, dtype);
  };
  const at = branch(a instanceof Tensor ? a : undefined, av);
  const bt = branch(b instanceof Tensor ? b : undefined, bv);
  const out = register(device, {
    kind: "where",
    condition: use("where", condition),
    lhs: use("where", at),
    rhs: use("where", bt),
    out: output(device, shape, dtype),
  });
  release(at === a ? undefined : at, bt === b ? undefined : bt);
  return out;
}
