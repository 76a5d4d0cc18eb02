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
  /**
   * The form used when both operands of a binary op are the same node (`x - x`): a compiler that
   * sees one value on both sides may fold `x - x` to `0` and `x / x` to `1`, losing NaN and ±Inf,
   * so these compute the IEEE answer from `x`'s bits instead.
   */
  readonly same?: (x: string, t: ValueType, helpers: Preamble) => string;
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

/** A float-only op computed by a guarding helper of the preamble (domain and special values on the bits). */
function guarded(op: string, helper: "exp" | "log" | "log2" | "log1p" | "expm1" | "sqrt" | "rsqrt"): OpEntry {
  return floatOnly(op, (x, t, h) => `${h.use(helper, t)}(${x})`);
}

/**
 * `sin`/`cos`/`tan`: a helper that reduces the argument first (WGSL's built-ins are accurate on
 * `[-π, π]` only) and gives NaN for NaN and ±Inf (WGSL leaves them undefined there).
 */
function trig(op: "sin" | "cos" | "tan"): OpEntry {
  return floatOnly(op, (x, t, h) => `${h.use(op, t)}(${x})`);
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
  exp: guarded("exp", "exp"),
  log: guarded("log", "log"),
  log2: guarded("log2", "log2"),
  log1p: guarded("log1p", "log1p"),
  expm1: guarded("expm1", "expm1"),
  sqrt: guarded("sqrt", "sqrt"),
  rsqrt: guarded("rsqrt", "rsqrt"),
  sin: trig("sin"),
  cos: trig("cos"),
  tan: trig("tan"),
  tanh: keepsNan("tanh", (x, t) => `tanh(clamp(${x}, ${lit(-15, t)}, ${lit(15, t)}))`),
  sigmoid: keepsNan("sigmoid", (x, t, h) => `(${lit(1, t)} / (${lit(1, t)} + ${h.use("exp", t)}(-${x})))`),
  relu: {
    emit: ([x = ""], t, h) => (isFloat(t.dtype) ? `${h.use("maxNan", t)}(${x}, ${lit(0, t)})` : `max(${x}, ${lit(0, t)})`),
  },
  gelu: keepsNan("gelu", (x, t, h) => `${h.use("gelu", t)}(${x})`),
  silu: keepsNan("silu", (x, t, h) => `(${x} / (${lit(1, t)} + ${h.use("exp", t)}(-${x})))`),
  erf: keepsNan("erf", (x, t, h) => `${h.use("erf", t)}(${x})`),
  floor: keepsNanOnFloats((x) => x, (x) => `floor(${x})`),
  ceil: keepsNanOnFloats((x) => x, (x) => `ceil(${x})`),
  round: keepsNanOnFloats((x) => x, (x) => `round(${x})`),
  // ±0 keeps its sign (docs/semantics.md, "Signed zeros"); NaN stays NaN.
  sign: {
    emit: ([x = ""], t, h) =>
      isFloat(t.dtype) ? `${h.use("signOf", t)}(${x})` : t.dtype === "u32" ? `select(${lit(0, t)}, ${lit(1, t)}, ${x} > ${lit(0, t)})` : `sign(${x})`,
  },
  reciprocal: floatOnly("reciprocal", (x, t, h) => `${h.use("divIeee", t)}(${lit(1, t)}, ${x})`),
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

/**
 * Integer division and modulo with the semantics table's answers (`docs/semantics.md`): division
 * truncates toward zero, floor division floors, modulo is floored (the divisor's sign), all give 0
 * for a zero divisor
 * (NumPy's answer), and `MIN / -1` wraps. The divisor is made non-zero before WGSL's operator, so
 * no kernel divides by zero whatever the implementation does there.
 */
function integerDivMod(op: "div" | "mod" | "floorDiv", a: string, b: string, t: ValueType): string {
  const z = lit(0, t);
  const safe = `select(${b}, ${lit(1, t)}, ${b} == ${z})`;
  if (op === "div" || (op === "floorDiv" && t.dtype === "u32")) return `select(${a} / ${safe}, ${z}, ${b} == ${z})`;
  if (op === "floorDiv") {
    // The truncated quotient, one less where the remainder is non-zero and the signs differ
    // (WGSL's `MIN / -1` is `MIN` and `MIN % -1` is 0, so it wraps like the oracle).
    const q = `(${a} / ${safe})`;
    const r = `(${a} % ${safe})`;
    return `select(select(${q}, ${q} - ${lit(1, t)}, (${r} != ${z}) & ((${r} < ${z}) != (${b} < ${z}))), ${z}, ${b} == ${z})`;
  }
  if (t.dtype === "u32") return `select(${a} % ${safe}, ${z}, ${b} == ${z})`;
  const r = `(${a} % ${safe})`;
  return `select(select(${r}, ${r} + ${b}, (${r} != ${z}) & ((${r} < ${z}) != (${b} < ${z}))), ${z}, ${b} == ${z})`;
}

/** The binary ops (one entry per {@link BinaryOp}); `t` is the operands' type. */
export const BINARY: Record<BinaryOp, OpEntry> = {
  // Floats (+, -, *, /): NaN decided on the bits, so no rewrite loses it (the preamble's `addIeee`…).
  add: { emit: ([a = "", b = ""], t, h) => (isFloat(t.dtype) ? `${h.use("addIeee", t)}(${a}, ${b})` : `(${a} + ${b})`) },
  sub: {
    emit: ([a = "", b = ""], t, h) => (isFloat(t.dtype) ? `${h.use("subIeee", t)}(${a}, ${b})` : `(${a} - ${b})`),
    same: (x, t, h) => (isFloat(t.dtype) ? `${h.use("subSelf", t)}(${x})` : lit(0, t)),
  },
  mul: { emit: ([a = "", b = ""], t, h) => (isFloat(t.dtype) ? `${h.use("mulIeee", t)}(${a}, ${b})` : `(${a} * ${b})`) },
  div: {
    repeats: true,
    emit: ([a = "", b = ""], t, h) => (isFloat(t.dtype) ? `${h.use("divIeee", t)}(${a}, ${b})` : integerDivMod("div", a, b, t)),
    same: (x, t, h) => (isFloat(t.dtype) ? `${h.use("divSelf", t)}(${x})` : `select(${lit(1, t)}, ${lit(0, t)}, ${x} == ${lit(0, t)})`),
  },
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
    emit: ([a = "", b = ""], t, h) => (isFloat(t.dtype) ? `${h.use("fmod", t)}(${a}, ${b})` : integerDivMod("mod", a, b, t)),
    same: (x, t, h) => (isFloat(t.dtype) ? `${h.use("modSelf", t)}(${x})` : lit(0, t)),
  },
  // Floats: NumPy's floor_divide exactly (the preamble's `floorDivF32`); `x // x` is `x / x`.
  floorDiv: {
    repeats: true,
    emit: ([a = "", b = ""], t, h) => (isFloat(t.dtype) ? `${h.use("floorDiv", t)}(${a}, ${b})` : integerDivMod("floorDiv", a, b, t)),
    same: (x, t, h) => (isFloat(t.dtype) ? `${h.use("divSelf", t)}(${x})` : `select(${lit(1, t)}, ${lit(0, t)}, ${x} == ${lit(0, t)})`),
  },
  atan2: {
    emit: ([a = "", b = ""], t, h) => {
      if (!isFloat(t.dtype)) throw new UnsupportedError(`atan2 on ${t.dtype}`, "cast the tensors to f32 before atan2");
      return `${h.use("atan2", t)}(${a}, ${b})`;
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
 * Converts `x` from `from` to `to` with the oracle's definitions (`docs/semantics.md`, "Casts"):
 * float → int truncates toward zero, saturates and maps NaN to 0 (through the `toI32`/`toU32`
 * helpers, so `helpers` is required for those); number → bool is `!= 0` (NaN → true, decided on
 * the bits for floats); bool → number is 0/1; integer ↔ integer keeps the bits (wraps).
 */
export function convert(x: string, from: ValueType, to: ValueType, helpers?: Preamble): string {
  if (from.dtype === to.dtype) return x;
  if (to.dtype === "bool") {
    if (!isFloat(from.dtype)) return `(${x} != ${literal(0, from)})`;
    const u = from.width === 1 ? "u32" : "vec4<u32>";
    const wide = from.dtype === "f16" ? `${from.width === 1 ? "f32" : "vec4<f32>"}(${x})` : x;
    return `((bitcast<${u}>(${wide}) & ${u}(0x7fffffffu)) != ${u}(0u))`;
  }
  if (from.dtype === "bool") return `select(${literal(0, to)}, ${literal(1, to)}, ${x})`;
  if (isFloat(from.dtype) && (to.dtype === "i32" || to.dtype === "u32")) {
    if (helpers === undefined) throw new UnsupportedError(`a ${from.dtype} → ${to.dtype} conversion outside an expression`, "internal: pass the kernel's preamble to convert");
    return `${helpers.use(to.dtype === "i32" ? "toI32" : "toU32", from)}(${x})`;
  }
  return `${wgslType(to)}(${x})`;
}

/** The dtype of a binary op's result for operands of `dtype`. */
export function binaryResult(op: BinaryOp, dtype: DType): DType {
  return isPredicate(op) ? "bool" : dtype;
}
