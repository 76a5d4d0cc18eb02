import { UnsupportedError } from "@weft/environment";
import type { BinaryOp, DType, UnaryOp } from "@weft/fusion";
import type { Preamble } from "./preamble.js";
import { isFloat, literal, wgslType, type ValueType } from "./types.js";

/**
 * One entry of the op table: how an op becomes WGSL given its argument expressions.
 *
 * @remarks
 * **Invariant.** When `repeats` is set the emission mentions an argument more than once, so the
 * expression emitter hoists the arguments into `let`s first (no duplicated work, no duplicated
 * side-effect-free but costly subexpressions).
 */
export interface OpEntry {
  /** `t` is the operand type (for compare ops the result is `bool` of the same width). */
  readonly emit: (args: readonly string[], t: ValueType, helpers: Preamble) => string;
  readonly repeats?: boolean;
}

function floatOnly(op: string, f: (x: string, t: ValueType, h: Preamble) => string, repeats = false): OpEntry {
  return {
    repeats,
    emit: ([x = ""], t, h) => {
      if (!isFloat(t.dtype)) throw new UnsupportedError(`${op} on ${t.dtype}`, `cast the tensor to f32 before ${op}`);
      return f(x, t, h);
    },
  };
}

/**
 * A float-only op whose WGSL built-in may lose a NaN operand (`exp(NaN)` is `Inf` on SwiftShader,
 * `tanh` clamps it away): the result is `keepNan(x, f(x))`, so NaN in gives NaN out, like the CPU
 * oracle. The argument is hoisted (it appears twice).
 */
function keepsNan(op: string, f: (x: string, t: ValueType, h: Preamble) => string): OpEntry {
  return floatOnly(op, (x, t, h) => `${h.use("keepNan", t)}(${x}, ${f(x, t, h)})`, true);
}

/** Like {@link keepsNan} for ops that are the identity on integers (floor, ceil, round, sign…). */
function keepsNanOnFloats(intEmit: (x: string, t: ValueType) => string, floatEmit: (x: string, t: ValueType) => string): OpEntry {
  return {
    repeats: true,
    emit: ([x = ""], t, h) => (isFloat(t.dtype) ? `${h.use("keepNan", t)}(${x}, ${floatEmit(x, t)})` : intEmit(x, t)),
  };
}

const lit = (v: number, t: ValueType): string => literal(v, t);

/** The unary ops (one entry per {@link UnaryOp}); precision follows the CPU oracle. */
export const UNARY: Record<UnaryOp, OpEntry> = {
  neg: { emit: ([x = ""], t) => (t.dtype === "u32" ? `(${lit(0, t)} - ${x})` : `(-${x})`) },
  abs: { emit: ([x = ""], t) => (t.dtype === "u32" ? x : `abs(${x})`) },
  exp: keepsNan("exp", (x) => `exp(${x})`),
  log: keepsNan("log", (x) => `log(${x})`),
  log1p: keepsNan("log1p", (x, t) => `select(log(${lit(1, t)} + ${x}) * ${x} / ((${lit(1, t)} + ${x}) - ${lit(1, t)}), ${x}, (${lit(1, t)} + ${x}) == ${lit(1, t)})`),
  expm1: keepsNan(
    "expm1",
    (x, t) =>
      `select(select((exp(${x}) - ${lit(1, t)}) * ${x} / log(exp(${x})), exp(${x}) - ${lit(1, t)}, abs(${x}) > ${lit(0.5, t)}), ${x} + ${lit(0.5, t)} * ${x} * ${x}, abs(${x}) < ${lit(1e-5, t)})`,
  ),
  sqrt: keepsNan("sqrt", (x) => `sqrt(${x})`),
  rsqrt: keepsNan("rsqrt", (x) => `inverseSqrt(${x})`),
  sin: keepsNan("sin", (x) => `sin(${x})`),
  cos: keepsNan("cos", (x) => `cos(${x})`),
  tan: keepsNan("tan", (x) => `tan(${x})`),
  tanh: keepsNan("tanh", (x, t) => `tanh(clamp(${x}, ${lit(-15, t)}, ${lit(15, t)}))`),
  sigmoid: keepsNan("sigmoid", (x, t) => `(${lit(1, t)} / (${lit(1, t)} + exp(-${x})))`),
  relu: {
    emit: ([x = ""], t, h) => (isFloat(t.dtype) ? `${h.use("maxNan", t)}(${x}, ${lit(0, t)})` : `max(${x}, ${lit(0, t)})`),
  },
  gelu: keepsNan("gelu", (x, t, h) => `(${lit(0.5, t)} * ${x} * (${lit(1, t)} + ${h.use("erf", t)}(${x} * ${lit(Math.SQRT1_2, t)})))`),
  silu: keepsNan("silu", (x, t) => `(${x} / (${lit(1, t)} + exp(-${x})))`),
  erf: keepsNan("erf", (x, t, h) => `${h.use("erf", t)}(${x})`),
  floor: keepsNanOnFloats((x) => x, (x) => `floor(${x})`),
  ceil: keepsNanOnFloats((x) => x, (x) => `ceil(${x})`),
  round: keepsNanOnFloats((x) => x, (x) => `round(${x})`),
  sign: keepsNanOnFloats(
    (x, t) => (t.dtype === "u32" ? `select(${lit(0, t)}, ${lit(1, t)}, ${x} > ${lit(0, t)})` : `sign(${x})`),
    (x) => `sign(${x})`,
  ),
  reciprocal: floatOnly("reciprocal", (x, t) => `(${lit(1, t)} / ${x})`),
  square: { repeats: true, emit: ([x = ""]) => `(${x} * ${x})` },
  not: { emit: ([x = ""], t) => (t.dtype === "bool" ? `(!${x})` : `(${x} == ${lit(0, t)})`) },
};

function asBool(x: string, t: ValueType): string {
  return t.dtype === "bool" ? x : `(${x} != ${lit(0, t)})`;
}

/**
 * A comparison with the CPU oracle's NaN semantics on floats: `==`, `<`, `<=`, `>`, `>=` are false
 * when either operand is NaN and `!=` is true, whatever the implementation assumes about NaN
 * (the NaN test is on the bits; see `ordered` in the preamble). The operands are hoisted.
 */
function compare(op: string): OpEntry {
  return {
    repeats: true,
    emit: ([a = "", b = ""], t, h) => {
      if (t.dtype === "bool" && op !== "==" && op !== "!=") {
        const u: ValueType = { dtype: "u32", width: t.width };
        return `(${convert(a, t, u)} ${op} ${convert(b, t, u)})`;
      }
      if (!isFloat(t.dtype)) return `(${a} ${op} ${b})`;
      const ordered = `${h.use("ordered", t)}(${a}, ${b})`;
      return op === "!=" ? `(!${ordered} | (${a} != ${b}))` : `(${ordered} & (${a} ${op} ${b}))`;
    },
  };
}

/** The binary ops (one entry per {@link BinaryOp}); `t` is the operands' type. */
export const BINARY: Record<BinaryOp, OpEntry> = {
  add: { emit: ([a = "", b = ""]) => `(${a} + ${b})` },
  sub: { emit: ([a = "", b = ""]) => `(${a} - ${b})` },
  mul: { emit: ([a = "", b = ""]) => `(${a} * ${b})` },
  div: { emit: ([a = "", b = ""]) => `(${a} / ${b})` },
  pow: {
    emit: ([a = "", b = ""], t, h) => {
      if (isFloat(t.dtype)) return `${h.use("pow", t)}(${a}, ${b})`;
      const f: ValueType = { dtype: "f32", width: t.width };
      return convert(`round(${h.use("pow", f)}(${convert(a, t, f)}, ${convert(b, t, f)}))`, f, t);
    },
  },
  maximum: { emit: ([a = "", b = ""], t, h) => (isFloat(t.dtype) ? `${h.use("maxNan", t)}(${a}, ${b})` : `max(${a}, ${b})`) },
  minimum: { emit: ([a = "", b = ""], t, h) => (isFloat(t.dtype) ? `${h.use("minNan", t)}(${a}, ${b})` : `min(${a}, ${b})`) },
  mod: {
    repeats: true,
    emit: ([a = "", b = ""], t) => {
      if (isFloat(t.dtype)) return `(${a} - ${b} * floor(${a} / ${b}))`;
      if (t.dtype === "u32") return `(${a} % ${b})`;
      const z = lit(0, t);
      return `select(${a} % ${b}, ${a} % ${b} + ${b}, (${a} % ${b} != ${z}) & ((${a} % ${b} < ${z}) != (${b} < ${z})))`;
    },
  },
  atan2: {
    emit: ([a = "", b = ""], t) => {
      if (!isFloat(t.dtype)) throw new UnsupportedError(`atan2 on ${t.dtype}`, "cast the tensors to f32 before atan2");
      return `atan2(${a}, ${b})`;
    },
  },
  eq: compare("=="),
  ne: compare("!="),
  lt: compare("<"),
  le: compare("<="),
  gt: compare(">"),
  ge: compare(">="),
  and: { emit: ([a = "", b = ""], t) => `(${asBool(a, t)} & ${asBool(b, t)})` },
  or: { emit: ([a = "", b = ""], t) => `(${asBool(a, t)} | ${asBool(b, t)})` },
  xor: { emit: ([a = "", b = ""], t) => `(${asBool(a, t)} != ${asBool(b, t)})` },
};

/** Whether `op` produces `bool` regardless of its operands. */
export function isPredicate(op: BinaryOp): boolean {
  return op === "eq" || op === "ne" || op === "lt" || op === "le" || op === "gt" || op === "ge" || op === "and" || op === "or" || op === "xor";
}

/**
 * Converts `x` from `from` to `to` with the CPU's definitions: float → int truncates toward zero,
 * number → bool is `!= 0`, bool → number is 0/1.
 */
export function convert(x: string, from: ValueType, to: ValueType): string {
  if (from.dtype === to.dtype) return x;
  if (to.dtype === "bool") return `(${x} != ${literal(0, from)})`;
  if (from.dtype === "bool") return `select(${literal(0, to)}, ${literal(1, to)}, ${x})`;
  return `${wgslType(to)}(${x})`;
}

/** The dtype of a binary op's result for operands of `dtype`. */
export function binaryResult(op: BinaryOp, dtype: DType): DType {
  return isPredicate(op) ? "bool" : dtype;
}
