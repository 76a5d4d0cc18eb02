/**
 * Free-function forms of the elementwise ops (`weft.add(a, b)`), so a scalar may come first
 * (`weft.sub(1, x)`) and code reads like NumPy.
 *
 * @module
 */
import type { Tensor } from "../tensor/tensor.js";
import { type Operand, binary, unary, where as whereOp } from "./elementwise.js";

/** `a + b` (either may be a scalar). */
export const add = (a: Operand, b: Operand): Tensor => binary("add", a, b);
/** `a - b`. */
export const sub = (a: Operand, b: Operand): Tensor => binary("sub", a, b);
/** `a * b`. */
export const mul = (a: Operand, b: Operand): Tensor => binary("mul", a, b);
/** `a / b` (true division; integers compute in f32). */
export const div = (a: Operand, b: Operand): Tensor => binary("div", a, b);
/** `a ** b` (integers compute in f32). */
export const pow = (a: Operand, b: Operand): Tensor => binary("pow", a, b);
/** Elementwise maximum. */
export const maximum = (a: Operand, b: Operand): Tensor => binary("maximum", a, b);
/** Elementwise minimum. */
export const minimum = (a: Operand, b: Operand): Tensor => binary("minimum", a, b);
/** Remainder `a mod b`, with the backend's `mod` semantics. */
export const mod = (a: Operand, b: Operand): Tensor => binary("mod", a, b);
/** `atan2(a, b)`. */
export const atan2 = (a: Operand, b: Operand): Tensor => binary("atan2", a, b);
/** `a == b` (bool). */
export const eq = (a: Operand, b: Operand): Tensor => binary("eq", a, b);
/** `a != b` (bool). */
export const ne = (a: Operand, b: Operand): Tensor => binary("ne", a, b);
/** `a < b` (bool). */
export const lt = (a: Operand, b: Operand): Tensor => binary("lt", a, b);
/** `a <= b` (bool). */
export const le = (a: Operand, b: Operand): Tensor => binary("le", a, b);
/** `a > b` (bool). */
export const gt = (a: Operand, b: Operand): Tensor => binary("gt", a, b);
/** `a >= b` (bool). */
export const ge = (a: Operand, b: Operand): Tensor => binary("ge", a, b);
/** Logical and of bool operands. */
export const logicalAnd = (a: Operand, b: Operand): Tensor => binary("and", a, b);
/** Logical or of bool operands. */
export const logicalOr = (a: Operand, b: Operand): Tensor => binary("or", a, b);
/** Logical xor of bool operands. */
export const logicalXor = (a: Operand, b: Operand): Tensor => binary("xor", a, b);
/** Logical not of a bool tensor. */
export const logicalNot = (x: Tensor): Tensor => unary("not", x);
/** `condition ? a : b`, broadcast. */
export const where = (condition: Tensor, a: Operand, b: Operand): Tensor => whereOp(condition, a, b);
