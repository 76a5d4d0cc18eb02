/**
 * The bad-input table: every public entry point of `@weft/tensor` called with bad arguments, each
 * row naming the error class it must throw. Issue 9: bad input gets a typed error *at the call*
 * that names the op and the fix, and leaves every piece of state as it was — `memory()`, the
 * pending work, the current device.
 *
 * @remarks
 * **Rows.** One row is one bad call: the entry point as a user writes it (`"sum"`,
 * `"Tensor.sum"`), what is wrong with the call, the call itself (on {@link BadInputEnv}'s
 * tensors), the error class and the op the message must start with. Pick one bad argument per row
 * (gpuweb/cts style: a control is the rest of the kit, then one invalid value at a time).
 * **What a row checks** ({@link runBadInputCase}): the call throws synchronously (or, for an async
 * entry point, its promise rejects before anything ran) an instance of the class; the message
 * starts with `"<op>: "` and says what to do (a fix verb: use, pass, cast, …); the state probe
 * reads the same before and after; a call that wrongly succeeds has its tensors disposed and fails
 * the row.
 * **Coverage.** `weft`'s test asserts that every exported function and every `Tensor` method
 * appears in some row (or in its list of argument-free entry points), so a new entry point cannot
 * skip the table.
 *
 * @module
 */
import {
  StreamId,
  Stream,
  UnsupportedError,
  ValueError,
  setStreamPolicy,
  setStreamPolicyFromConfig,
} from "@weft/environment";
import { DisposedTensorError } from "@weft/fusion";
import { Device, setDevice } from "../device/device.js";
import { isFloat, isInteger, promoteTypes, promoteWithScalar } from "../dtype/dtype.js";
import { AxisError, DTypeError, DeviceMismatchError, ShapeError } from "../errors/tensor-errors.js";
import { arange, eye, full, scalar, fullLike, linspace, ones, onesLike, rand, randLike, randn, randnLike, seed, tensor, zeros, zerosLike } from "../ops/creation.js";
import { BINARY_OPS, UNARY_OPS, binary, cast, clamp, unary } from "../ops/elementwise.js";
import * as fn from "../ops/functions.js";
import { matmul } from "../ops/matmul.js";
import { elu, floorDiv, isFinite, isInf, isNaN, leakyRelu, log2, selu, softplus } from "../ops/math.js";
import { oneHot, repeat, tile, tril, triu } from "../ops/structure.js";
import { layerNorm } from "../ops/normalization.js";
import { einsum } from "../ops/einsum.js";
import { cumprod, cumsum } from "../ops/scan.js";
import { argsort, sort, topk } from "../ops/sort.js";
import { scatter, scatterAdd } from "../ops/scatter.js";
import { avgPool2d, conv1d, conv2d, maxPool2d } from "../ops/convolution.js";
import { concat, expand, flatten, flip, gather, pad, permute, reshape, slice, split, squeeze, stack, transpose, unsqueeze } from "../ops/layout.js";
import { argReduce, logSoftmax, logSumExp, reduce, softmax, std, variance } from "../ops/reduce.js";
import { broadcastShapes } from "../shape/shape.js";
import { scope, tidy } from "../lifetime/lifetime.js";
import * as forms from "../functional/functional.js";
import { formatValues } from "../format/format.js";
import { Tensor } from "../tensor/tensor.js";

/** The live tensors a row's call may use. Nothing in a row may change them. */
export interface BadInputEnv {
  /** The device under test (the current device while the table runs). */
  readonly device: Device;
  /** f32 `[2,3]`. */
  readonly x: Tensor;
  /** f32 `[4]` (does not broadcast with `x`). */
  readonly v: Tensor;
  /** i32 `[3]`. */
  readonly i: Tensor;
  /** u32 `[3]`: `[0, 5, 10]`. */
  readonly u: Tensor;
  /** bool `[3]`. */
  readonly b: Tensor;
  /** f32 scalar `[]`. */
  readonly s: Tensor;
  /** f32 `[0, 3]`, empty. */
  readonly e: Tensor;
  /** A disposed f32 `[3]`. */
  readonly dead: Tensor;
  /** f32 `[3]` on another device; rows that need it are skipped when absent. */
  readonly foreign: Tensor | undefined;
}

/** One bad call and what it must throw. */
export interface BadInputCase {
  /** The entry point as a user writes it: `"sum"` (a function), `"Tensor.sum"` (a method). */
  readonly entry: string;
  /** What is wrong with the call, e.g. `"axes is a string"`. */
  readonly what: string;
  /** The call. May return a promise (async entry points): its rejection counts as the throw. */
  readonly call: (env: BadInputEnv) => unknown;
  /** The class the error must be an instance of. */
  readonly error: abstract new (...args: never[]) => Error;
  /** The op the message must start with (`"<op>: "`); defaults to `entry` without `Tensor.`. */
  readonly op?: string;
  /** Fragments the message must also contain (what was given, the values involved). */
  readonly mentions?: readonly string[];
  /** Whether the row needs {@link BadInputEnv.foreign}. */
  readonly needsForeign?: boolean;
}

/** Words that say what to do; every bad-input message contains one (the "names the fix" rule). */
export const FIX_WORDS =
  /\b(use|pass|cast|call|create|reshape|expand|check|swap|give|list|slice|compare|wrap|round|convert|move|keep|transpose|squeeze|remove|choose|pick|infer|clamp|reduce|pad|split|stack|concat|name|round|make|create|put|insert|keep|validate)\b/i;

/** Shorthand for a row. */
function row(entry: string, what: string, call: (env: BadInputEnv) => unknown, error: BadInputCase["error"], extra: Partial<BadInputCase> = {}): BadInputCase {
  return { entry, what, call, error, ...extra };
}

/** The rows of `@weft/environment`'s stream entry points (the ones `weft` re-exports). */
export function environmentBadInputCases(): BadInputCase[] {
  return [
    row("setStreamPolicy", "an unknown policy", () => setStreamPolicy("parallel" as never), ValueError, { mentions: ['"parallel"', '"per-task"'] }),
    row("setStreamPolicy", "no policy", () => setStreamPolicy(undefined as never), ValueError),
    row("setStreamPolicyFromConfig", "a number", () => setStreamPolicyFromConfig(1 as never), ValueError),
    row("StreamId.of", "a negative id", () => StreamId.of(-1), ValueError, { mentions: ["-1"] }),
    row("StreamId.executes", "a fractional id", () => StreamId.executes(1.5 as StreamId, () => 1), ValueError),
    row("StreamId.executes", "fn is not a function", () => StreamId.executes(StreamId.DEFAULT, "f" as never), ValueError),
    row("Stream.run", "the id is a string", () => Stream.run("1" as never, () => 1), ValueError),
    row("Stream.run", "fn is missing", () => Stream.run(StreamId.DEFAULT, undefined as never), ValueError),
    row("Stream.spawn", "fn is a number", () => Stream.spawn(1 as never), ValueError),
  ];
}

/** Every row of `@weft/tensor`'s entry points (functions and `Tensor` methods). */
export function badInputCases(): BadInputCase[] {
  const any = (v: unknown): never => v as never;
  return [
    // ── creation ─────────────────────────────────────────────────────────────────────────────
    row("scalar", "an array (weft.tensor makes arrays)", () => scalar(any([1])), ValueError),
    row("scalar", "an unknown dtype", () => scalar(1, { dtype: any("f64") }), DTypeError),
    row("tensor", "values is a string", () => tensor(any("abc")), ValueError, { mentions: ['string "abc"'] }),
    row("tensor", "a ragged nested array", () => tensor([[1, 2], [3]]), ShapeError, { mentions: ["ragged"] }),
    row("tensor", "a string leaf", () => tensor(any([1, "2"])), ValueError),
    row("tensor", "a BigInt64Array", () => tensor(new BigInt64Array(2)), UnsupportedError, { op: "unsupported", mentions: ["tensor: ", "BigInt64Array"] }),
    row("tensor", "a DataView", () => tensor(new DataView(new ArrayBuffer(4))), ValueError),
    row("tensor", "a shape that does not hold the values", () => tensor([1, 2, 3], { shape: [4] }), ShapeError),
    row("tensor", "an unknown dtype", () => tensor([1], { dtype: any("float32") }), DTypeError, { mentions: ['"float32"'] }),
    row("tensor", "a value u32 cannot hold", () => tensor([-1], { dtype: "u32" }), DTypeError, { mentions: ["-1"] }),
    row("tensor", "a fraction for i32", () => tensor(new Float32Array([1.5]), { dtype: "i32" }), DTypeError),
    row("tensor", "a misspelt option", () => tensor([1], any({ dtyp: "f32" })), ValueError, { mentions: ['"dtyp"'] }),
    row("tensor", "options is a string", () => tensor([1], any("f32")), ValueError),
    row("tensor", "the device option is a string", () => tensor([1], { device: any("cpu") }), ValueError),
    row("zeros", "the shape is a string", () => zeros(any("3")), ValueError),
    row("zeros", "a negative size", () => zeros([2, -1]), ShapeError, { mentions: ["-1"] }),
    row("zeros", "a fractional size", () => zeros([2.5]), ShapeError),
    row("zeros", "an unknown dtype", () => zeros([2], { dtype: any("int") }), DTypeError),
    row("ones", "a size past 2^53", () => ones([1e20]), ShapeError),
    row("ones", "a NaN size", () => ones([Number.NaN]), ShapeError),
    row("full", "the value is a string", () => full([2], any("1")), ValueError),
    row("full", "-1 as u32", () => full([2], -1, { dtype: "u32" }), DTypeError, { mentions: ["-1", "u32"] }),
    row("full", "2^31 as i32", () => full([2], 2 ** 31, { dtype: "i32" }), DTypeError),
    row("full", "1.5 as i32", () => full([2], 1.5, { dtype: "i32" }), DTypeError),
    row("full", "NaN as i32", () => full([2], Number.NaN, { dtype: "i32" }), DTypeError),
    row("zerosLike", "not a tensor", () => zerosLike(any("x")), ValueError),
    row("zerosLike", "a disposed tensor", (t) => zerosLike(t.dead), DisposedTensorError),
    row("onesLike", "an unknown dtype", (t) => onesLike(t.x, { dtype: any("x") }), DTypeError),
    row("fullLike", "the value is a string", (t) => fullLike(t.x, any("a")), ValueError),
    row("fullLike", "-1 like a u32 tensor", (t) => fullLike(t.u, -1), DTypeError),
    row("arange", "start is a string", () => arange(any("5")), ValueError),
    row("arange", "step 0", () => arange(0, 10, 0), ValueError),
    row("arange", "an infinite stop", () => arange(0, Infinity), ValueError),
    row("arange", "negative values as u32", () => arange(-3, 3, 1, { dtype: "u32" }), DTypeError),
    row("arange", "values past i32", () => arange(2 ** 31 - 2, 2 ** 31 + 2, 1, { dtype: "i32" }), DTypeError),
    row("linspace", "a negative count", () => linspace(0, 1, -1), ValueError),
    row("linspace", "a fractional count", () => linspace(0, 1, 2.5), ValueError),
    row("linspace", "a NaN stop", () => linspace(0, Number.NaN, 3), ValueError),
    row("linspace", "an integer dtype", () => linspace(0, 1, 3, { dtype: "i32" }), DTypeError),
    row("eye", "a negative size", () => eye(-1), ValueError),
    row("eye", "m is a string", () => eye(2, any("3")), ValueError),
    row("rand", "the shape is a string", () => rand(any("3")), ValueError),
    row("rand", "a negative seed", () => rand([2], { seed: -1 }), ValueError),
    row("rand", "an integer dtype", () => rand([2], { dtype: "i32" }), DTypeError),
    row("randn", "a misspelt option", () => randn([2], any({ sed: 1 })), ValueError),
    row("randLike", "not a tensor", () => randLike(any(5)), ValueError),
    row("randnLike", "a disposed tensor", (t) => randnLike(t.dead), DisposedTensorError),
    row("seed", "a negative seed", () => seed(-1), ValueError),
    row("seed", "a string seed", () => seed(any("1")), ValueError),
    // ── elementwise ──────────────────────────────────────────────────────────────────────────
    row("unary", "an unknown function", (t) => unary(any("frobnicate"), t.x), ValueError, { mentions: ['"frobnicate"', "neg"] }),
    row("unary", "not a tensor", () => unary("neg", any("x")), ValueError, { op: "neg" }),
    row("Tensor.unary", "an unknown function", (t) => t.x.unary(any("frobnicate")), ValueError, { op: "unary" }),
    row("Tensor.neg", "u32 has no negatives", (t) => t.u.neg(), DTypeError),
    row("Tensor.abs", "bool", (t) => t.b.abs(), DTypeError),
    row("Tensor.not", "f32", (t) => t.x.not(), DTypeError),
    row("Tensor.exp", "a disposed tensor", (t) => t.dead.exp(), DisposedTensorError),
    row("binary", "an unknown function", (t) => binary(any("frob"), t.x, 1), ValueError),
    row("binary", "a string operand", (t) => binary("add", any("1"), t.x), ValueError, { op: "add" }),
    row("Tensor.binary", "an unknown function", (t) => t.x.binary(any("plus"), 1), ValueError, { op: "binary" }),
    row("add", "a string operand", (t) => fn.add(t.x, any("1")), ValueError, { mentions: ['string "1"'] }),
    row("add", "no tensor operand", () => fn.add(1, 2), ValueError),
    row("add", "shapes that do not broadcast", (t) => fn.add(t.x, t.v), ShapeError, { mentions: ["[2,3]", "[4]"] }),
    row("add", "two bool tensors", (t) => fn.add(t.b, t.b), DTypeError),
    row("add", "operands on two devices", (t) => fn.add(t.v, t.foreign as Tensor), DeviceMismatchError, { needsForeign: true }),
    row("add", "a disposed operand", (t) => fn.add(t.x, t.dead), DisposedTensorError),
    row("Tensor.add", "undefined", (t) => t.x.add(any(undefined)), ValueError, { op: "add" }),
    row("Tensor.add", "an object", (t) => t.x.add(any({})), ValueError, { op: "add" }),
    row("Tensor.add", "a nested array (wrap it in a tensor)", (t) => t.x.add(any([1, 2, 3])), ValueError, { op: "add" }),
    row("Tensor.add", "-1 to u32", (t) => t.u.add(-1), DTypeError, { op: "add", mentions: ["-1", "u32"] }),
    row("Tensor.sub", "2^32 from u32", (t) => t.u.sub(2 ** 32), DTypeError, { op: "sub" }),
    row("Tensor.mul", "3e9 times i32", (t) => t.i.mul(3e9), DTypeError, { op: "mul", mentions: ["3000000000", "i32"] }),
    row("Tensor.mul", "3e9 times bool (computes in i32)", (t) => t.b.mul(3e9), DTypeError, { op: "mul" }),
    row("Tensor.div", "a string", (t) => t.x.div(any("2")), ValueError, { op: "div" }),
    row("Tensor.pow", "a string", (t) => t.x.pow(any("2")), ValueError, { op: "pow" }),
    row("Tensor.maximum", "2^32 with u32 (every result out of range)", (t) => t.u.maximum(2 ** 32), DTypeError, { op: "maximum" }),
    row("Tensor.minimum", "-1 with u32 (every result out of range)", (t) => t.u.minimum(-1), DTypeError, { op: "minimum" }),
    row("Tensor.mod", "3e9 with i32", (t) => t.i.mod(3e9), DTypeError, { op: "mod" }),
    row("Tensor.atan2", "null", (t) => t.x.atan2(any(null)), ValueError, { op: "atan2" }),
    row("Tensor.eq", "a string", (t) => t.x.eq(any("a")), ValueError, { op: "eq" }),
    row("Tensor.ne", "shapes that do not broadcast", (t) => t.x.ne(t.v), ShapeError, { op: "ne" }),
    row("Tensor.lt", "a disposed tensor", (t) => t.x.lt(t.dead), DisposedTensorError, { op: "lt" }),
    row("Tensor.le", "an array", (t) => t.x.le(any([1])), ValueError, { op: "le" }),
    row("Tensor.gt", "a symbol", (t) => t.x.gt(any(Symbol("x"))), ValueError, { op: "gt" }),
    row("Tensor.ge", "a bigint", (t) => t.x.ge(any(1n)), ValueError, { op: "ge" }),
    row("Tensor.and", "f32 operands", (t) => t.x.and(t.x), DTypeError, { op: "and" }),
    row("Tensor.or", "a string", (t) => t.b.or(any("x")), ValueError, { op: "or" }),
    row("Tensor.xor", "an f32 tensor", (t) => t.x.xor(true), DTypeError, { op: "xor" }),
    row("sub", "a string", (t) => fn.sub(any("1"), t.x), ValueError),
    row("mul", "two bool tensors", (t) => fn.mul(t.b, t.b), DTypeError),
    row("div", "no tensor", () => fn.div(1, 2), ValueError),
    row("pow", "shapes that do not broadcast", (t) => fn.pow(t.x, t.v), ShapeError),
    row("maximum", "a string", (t) => fn.maximum(t.x, any("0")), ValueError),
    row("minimum", "a disposed tensor", (t) => fn.minimum(t.dead, 1), DisposedTensorError),
    row("mod", "-1 with u32", (t) => fn.mod(t.u, -1), DTypeError),
    row("atan2", "undefined", (t) => fn.atan2(t.x, any(undefined)), ValueError),
    row("eq", "undefined", (t) => fn.eq(t.x, any(undefined)), ValueError),
    row("ne", "no tensor", () => fn.ne(1, 1), ValueError),
    row("lt", "a string", (t) => fn.lt(any("a"), t.x), ValueError),
    row("le", "shapes that do not broadcast", (t) => fn.le(t.x, t.v), ShapeError),
    row("gt", "a disposed tensor", (t) => fn.gt(t.dead, 0), DisposedTensorError),
    row("ge", "an object", (t) => fn.ge(t.x, any({})), ValueError),
    row("logicalAnd", "f32 operands", (t) => fn.logicalAnd(t.x, t.x), DTypeError, { op: "and" }),
    row("logicalOr", "a string", (t) => fn.logicalOr(t.b, any("x")), ValueError, { op: "or" }),
    row("logicalXor", "an i32 tensor", (t) => fn.logicalXor(t.i, t.b), DTypeError, { op: "xor" }),
    row("logicalNot", "f32", (t) => fn.logicalNot(t.x), DTypeError, { op: "not" }),
    row("where", "an f32 condition", (t) => fn.where(t.x, 1, 0), DTypeError),
    row("where", "the condition is a string", () => fn.where(any("c"), 1, 0), ValueError),
    row("where", "-1 beside a u32 branch", (t) => fn.where(t.b, t.u, -1), DTypeError, { mentions: ["-1", "u32"] }),
    row("where", "a string branch", (t) => fn.where(t.b, t.x, any("a")), ValueError),
    row("Tensor.where", "branches on two devices", (t) => t.b.where(t.foreign as Tensor, 0), DeviceMismatchError, { op: "where", needsForeign: true }),
    row("clamp", "a string bound", (t) => clamp(t.x, any("0"), 1), ValueError),
    row("clamp", "lower above upper", (t) => clamp(t.x, 2, 1), ValueError),
    row("clamp", "a NaN bound", (t) => clamp(t.x, Number.NaN, 1), ValueError),
    row("clamp", "bool", (t) => clamp(t.b, 0, 1), DTypeError),
    row("clamp", "bounds below every u32", (t) => clamp(t.u, -5, -2), DTypeError, { mentions: ["-2", "u32"] }),
    row("Tensor.clamp", "not a tensor's bound", (t) => t.x.clamp(any([0]), 1), ValueError, { op: "clamp" }),
    row("cast", "an unknown dtype", (t) => cast(t.x, any("float")), DTypeError),
    row("cast", "not a tensor", () => cast(any("x"), "f32"), ValueError),
    row("Tensor.cast", "no dtype", (t) => t.x.cast(any(undefined)), DTypeError, { op: "cast" }),
    // Every unary and binary method: a disposed receiver, a string operand.
    ...UNARY_OPS.map((op) => row(`Tensor.${op}`, "a disposed tensor", (t) => (t.dead as unknown as Record<string, () => unknown>)[op]?.(), DisposedTensorError)),
    ...BINARY_OPS.map((op) => row(`Tensor.${op}`, "a string operand", (t) => (t.x as unknown as Record<string, (o: unknown) => unknown>)[op]?.("1"), ValueError)),
    // ── reductions ───────────────────────────────────────────────────────────────────────────
    row("Tensor.sum", 'axes "1" (a string)', (t) => t.x.sum(any("1")), ValueError, { op: "sum", mentions: ['string "1"'] }),
    row("Tensor.sum", "an axis out of range", (t) => t.x.sum(5), AxisError, { op: "sum", mentions: ["5", "[2,3]"] }),
    row("Tensor.sum", "a repeated axis", (t) => t.x.sum([0, 0]), AxisError, { op: "sum", mentions: ["repeated"] }),
    row("Tensor.sum", "a fractional axis", (t) => t.x.sum([0, 1.5]), ValueError, { op: "sum" }),
    row("Tensor.sum", "a misspelt option", (t) => t.x.sum(0, any({ keepdims: true })), ValueError, { op: "sum", mentions: ['"keepdims"', "keepDims"] }),
    row("Tensor.sum", "keepDims is a string", (t) => t.x.sum(0, any({ keepDims: "yes" })), ValueError, { op: "sum" }),
    row("Tensor.mean", "options is a string", (t) => t.x.mean(0, any("keep")), ValueError, { op: "mean" }),
    row("Tensor.max", "bool", (t) => t.b.max(), DTypeError, { op: "max" }),
    row("Tensor.max", "an empty axis", (t) => t.e.max(0), ShapeError, { op: "max" }),
    row("Tensor.min", "axes is null", (t) => t.x.min(any(null)), ValueError, { op: "min" }),
    row("Tensor.prod", "an axis out of range", (t) => t.x.prod(-3), AxisError, { op: "prod" }),
    row("Tensor.any", "axes is an object", (t) => t.x.any(any({})), ValueError, { op: "any" }),
    row("Tensor.all", "a disposed tensor", (t) => t.dead.all(), DisposedTensorError, { op: "all" }),
    row("reduce", "an unknown reduction", (t) => reduce(any("median"), t.x, undefined), ValueError, { mentions: ['"median"'] }),
    row("reduce", "not a tensor", () => reduce("sum", any("x"), undefined), ValueError, { op: "sum" }),
    row("argReduce", "an unknown reduction", (t) => argReduce(any("argmid"), t.x, 0), ValueError),
    row("Tensor.argmax", 'axis "0" (a string)', (t) => t.x.argmax(any("0")), ValueError, { op: "argmax" }),
    row("Tensor.argmin", "an axis out of range", (t) => t.x.argmin(2), AxisError, { op: "argmin" }),
    row("Tensor.argmax", "an empty axis", (t) => t.e.argmax(0), ShapeError, { op: "argmax" }),
    row("variance", "correction is a string", (t) => variance(t.x, 0, any({ correction: "1" })), ValueError),
    row("Tensor.variance", "a misspelt option", (t) => t.x.variance(0, any({ ddof: 1 })), ValueError, { op: "variance" }),
    row("std", "a repeated axis", (t) => std(t.x, [0, 0]), AxisError),
    row("Tensor.std", "not a tensor's axes", (t) => t.x.std(any("0")), ValueError, { op: "std" }),
    row("logSumExp", "an axis out of range", (t) => logSumExp(t.x, 3), AxisError),
    row("Tensor.logSumExp", "an empty axis", (t) => t.e.logSumExp(0), ShapeError, { op: "logSumExp" }),
    row("softmax", "an axis out of range", (t) => softmax(t.x, 2), AxisError),
    row("Tensor.softmax", "axis null", (t) => t.x.softmax(any(null)), ValueError, { op: "softmax" }),
    row("logSoftmax", "not a tensor", () => logSoftmax(any("x")), ValueError),
    row("Tensor.logSoftmax", 'axis "1"', (t) => t.x.logSoftmax(any("1")), ValueError, { op: "logSoftmax" }),
    // ── matmul ───────────────────────────────────────────────────────────────────────────────
    row("matmul", "no right operand", (t) => matmul(t.x, any(undefined)), ValueError, { mentions: ["right operand", "undefined"] }),
    row("Tensor.matmul", "no argument", (t) => (t.x.matmul as () => unknown)(), ValueError, { op: "matmul" }),
    row("Tensor.matmul", "a nested array", (t) => t.x.matmul(any([[1], [2], [3]])), ValueError, { op: "matmul" }),
    row("matmul", "inner dimensions differ", (t) => matmul(t.x, t.x), ShapeError, { mentions: ["[2,3]"] }),
    row("matmul", "a scalar operand", (t) => matmul(t.s, t.x), ShapeError),
    row("matmul", "operands on two devices", (t) => matmul(t.v, t.foreign as Tensor), DeviceMismatchError, { needsForeign: true }),
    // ── layout ───────────────────────────────────────────────────────────────────────────────
    row("reshape", "a different element count", (t) => reshape(t.x, [4]), ShapeError),
    row("reshape", "the shape is a string", (t) => reshape(t.x, any("6")), ValueError),
    row("reshape", "two -1", (t) => reshape(t.x, [-1, -1]), ShapeError),
    row("reshape", "not a tensor", () => reshape(any("x"), [6]), ValueError),
    row("Tensor.reshape", "no shape", (t) => t.x.reshape(any(undefined)), ValueError, { op: "reshape" }),
    row("flatten", "start is a string", (t) => flatten(t.x, any("0")), ValueError),
    row("Tensor.flatten", "an axis out of range", (t) => t.x.flatten(5), AxisError, { op: "flatten" }),
    row("Tensor.flatten", "start after end", (t) => t.x.flatten(1, 0), AxisError, { op: "flatten" }),
    row("permute", "too few axes", (t) => permute(t.x, [0]), AxisError),
    row("Tensor.permute", "a repeated axis", (t) => t.x.permute([0, 0]), AxisError, { op: "permute" }),
    row("Tensor.permute", "axes is a string", (t) => t.x.permute(any("01")), ValueError, { op: "permute" }),
    row("transpose", "an axis out of range", (t) => transpose(t.x, 0, 5), AxisError),
    row("Tensor.transpose", "a string axis", (t) => t.x.transpose(any("0")), ValueError, { op: "transpose" }),
    row("expand", "a lower rank", (t) => expand(t.x, [3]), ShapeError),
    row("Tensor.expand", "a size that does not grow from 1", (t) => t.x.expand([4, 3]), ShapeError, { op: "expand" }),
    row("Tensor.expand", "the shape is a string", (t) => t.x.expand(any("x")), ValueError, { op: "expand" }),
    row("squeeze", "an axis of size 2", (t) => squeeze(t.x, 0), ShapeError),
    row("Tensor.squeeze", "axes is a string", (t) => t.x.squeeze(any("0")), ValueError, { op: "squeeze" }),
    row("unsqueeze", "an axis out of range", (t) => unsqueeze(t.x, 4), AxisError),
    row("Tensor.unsqueeze", "no axis", (t) => (t.x.unsqueeze as () => unknown)(), ValueError, { op: "unsqueeze" }),
    row("slice", "step 0", (t) => slice(t.x, [[0, 2, 0]]), ValueError),
    row("slice", "an index out of range", (t) => slice(t.x, [5]), ShapeError),
    row("Tensor.slice", "specs is a string", (t) => t.x.slice(any("0:1")), ValueError, { op: "slice" }),
    row("Tensor.slice", "a fractional step", (t) => t.x.slice([[0, 1, -1.5]]), ValueError, { op: "slice" }),
    row("Tensor.slice", "more specs than dimensions", (t) => t.x.slice([0, 0, 0]), ShapeError, { op: "slice" }),
    row("concat", "shapes that differ off the axis", (t) => concat([t.x, t.v]), ShapeError),
    row("concat", "no tensors", () => concat([]), ValueError),
    row("concat", "not an array", () => concat(any("x")), ValueError),
    row("concat", "a string in the list", (t) => concat([t.x, any("y")]), ValueError),
    row("concat", "an axis out of range", (t) => concat([t.x, t.x], 5), AxisError),
    row("concat", "tensors on two devices", (t) => concat([t.v, t.foreign as Tensor]), DeviceMismatchError, { needsForeign: true }),
    row("Tensor.concat", "others is a tensor, not a list", (t) => t.x.concat(any(t.x)), ValueError, { op: "concat" }),
    row("stack", "different shapes", (t) => stack([t.x, t.v]), ShapeError),
    row("stack", "no tensors", () => stack([]), ValueError),
    row("stack", "an axis out of range", (t) => stack([t.x], 4), AxisError),
    row("split", "unequal parts", (t) => split(t.x, 4), ShapeError),
    row("Tensor.split", "sizes that do not add up", (t) => t.x.split([1, 2]), ShapeError, { op: "split" }),
    row("Tensor.split", "sections is a string", (t) => t.x.split(any("2")), ValueError, { op: "split" }),
    row("Tensor.split", "an axis out of range", (t) => t.x.split(2, 5), AxisError, { op: "split" }),
    row("gather", "f32 indices", (t) => gather(t.x, t.x, 0), DTypeError),
    row("gather", "no axis", (t) => (gather as (x: Tensor, i: Tensor) => unknown)(t.x, t.i), ValueError),
    row("Tensor.gather", "indices is an array", (t) => t.x.gather(any([0]), 0), ValueError, { op: "gather" }),
    row("Tensor.gather", "an axis out of range", (t) => t.x.gather(t.i, 3), AxisError, { op: "gather" }),
    row("pad", "a pair with one number", (t) => pad(t.x, any([[1]])), ValueError),
    row("pad", "a negative amount", (t) => pad(t.x, [[-1, 0]]), ValueError),
    row("pad", "more pairs than dimensions", (t) => pad(t.x, [[0, 0], [0, 0], [0, 0]]), ShapeError),
    row("Tensor.pad", "-1 into u32", (t) => t.u.pad([[1, 1]], -1), DTypeError, { op: "pad" }),
    row("Tensor.pad", "the value is a string", (t) => t.x.pad([[1, 1]], any("0")), ValueError, { op: "pad" }),
    // ── issue 7's ops (ops/math.ts, structure.ts, normalization.ts, einsum.ts, layout.ts flip) ──
    ...(["isNaN", "isInf", "isFinite", "selu", "softplus", "log2"] as const).flatMap((name) => [
      row(name, "a number instead of a tensor", () => ({ isNaN, isInf, isFinite, selu, softplus, log2 })[name](any(1)), ValueError),
      row(`Tensor.${name}`, "a disposed tensor", (t) => t.dead[name](), DisposedTensorError, { op: name }),
    ]),
    row("softplus", "beta is 0", (t) => softplus(t.x, 0), ValueError),
    row("softplus", "threshold is NaN", (t) => softplus(t.x, 1, NaN), ValueError),
    row("Tensor.softplus", "beta is a string", (t) => t.x.softplus(any("2")), ValueError, { op: "softplus" }),
    row("floorDiv", "shapes that do not broadcast", (t) => floorDiv(t.x, t.v), ShapeError),
    row("floorDiv", "two bool tensors", (t) => floorDiv(t.b, t.b), DTypeError),
    row("floorDiv", "two scalars", () => floorDiv(1, 2), ValueError),
    row("Tensor.floorDiv", "a string operand", (t) => t.x.floorDiv(any("2")), ValueError, { op: "floorDiv" }),
    row("Tensor.floorDiv", "-1 with u32", (t) => t.u.floorDiv(-1.5e10), DTypeError, { op: "floorDiv" }),
    row("leakyRelu", "alpha is a string", (t) => leakyRelu(t.x, any("0.1")), ValueError),
    row("Tensor.leakyRelu", "alpha is NaN", (t) => t.x.leakyRelu(NaN), ValueError, { op: "leakyRelu" }),
    row("elu", "a string instead of a tensor", () => elu(any("x")), ValueError),
    row("Tensor.elu", "alpha is Infinity", (t) => t.x.elu(Infinity), ValueError, { op: "elu" }),
    row("tril", "a rank-1 tensor", (t) => tril(t.v), ShapeError),
    row("Tensor.tril", "a fractional k", (t) => t.x.tril(0.5), ValueError, { op: "tril" }),
    row("triu", "a scalar", (t) => triu(t.s), ShapeError),
    row("Tensor.triu", "k is a string", (t) => t.x.triu(any("1")), ValueError, { op: "triu" }),
    row("flip", "an axis out of range", (t) => flip(t.x, 2), AxisError),
    row("flip", "a repeated axis", (t) => flip(t.x, [0, -2]), AxisError),
    row("Tensor.flip", "axes is a string", (t) => t.x.flip(any("0")), ValueError, { op: "flip" }),
    row("tile", "a negative rep", (t) => tile(t.x, [2, -1]), ValueError),
    row("Tensor.tile", "reps is a string", (t) => t.x.tile(any("2")), ValueError, { op: "tile" }),
    row("repeat", "counts that do not match the axis", (t) => repeat(t.x, [1, 2], 1), ShapeError),
    row("repeat", "a negative count", (t) => repeat(t.x, -1), ValueError),
    row("Tensor.repeat", "an axis out of range", (t) => t.x.repeat(2, 2), AxisError, { op: "repeat" }),
    row("oneHot", "f32 indices", (t) => oneHot(t.x, 3), DTypeError),
    row("oneHot", "a negative depth", (t) => oneHot(t.i, -1), ValueError),
    row("Tensor.oneHot", "a misspelt option", (t) => t.i.oneHot(3, any({ dtyp: "f32" })), ValueError, { op: "oneHot", mentions: ['"dtyp"'] }),
    row("Tensor.oneHot", "an unknown dtype", (t) => t.i.oneHot(3, { dtype: any("f64") }), DTypeError, { op: "oneHot" }),
    row("layerNorm", "a weight of the wrong shape", (t) => layerNorm(t.x, -1, { weight: t.v }), ShapeError),
    row("layerNorm", "a bool input", (t) => layerNorm(t.b), DTypeError),
    row("Tensor.layerNorm", "a negative eps", (t) => t.x.layerNorm(-1, { eps: -1 }), ValueError, { op: "layerNorm" }),
    row("Tensor.layerNorm", "an axis out of range", (t) => t.x.layerNorm(3), AxisError, { op: "layerNorm" }),
    row("Tensor.layerNorm", "bias is an array", (t) => t.x.layerNorm(-1, { bias: any([1, 2, 3]) }), ValueError, { op: "layerNorm" }),
    row("einsum", "subscripts that are not a string", (t) => einsum(any(1), t.x), ValueError),
    row("einsum", "one term for two operands", (t) => einsum("ij", t.x, t.x), ValueError),
    row("einsum", "a letter with two sizes", (t) => einsum("ij,jk->ik", t.x, t.x), ShapeError),
    row("einsum", "a term longer than the rank", (t) => einsum("ijk->i", t.x), ShapeError),
    row("einsum", "a diagonal of a non-square operand", (t) => einsum("ii->i", t.x), ShapeError, { mentions: ["[2,3]"] }),
    row("einsum", "two ellipses in one term", (t) => einsum("...i...->i", t.x), ValueError),
    row("einsum", "an output that drops the inputs' ellipsis dims", (t) => einsum("...j->j", t.x), ValueError, { mentions: ['"...j"'] }),
    row("einsum", "ellipsis dims that do not broadcast", (t) => einsum("...,...->...", t.x, t.v), ShapeError),
    row("einsum", "a term with an ellipsis naming more dims than the operand has", (t) => einsum("...ijk->i", t.x), ShapeError),
    row("einsum", "an output letter in no operand", (t) => einsum("ij->k", t.x), ValueError),
    row("cumsum", "an axis out of range", (t) => cumsum(t.x, 2), AxisError),
    row("Tensor.cumsum", "a fractional axis", (t) => t.x.cumsum(0.5), ValueError, { op: "cumsum" }),
    row("cumprod", "a string instead of a tensor", () => cumprod(any("x")), ValueError),
    row("Tensor.cumprod", "an axis out of range", (t) => t.v.cumprod(1), AxisError, { op: "cumprod" }),
    row("sort", "a scalar", (t) => sort(t.s), ShapeError),
    row("Tensor.sort", "descending is a string", (t) => t.x.sort(-1, { descending: any("yes") }), ValueError, { op: "sort" }),
    row("argsort", "an axis out of range", (t) => argsort(t.x, 2), AxisError),
    row("Tensor.argsort", "a misspelt option", (t) => t.x.argsort(0, any({ descend: true })), ValueError, { op: "argsort", mentions: ['"descend"'] }),
    row("topk", "k larger than the axis", (t) => topk(t.x, 4), ValueError),
    row("Tensor.topk", "a negative k", (t) => t.x.topk(-1), ValueError, { op: "topk" }),
    row("Tensor.topk", "a scalar", (t) => t.s.topk(1), ShapeError, { op: "topk" }),
    row("scatter", "f32 indices", (t) => scatter(t.x, t.x, t.x, 0), DTypeError),
    row("scatter", "indices of another rank", (t) => scatter(t.x, t.i, t.v, 0), ShapeError),
    row("scatter", "no axis", (t) => (scatter as (x: Tensor, i: Tensor, s: number) => unknown)(t.v, t.i, 1), ValueError),
    row("Tensor.scatter", "a source of another shape", (t) => t.v.scatter(t.i, t.v, 0), ShapeError, { op: "scatter" }),
    row("Tensor.scatter", "a source of another dtype", (t) => t.u.scatter(t.i, t.i, 0), DTypeError, { op: "scatter" }),
    row("scatterAdd", "a bool input", (t) => scatterAdd(t.b, t.i, t.b, 0), DTypeError),
    row("Tensor.scatterAdd", "-1 into u32", (t) => t.u.scatterAdd(t.i, -1, 0), DTypeError, { op: "scatterAdd" }),
    row("Tensor.scatterAdd", "indices is an array", (t) => t.v.scatterAdd(any([0]), 1, 0), ValueError, { op: "scatterAdd" }),
    row("conv2d", "a rank-2 input", (t) => conv2d(t.x, t.x), ShapeError),
    row("conv2d", "groups 0", (t) => conv2d(t.x, t.x, { groups: 0 }), ValueError),
    row("Tensor.conv2d", "a misspelt option", (t) => t.x.conv2d(t.x, any({ strides: 1 })), ValueError, { op: "conv2d", mentions: ['"strides"'] }),
    row("Tensor.conv2d", "the weight is an array", (t) => t.x.conv2d(any([1])), ValueError, { op: "conv2d" }),
    row("conv1d", "a rank-2 weight", (t) => conv1d(t.x, t.x), ShapeError),
    row("conv1d", "options is a number", (t) => conv1d(t.x, t.x, any(1)), ValueError),
    row("Tensor.conv1d", "a zero stride", (t) => t.x.conv1d(t.x, { stride: 0 }), ValueError, { op: "conv1d" }),
    row("maxPool2d", "padding larger than half the kernel", (t) => maxPool2d(t.x, 2, { padding: 2 }), ValueError),
    row("maxPool2d", "a rank-2 input", (t) => maxPool2d(t.x, 1), ShapeError),
    row("Tensor.maxPool2d", "kernel is a string", (t) => t.x.maxPool2d(any("2")), ValueError, { op: "maxPool2d" }),
    row("avgPool2d", "a zero kernel", (t) => avgPool2d(t.x, 0), ValueError),
    row("Tensor.avgPool2d", "countIncludePad is a string", (t) => t.x.avgPool2d(1, { countIncludePad: any("no") }), ValueError, { op: "avgPool2d" }),
    // ── data, lifetimes ──────────────────────────────────────────────────────────────────────
    row("Tensor.clone", "a disposed tensor", (t) => t.dead.clone(), DisposedTensorError, { op: "clone" }),
    row("Tensor.data", "a disposed tensor", (t) => t.dead.data(), DisposedTensorError, { op: "data" }),
    row("Tensor.array", "a disposed tensor", (t) => t.dead.array(), DisposedTensorError, { op: "array" }),
    row("Tensor.item", "more than one element", (t) => t.x.item(), ShapeError, { op: "item" }),
    row("Tensor.dataSync", "a disposed tensor", (t) => t.dead.dataSync(), DisposedTensorError, { op: "dataSync" }),
    row("Tensor.arraySync", "a disposed tensor", (t) => t.dead.arraySync(), DisposedTensorError, { op: "dataSync" }),
    row("Tensor.assign", "a number instead of a tensor", (t) => t.x.assign(any(1)), ValueError, { op: "assign" }),
    row("Tensor.assign", "a value of another shape", (t) => t.x.assign(t.v), ShapeError, { op: "assign" }),
    row("Tensor.print", "a misspelt option (the promise rejects)", (t) => t.x.print(any({ treshold: 10 })), ValueError, { op: "print", mentions: ['"treshold"'] }),
    row("Tensor.print", "log is not a function", (t) => t.x.print(any({ log: "console" })), ValueError, { op: "print" }),
    row("formatValues", "values that do not fill the shape", () => formatValues([1, 2, 3], [2, 2], "f32"), ValueError),
    row("formatValues", "an unknown dtype", () => formatValues([1], [1], "f64"), DTypeError),
    row("formatValues", "a negative precision", () => formatValues([1], [1], "f32", { precision: -1 }), ValueError),
    row("tidy", "fn is a string", () => tidy(any("f")), ValueError),
    row("scope", "fn is not a function (the promise rejects)", () => scope(any(42)), ValueError),
    // ── devices, dtypes, shapes ──────────────────────────────────────────────────────────────
    row("setDevice", "a backend name instead of a Device", () => setDevice(any("cpu")), ValueError),
    row("Device", "no fusion device", () => new Device(any(undefined), { backend: "x" }), ValueError, { op: "new Device" }),
    row("Device", "an empty backend name", (t) => new Device(t.device.fusion, { backend: "" }), ValueError, { op: "new Device" }),
    row("Device", "an option it does not take (dtypes come from the runtime)", (t) => new Device(t.device.fusion, any({ backend: "x", dtypes: ["f32"] })), ValueError, { op: "new Device", mentions: ['"dtypes"'] }),
    row("promoteTypes", "an unknown dtype", () => promoteTypes("f32", any("f64")), DTypeError, { mentions: ['"f64"'] }),
    row("promoteWithScalar", "the scalar is a string", () => promoteWithScalar("f32", any("1"), true), ValueError),
    row("isFloat", "an unknown dtype", () => isFloat(any("x")), DTypeError),
    row("isInteger", "no dtype", () => isInteger(any(undefined)), DTypeError),
    row("broadcastShapes", "a shape that is a string", () => broadcastShapes("add", [2], any("3")), ValueError, { op: "add" }),
    row("broadcastShapes", "shapes that do not broadcast", () => broadcastShapes("add", [2], [3]), ShapeError, { op: "add" }),
    // ── functional forms (weft.exp(x) is x.exp()): one row each, generated from the list ─────────
    row("functional", "not a Tensor method", () => forms.functional(any("frobnicate")), ValueError, { mentions: ['"frobnicate"'] }),
    ...Object.entries(forms)
      .filter(([name]) => name !== "functional")
      .map(([name, form]) => row(name, "the first argument is not a tensor", () => (form as (x: unknown) => unknown)([1, 2]), ValueError)),
  ];
}

/** What {@link runBadInputCase} found: `undefined` when the row passed, else why it failed. */
export type BadInputVerdict = string | undefined;

/**
 * Runs one row on `env` and checks it (see the module doc). `probe` reads the state that must not
 * change (memory report, pending work, current device …) and is compared as JSON.
 */
export async function runBadInputCase(c: BadInputCase, env: BadInputEnv, probe: () => unknown): Promise<BadInputVerdict> {
  const label = `${c.entry} (${c.what})`;
  const before = JSON.stringify(probe());
  let thrown: unknown;
  let returned: unknown;
  let sync = true;
  try {
    returned = c.call(env);
    if (returned instanceof Promise) {
      sync = false;
      returned = await returned;
    }
  } catch (error) {
    thrown = error;
  }
  if (thrown === undefined) {
    disposeAll(returned);
    return `${label}: did not throw${sync ? "" : " (its promise resolved)"}; expected ${c.error.name}`;
  }
  if (!(thrown instanceof c.error)) {
    return `${label}: threw ${thrown instanceof Error ? `${thrown.name}: ${thrown.message}` : String(thrown)}; expected ${c.error.name}`;
  }
  const message = thrown.message;
  const op = c.op ?? c.entry.replace(/^Tensor\./, "");
  if (!message.startsWith(`${op}: `)) return `${label}: the message must start with "${op}: ", got "${message}"`;
  if (!FIX_WORDS.test(message.slice(op.length))) return `${label}: the message must say what to do, got "${message}"`;
  for (const m of c.mentions ?? []) if (!message.includes(m)) return `${label}: the message must mention ${m}, got "${message}"`;
  const after = JSON.stringify(probe());
  if (after !== before) return `${label}: the state changed: before ${before}, after ${after}`;
  return undefined;
}

/** Disposes every tensor in `value` (a tensor, or an array of them): what a wrongly accepted call returned. */
function disposeAll(value: unknown): void {
  if (value instanceof Tensor) value.dispose();
  else if (Array.isArray(value)) for (const v of value) disposeAll(v);
}

/**
 * The tensors every row uses, on `device` (the current device while rows run), plus `foreign`
 * on `other` when given. Dispose them with {@link disposeBadInputEnv}.
 */
export function createBadInputEnv(device: Device, other?: Device): BadInputEnv {
  const on = { device };
  const dead = tensor([1, 2, 3], on);
  dead.dispose();
  return {
    device,
    x: tensor([[1, 2, 3], [4, 5, 6]], on),
    v: tensor([1, 2, 3, 4], on),
    i: tensor([0, 1, 2], { ...on, dtype: "i32" }),
    u: tensor([0, 5, 10], { ...on, dtype: "u32" }),
    b: tensor([true, false, true], on),
    s: tensor(2, on),
    e: zeros([0, 3], on),
    dead,
    foreign: other === undefined ? undefined : tensor([1, 2, 3], { device: other }),
  };
}

/** Disposes the tensors of {@link createBadInputEnv}. */
export function disposeBadInputEnv(env: BadInputEnv): void {
  for (const t of [env.x, env.v, env.i, env.u, env.b, env.s, env.e, env.foreign]) t?.dispose();
}
