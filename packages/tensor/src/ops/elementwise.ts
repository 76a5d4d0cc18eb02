/**
 * Elementwise ops: unary functions, binary arithmetic with broadcasting, compares, logical ops,
 * `where`, `clamp` and `cast`. Each records one fusion-friendly operation (plus `cast`s where the
 * promotion table of `dtype/dtype.ts` asks for them).
 *
 * @remarks
 * **Integer scalars** (NumPy 2 / NEP 50, `docs/semantics.md` "Integer scalars"): a JS number
 * combined with an integer tensor must be a value of the dtype the op computes in. Arithmetic with
 * an integer scalar outside that dtype's range (`u32.add(-1)`, `i32.mul(3e9)`) is a `DTypeError`
 * at the call; `maximum`/`minimum`/`clamp` with such a bound give the exact answer when it is
 * representable (`u32.maximum(-1)` is `x`) and a `DTypeError` otherwise. A comparison with any
 * number — out of range, non-integral, ±Infinity, NaN — gives the exact mathematical answer: it is
 * rewritten to a comparison with an integer of the dtype (`x < 2.5` → `x < 3`) or, when the
 * answer is the same for every element (`u32.gt(-1)`), to an always-true/always-false comparison
 * of the tensor (`x >= min`, `x < min`), which still carries the tensor's computation error.
 *
 * @module
 */
import { UnsupportedError, ValueError, describeValue } from "@weft/environment";
import { BinaryOpIr, ClampOpIr, FullOpIr, ScalarOpIr, UnaryOpIr, WhereOpIr, type BinaryOp, type DType, type UnaryOp } from "@weft/fusion";
import type { Device } from "../device/device.js";
import { fitsDType, floatTypeFor, integerRange, isDType, isFloat, promoteTypes, promoteWithScalar, scalarPromotion } from "../dtype/dtype.js";
import { DTypeError } from "../errors/tensor-errors.js";
import { broadcastPair, broadcastShapes } from "../shape/shape.js";
import { checkOperandValue, checkTensor } from "../tensor/arguments.js";
import { castUnchecked, checkOperand, checkOperandPair, checkOperands, output, register, release, releaseOne, use, withDType } from "../tensor/record.js";
import { Tensor } from "../tensor/tensor.js";

/** A right-hand operand: a tensor or a weak JS scalar (booleans count as 0 and 1). */
export type Operand = Tensor | number | boolean;

/**
 * How a unary function treats dtypes:
 * - `float`: defined on floats only; integer and bool inputs compute in `f32`;
 * - `rounding`: `floor`/`ceil`/`round`, the identity on integers (a new reference, no op);
 * - `signed`: `neg`/`abs`/`relu`/`sign`/`square`, numeric (bool refused; `abs`/`relu` of `u32`
 *   is the identity, `neg` of `u32` is refused);
 * - `logical`: `not`, bool only.
 */
type UnaryFamily = "float" | "rounding" | "signed" | "logical";

/** Every unary function and its family: the one table `unary` validates names against. */
const UNARY: Readonly<Record<UnaryOp, UnaryFamily>> = {
  exp: "float", log: "float", log2: "float", log1p: "float", expm1: "float", sqrt: "float", rsqrt: "float",
  sin: "float", cos: "float", tan: "float", tanh: "float", sigmoid: "float", gelu: "float",
  silu: "float", erf: "float", reciprocal: "float",
  floor: "rounding", ceil: "rounding", round: "rounding",
  neg: "signed", abs: "signed", relu: "signed", sign: "signed", square: "signed",
  not: "logical",
};

/** Every unary function's name (each is also a `Tensor` method of the same name). */
export const UNARY_OPS: readonly UnaryOp[] = Object.keys(UNARY) as UnaryOp[];

/** The op name as a unary function, or a `ValueError` listing the names. */
function checkUnaryOp(op: unknown): UnaryOp {
  if (typeof op === "string" && Object.hasOwn(UNARY, op)) return op as UnaryOp;
  throw new ValueError("unary", `unknown unary function ${describeValue(op)}; use one of ${Object.keys(UNARY).join(", ")}`);
}

/** Elementwise `op(x)`. Float functions on integers promote to `f32`; `not` needs `bool`. */
export function unary(op: UnaryOp, x: Tensor): Tensor {
  const family = UNARY[checkUnaryOp(op)];
  if (!(x instanceof Tensor)) checkTensor(op, "the input", x);
  checkOperand(op, x);
  switch (family) {
    case "logical":
      if (x.dtype !== "bool") {
        throw new DTypeError(op, `expects a bool tensor, got ${x.dtype}; compare first, e.g. \`x.ne(0).not()\``);
      }
      return emitUnary(op, x);
    case "float": {
      const compute = floatTypeFor(x.dtype);
      return compute === x.dtype ? emitUnary(op, x) : withDType(x, compute, (xf) => emitUnary(op, xf));
    }
    case "rounding":
    case "signed":
      if (x.dtype === "bool") {
        throw new DTypeError(op, `dtype bool is not allowed; cast first, e.g. \`x.cast("i32").${op}()\``);
      }
      if (!isFloat(x.dtype) && family === "rounding") return x.clone();
      if (x.dtype === "u32" && (op === "abs" || op === "relu")) return x.clone();
      if (x.dtype === "u32" && op === "neg") {
        throw new DTypeError(op, `dtype u32 has no negatives; cast first, e.g. \`x.cast("i32").neg()\``);
      }
      return emitUnary(op, x);
    default:
      return family satisfies never;
  }
}

function emitUnary(op: UnaryOp, x: Tensor): Tensor {
  const input = use(op, x);
  return register(x.device, new UnaryOpIr(op, input, output(x.device, x.shape, x.dtype)));
}

/** How a binary op treats dtypes. */
type BinaryFamily = "arithmetic" | "float" | "compare" | "logical";

/** Every binary function and its family: the one table `binary` validates names against. */
const FAMILY: Readonly<Record<BinaryOp, BinaryFamily>> = {
  add: "arithmetic", sub: "arithmetic", mul: "arithmetic", maximum: "arithmetic", minimum: "arithmetic",
  mod: "arithmetic", floorDiv: "arithmetic", div: "float", pow: "float", atan2: "float",
  eq: "compare", ne: "compare", lt: "compare", le: "compare", gt: "compare", ge: "compare",
  and: "logical", or: "logical", xor: "logical",
};

/** Every binary function's name (each is also a `Tensor` method of the same name). */
export const BINARY_OPS: readonly BinaryOp[] = Object.keys(FAMILY) as BinaryOp[];
/** {@link BINARY_OPS} as a set: what validating a name per call looks up (a hash of an interned string). */
const BINARY_NAMES: ReadonlySet<string> = new Set(BINARY_OPS);

/** The op name as a binary function, or a `ValueError` listing the names. */
function checkBinaryOp(op: unknown): BinaryOp {
  if (typeof op === "string" && BINARY_NAMES.has(op)) return op as BinaryOp;
  throw new ValueError("binary", `unknown binary function ${describeValue(op)}; use one of ${Object.keys(FAMILY).join(", ")}`);
}

function scalarValue(value: number | boolean): number {
  return typeof value === "boolean" ? (value ? 1 : 0) : value;
}

/**
 * `lhs op rhs` with NumPy broadcasting; either side may be a JS scalar (weak: it takes the
 * tensor's dtype, see `dtype/dtype.ts` and the integer-scalar rules in the module doc).
 * @throws ShapeError when the shapes cannot broadcast; DTypeError for a dtype the op refuses or an
 *   integer scalar the dtype cannot hold; ValueError for an operand that is not a Tensor, a number
 *   or a boolean.
 */
export function binary(op: BinaryOp, lhs: Operand, rhs: Operand): Tensor {
  checkBinaryOp(op);
  if (lhs instanceof Tensor && rhs instanceof Tensor) return binaryTensors(op, lhs, rhs);
  checkOperandValue(op, "the left operand", lhs);
  checkOperandValue(op, "the right operand", rhs);
  if (lhs instanceof Tensor) return binaryScalar(op, lhs, scalarValue(rhs as number | boolean), false);
  if (rhs instanceof Tensor) return binaryScalar(op, rhs, scalarValue(lhs as number | boolean), true);
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
  const device = checkOperandPair(op, lhs, rhs);
  const shape = broadcastPair(op, lhs.shape, rhs.shape);
  const compute = computeType(op, lhs.dtype, rhs.dtype, lhs.shape, rhs.shape);
  const outType = FAMILY[op] === "compare" ? "bool" : compute;
  const l = lhs.dtype === compute ? lhs : castUnchecked(lhs, compute);
  const r = rhs.dtype === compute ? rhs : castUnchecked(rhs, compute);
  const lIr = use(op, l);
  const rIr = use(op, r);
  const out = register(device, new BinaryOpIr(op, lIr, rIr, output(device, shape, outType)));
  if (l !== lhs) releaseOne(l);
  if (r !== rhs) releaseOne(r);
  return out;
}

/** The message part every out-of-range scalar error shares: the value, the dtype's range, the fix. */
function outOfRange(scalar: number, dtype: DType): string {
  const range = integerRange(dtype);
  const bounds = range === undefined ? "" : ` (its range is [${range[0]}, ${range[1]}])`;
  const wider = dtype === "u32" ? `cast the tensor to "i32" or "f32" first` : `cast the tensor to "f32" first`;
  return `the scalar ${scalar} is not a value of ${dtype}${bounds}; ${wider}, or pass an in-range scalar`;
}

function binaryScalar(op: BinaryOp, t: Tensor, scalar: number, scalarFirst: boolean): Tensor {
  checkOperand(op, t);
  const family = FAMILY[op];
  let compute: DType;
  switch (family) {
    case "logical":
      if (t.dtype !== "bool") {
        throw new DTypeError(op, `expects a bool tensor, got ${t.dtype} ${JSON.stringify(t.shape)}; compare first, e.g. \`x.ne(0)\``);
      }
      compute = "bool";
      scalar = scalar !== 0 ? 1 : 0; // `x != 0`, as a cast: NaN is true
      break;
    case "compare":
      if (!isFloat(t.dtype)) return exactIntegerCompare(op, t, scalar, scalarFirst);
      compute = t.dtype;
      break;
    case "float":
      compute = floatTypeFor(scalarPromotion(t.dtype, scalar, true));
      break;
    case "arithmetic": {
      compute = scalarPromotion(t.dtype, scalar, true);
      if (!fitsDType(scalar, compute)) {
        // max(x, s) with s below every value is x; min(x, s) with s above every value is x.
        const range = integerRange(compute);
        if (range !== undefined && compute === t.dtype) {
          if (op === "maximum" && scalar < range[0]) return t.clone();
          if (op === "minimum" && scalar > range[1]) return t.clone();
        }
        throw new DTypeError(op, outOfRange(scalar, compute));
      }
      break;
    }
    default:
      return family satisfies never;
  }
  const outType = family === "compare" ? "bool" : compute;
  // The common case (no promotion) records directly: no closure, no temporary.
  if (t.dtype === compute) return emitBinaryScalar(op, t, scalar, scalarFirst, outType);
  return withDType(t, compute, (x) => emitBinaryScalar(op, x, scalar, scalarFirst, outType));
}

/** `a op b` with the operands swapped: `s < x` is `x > s`. */
const SWAPPED: Readonly<Record<"eq" | "ne" | "lt" | "le" | "gt" | "ge", "eq" | "ne" | "lt" | "le" | "gt" | "ge">> = {
  eq: "eq", ne: "ne", lt: "gt", le: "ge", gt: "lt", ge: "le",
};

/**
 * `x op scalar` (or `scalar op x`) for an integer or bool `x`, exactly (module doc): the scalar is
 * replaced by an integer `c` of `x`'s dtype with the same answer for every integer `x`, or the
 * whole comparison by an always-true (`x >= min`) or always-false (`x < min`) one.
 */
function exactIntegerCompare(opArg: BinaryOp, x: Tensor, scalar: number, scalarFirst: boolean): Tensor {
  const op = scalarFirst ? SWAPPED[opArg as keyof typeof SWAPPED] : (opArg as keyof typeof SWAPPED);
  const range = integerRange(x.dtype);
  if (range === undefined) throw new DTypeError(opArg, `exact integer comparison of a ${x.dtype} tensor`);
  const [lo, hi] = range;
  let answer: boolean | undefined;
  let c = scalar;
  if (Number.isNaN(scalar)) {
    answer = op === "ne";
  } else {
    switch (op) {
      case "lt": // x < s ⟺ x < ceil(s)
        c = Math.ceil(scalar);
        answer = c > hi ? true : c <= lo ? false : undefined;
        break;
      case "le": // x ≤ s ⟺ x ≤ floor(s)
        c = Math.floor(scalar);
        answer = c >= hi ? true : c < lo ? false : undefined;
        break;
      case "gt": // x > s ⟺ x > floor(s)
        c = Math.floor(scalar);
        answer = c < lo ? true : c >= hi ? false : undefined;
        break;
      case "ge": // x ≥ s ⟺ x ≥ ceil(s)
        c = Math.ceil(scalar);
        answer = c <= lo ? true : c > hi ? false : undefined;
        break;
      case "eq":
        answer = fitsDType(scalar, x.dtype) ? undefined : false;
        break;
      case "ne":
        answer = fitsDType(scalar, x.dtype) ? undefined : true;
        break;
      default:
        return op satisfies never;
    }
  }
  if (answer === undefined) return emitBinaryScalar(op, x, c, false, "bool");
  // Still a comparison of `x`, so the result carries x's computation error like any other use.
  return emitBinaryScalar(answer ? "ge" : "lt", x, lo, false, "bool");
}

function emitBinaryScalar(op: BinaryOp, x: Tensor, scalar: number, scalarFirst: boolean, outType: DType): Tensor {
  const lhs = use(op, x);
  return register(x.device, new ScalarOpIr(op, lhs, scalar, scalarFirst, output(x.device, x.shape, outType)));
}

/** `x ** exponent` for a scalar exponent (`pow` on integers computes in `f32`). */
export function powScalar(x: Tensor, exponent: number): Tensor {
  return binary("pow", x, exponent);
}

/**
 * `min(max(x, lo), hi)`. An omitted bound is unbounded (records `maximum`/`minimum` only).
 * Integer tensors with a non-integer bound promote to `f32`; an integer bound outside an integer
 * dtype's range is dropped when it cannot bind (`u32.clamp(-2, 6)` is `u32.clamp(undefined, 6)`)
 * and a `DTypeError` when every result would be out of range (`u32.clamp(-5, -2)`).
 * @throws ValueError when `lo > hi`, a bound is NaN or not a number.
 */
export function clamp(x: Tensor, lo?: number, hi?: number): Tensor {
  checkTensor("clamp", "the input", x);
  checkOperands("clamp", [x]);
  for (const [name, bound] of [["lower", lo], ["upper", hi]] as const) {
    if (bound !== undefined && typeof bound !== "number") {
      throw new ValueError("clamp", `pass the ${name} bound as a number or undefined, not ${describeValue(bound)}`);
    }
    if (bound !== undefined && Number.isNaN(bound)) throw new ValueError("clamp", `the ${name} bound is NaN; pass a number or undefined`);
  }
  if (lo !== undefined && hi !== undefined && lo > hi) {
    throw new ValueError("clamp", `lower bound ${lo} exceeds upper bound ${hi}; swap them`);
  }
  if (x.dtype === "bool") throw new DTypeError("clamp", `dtype bool is not allowed; cast first, e.g. \`x.cast("i32")\``);
  const range = integerRange(x.dtype);
  if (range !== undefined) {
    // Integral bounds outside the dtype: a bound below (above) every value does not bind.
    if (lo !== undefined && Number.isInteger(lo) && lo > range[1]) throw new DTypeError("clamp", outOfRange(lo, x.dtype));
    if (hi !== undefined && Number.isInteger(hi) && hi < range[0]) throw new DTypeError("clamp", outOfRange(hi, x.dtype));
    if (lo !== undefined && Number.isInteger(lo) && lo < range[0]) lo = undefined;
    if (hi !== undefined && Number.isInteger(hi) && hi > range[1]) hi = undefined;
  }
  if (lo === undefined && hi === undefined) return x.clone();
  if (lo === undefined) return binary("minimum", x, hi as number);
  if (hi === undefined) return binary("maximum", x, lo);
  let compute = promoteWithScalar(x.dtype, lo, true);
  compute = promoteTypes(compute, promoteWithScalar(x.dtype, hi, true));
  const [min, max] = [lo, hi];
  return withDType(x, compute, (xc) => {
    const input = use("clamp", xc);
    return register(xc.device, new ClampOpIr(input, min, max, output(xc.device, xc.shape, compute)));
  });
}

/** Checks that `dtype` is a dtype `device` can hold, naming `op`. */
export function checkDType(op: string, dtype: unknown, device: Device): DType {
  if (!isDType(dtype)) {
    throw new DTypeError(op, `unknown dtype ${describeValue(dtype)}; use one of "f32", "i32", "u32", "bool"${device.supports("f16") ? ', "f16"' : ""}`);
  }
  if (!device.supports(dtype)) {
    throw new UnsupportedError(`${dtype} on ${device.label}`, `${op}: this device does not store ${dtype}; use f32`);
  }
  return dtype;
}

/** Converts `x` to `dtype` (a new reference when it already has it). Float → int truncates toward 0. */
export function cast(x: Tensor, dtype: DType): Tensor {
  checkTensor("cast", "the input", x);
  checkOperands("cast", [x]);
  checkDType("cast", dtype, x.device);
  if (x.dtype === dtype) return x.clone();
  return castUnchecked(x, dtype);
}

/**
 * `condition ? a : b`, broadcast over all three. `condition` must be `bool`; scalar branches are
 * weak (they take the other branch's dtype, and must be values of it when it is an integer dtype).
 */
export function where(condition: Tensor, a: Operand, b: Operand): Tensor {
  checkTensor("where", "the condition", condition);
  checkOperandValue("where", "the first branch", a);
  checkOperandValue("where", "the second branch", b);
  const tensors = [condition, a, b].filter((x): x is Tensor => x instanceof Tensor);
  const device = checkOperands("where", tensors);
  if (condition.dtype !== "bool") {
    throw new DTypeError("where", `the condition must be bool, got ${condition.dtype}; compare first, e.g. \`x.gt(0)\``);
  }
  const av = a instanceof Tensor ? undefined : scalarValue(a);
  const bv = b instanceof Tensor ? undefined : scalarValue(b);
  let dtype: DType;
  if (a instanceof Tensor && b instanceof Tensor) dtype = promoteTypes(a.dtype, b.dtype);
  else if (a instanceof Tensor) dtype = promoteWithScalar(a.dtype, bv as number, false);
  else if (b instanceof Tensor) dtype = promoteWithScalar(b.dtype, av as number, false);
  else dtype = Number.isInteger(av) && Number.isInteger(bv) ? "i32" : "f32";
  if (typeof a === "boolean" && typeof b === "boolean") dtype = "bool";
  for (const v of [av, bv]) {
    if (v !== undefined && !fitsDType(v, dtype)) {
      throw new DTypeError("where", outOfRange(v, dtype));
    }
  }
  const shape = broadcastShapes(
    "where",
    condition.shape,
    a instanceof Tensor ? a.shape : [],
    b instanceof Tensor ? b.shape : [],
  );
  const branch = (x: Tensor | undefined, v: number | undefined): Tensor => {
    if (x === undefined) return register(device, new FullOpIr(output(device, [], dtype), v ?? 0));
    return x.dtype === dtype ? x : castUnchecked(x, dtype);
  };
  const at = branch(a instanceof Tensor ? a : undefined, av);
  const bt = branch(b instanceof Tensor ? b : undefined, bv);
  const out = register(device, new WhereOpIr(use("where", condition), use("where", at), use("where", bt), output(device, shape, dtype)));
  release(at === a ? undefined : at, bt === b ? undefined : bt);
  return out;
}
