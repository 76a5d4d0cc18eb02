/**
 * The functional form of every `Tensor` method that computes a tensor: `weft.exp(x)` is
 * `x.exp()`, `weft.sum(x, 0, { keepDims: true })` is `x.sum(0, { keepDims: true })`.
 *
 * @remarks
 * **One list, no drift.** Each form below is generated from the method's name by
 * {@link functional}: it calls the method, so its behaviour, validation and errors are the
 * method's, and its type is the method's parameters with the tensor first. Methods whose
 * functional form lives with its op (`add`, `where`, `reshape`, `softmax`, `matmul`, …, which
 * also take a scalar first where that makes sense) are not repeated here. `functional.test.ts`
 * checks at compile time that every tensor-returning method of `Tensor` has a functional form
 * among the package's exports with a matching signature, so a new method without one fails the
 * typecheck. Three by-name forms keep their op-first order: `unary(op, x)`, `binary(op, a, b)`,
 * `concat(tensors, axis)`.
 *
 * @module
 */
import { describeValue } from "@weft/environment";
import { ValueError } from "../errors/tensor-errors.js";
import { Tensor } from "../tensor/tensor.js";

/** The names of `Tensor`'s methods that return a tensor (or tensors): the ones with a functional form. */
export type TensorMethodName = {
  [K in keyof Tensor]-?: Tensor[K] extends (...args: never[]) => Tensor | Tensor[] ? K : never;
}[keyof Tensor];

/** The functional form of method `K`: the tensor first, then the method's own arguments. */
export type Functional<K extends TensorMethodName> = (x: Tensor, ...args: Parameters<Tensor[K]>) => ReturnType<Tensor[K]>;

/**
 * The functional form of method `name` (see the module doc). Its `name` property is the method's.
 * @throws ValueError when `name` is not a `Tensor` method; the form throws one naming the method
 *   when its first argument is not a `Tensor`.
 */
export function functional<K extends TensorMethodName>(name: K): Functional<K> {
  if (typeof name !== "string" || typeof (Tensor.prototype as unknown as Record<string, unknown>)[name] !== "function" || (name as string) === "constructor") {
    throw new ValueError("functional", `${describeValue(name)} is not a Tensor method; pass a method name such as "exp" or "sum"`);
  }
  const form = (x: Tensor, ...args: Parameters<Tensor[K]>): ReturnType<Tensor[K]> => {
    if (!(x instanceof Tensor)) {
      throw new ValueError(name, `expects a Tensor as its first argument, got ${describeValue(x)}; pass the tensor first: weft.${name}(x, …) is x.${name}(…)`);
    }
    return (x[name] as (...a: Parameters<Tensor[K]>) => ReturnType<Tensor[K]>).apply(x, args);
  };
  Object.defineProperty(form, "name", { value: name });
  return form;
}

/** `x.neg()`: −x. */
export const neg = functional("neg");
/** `x.abs()`: |x|. */
export const abs = functional("abs");
/** `x.exp()`: eˣ. */
export const exp = functional("exp");
/** `x.log()`: the natural logarithm. */
export const log = functional("log");
/** `x.log1p()`: ln(1 + x), accurate near 0. */
export const log1p = functional("log1p");
/** `x.expm1()`: eˣ − 1, accurate near 0. */
export const expm1 = functional("expm1");
/** `x.sqrt()`: √x. */
export const sqrt = functional("sqrt");
/** `x.rsqrt()`: 1/√x. */
export const rsqrt = functional("rsqrt");
/** `x.sin()`. */
export const sin = functional("sin");
/** `x.cos()`. */
export const cos = functional("cos");
/** `x.tan()`. */
export const tan = functional("tan");
/** `x.tanh()`. */
export const tanh = functional("tanh");
/** `x.sigmoid()`: 1/(1 + e⁻ˣ). */
export const sigmoid = functional("sigmoid");
/** `x.relu()`: max(x, 0). */
export const relu = functional("relu");
/** `x.gelu()`. */
export const gelu = functional("gelu");
/** `x.silu()`: x·sigmoid(x). */
export const silu = functional("silu");
/** `x.erf()`: the error function. */
export const erf = functional("erf");
/** `x.floor()`. */
export const floor = functional("floor");
/** `x.ceil()`. */
export const ceil = functional("ceil");
/** `x.round()`: to the nearest integer, ties to even. */
export const round = functional("round");
/** `x.sign()`: −1, 0 or 1. */
export const sign = functional("sign");
/** `x.reciprocal()`: 1/x. */
export const reciprocal = functional("reciprocal");
/** `x.square()`: x². */
export const square = functional("square");
/** `x.not()`: logical not of a bool tensor (also `logicalNot`). */
export const not = functional("not");
/** `x.and(y)`: logical and of bool operands (also `logicalAnd`). */
export const and = functional("and");
/** `x.or(y)`: logical or of bool operands (also `logicalOr`). */
export const or = functional("or");
/** `x.xor(y)`: logical xor of bool operands (also `logicalXor`). */
export const xor = functional("xor");
/** `x.sum(axes?, { keepDims })`. */
export const sum = functional("sum");
/** `x.mean(axes?, { keepDims })`. */
export const mean = functional("mean");
/** `x.max(axes?, { keepDims })`: the largest value (a reduction; `maximum` is elementwise). */
export const max = functional("max");
/** `x.min(axes?, { keepDims })`: the smallest value (a reduction; `minimum` is elementwise). */
export const min = functional("min");
/** `x.prod(axes?, { keepDims })`. */
export const prod = functional("prod");
/** `x.any(axes?, { keepDims })`. */
export const any = functional("any");
/** `x.all(axes?, { keepDims })`. */
export const all = functional("all");
/** `x.argmax(axis?, { keepDims })`: `i32` indices. */
export const argmax = functional("argmax");
/** `x.argmin(axis?, { keepDims })`: `i32` indices. */
export const argmin = functional("argmin");
/** `x.clone()`: a new reference to the same value. */
export const clone = functional("clone");
