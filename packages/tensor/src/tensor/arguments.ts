/**
 * Argument checks of the user API that need to know what a `Tensor` or a `Device` is. Each
 * returns the checked value or throws a typed error naming the op, the argument, what was given
 * and what to pass; none has a side effect, so an op runs them all before it records anything.
 *
 * @module
 */
import { ValueError, describeValue } from "@weft/environment";
import { Device } from "../device/device.js";
import { Tensor } from "./tensor.js";

/** `value` when it is a {@link Tensor}; else a `ValueError` naming `op` and the argument. */
export function checkTensor(op: string, name: string, value: unknown): Tensor {
  if (value instanceof Tensor) return value;
  throw new ValueError(op, `pass ${name} as a Tensor, not ${describeValue(value)}; create one with weft.tensor(values)`);
}

/** `value` when it is an array of {@link Tensor}s; else a `ValueError` naming the first bad entry. */
export function checkTensorList(op: string, name: string, value: unknown): readonly Tensor[] {
  if (!Array.isArray(value)) throw new ValueError(op, `pass ${name} as an array of Tensors, not ${describeValue(value)}`);
  value.forEach((t: unknown, i) => checkTensor(op, `${name}[${i}]`, t));
  return value as readonly Tensor[];
}

/** `value` when it is a Tensor, a number or a boolean (an operand of an elementwise op). */
export function checkOperandValue(op: string, name: string, value: unknown): Tensor | number | boolean {
  if (value instanceof Tensor || typeof value === "number" || typeof value === "boolean") return value;
  throw new ValueError(op, `pass ${name} as a Tensor, a number or a boolean, not ${describeValue(value)}; wrap arrays with weft.tensor(values)`);
}

/** `value` when it is `undefined` or a {@link Device}; else a `ValueError` naming `op`. */
export function checkDeviceOption(op: string, value: unknown): Device | undefined {
  if (value === undefined || value instanceof Device) return value;
  throw new ValueError(op, `pass the device option as a Device (weft.device(), or what weft.init() returns), not ${describeValue(value)}`);
}

/** `value` when it is `undefined` or an integer axis (range is checked against a shape later). */
export function checkAxisArg(op: string, name: string, value: unknown): number | undefined {
  if (value === undefined || (typeof value === "number" && Number.isInteger(value))) return value;
  throw new ValueError(op, `pass ${name} as an integer axis, not ${describeValue(value)}`);
}

/** `value` when it is `undefined`, an integer axis, or an array of integer axes. */
export function checkAxesArg(op: string, value: unknown): number | readonly number[] | undefined {
  if (value === undefined || (typeof value === "number" && Number.isInteger(value))) return value;
  if (Array.isArray(value) && value.every((a) => typeof a === "number" && Number.isInteger(a))) return value as readonly number[];
  throw new ValueError(op, `pass axes as an integer, an array of integers, or undefined for every axis, not ${describeValue(value)}${Array.isArray(value) ? ` [${value.map((a) => describeValue(a)).join(", ")}]` : ""}`);
}
