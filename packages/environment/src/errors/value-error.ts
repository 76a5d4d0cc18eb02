import { WeftError } from "./weft-error.js";

/**
 * A bad argument at a public entry point: a value of the wrong type (`sum("1")`, `matmul()` with no
 * operand), out of range, or meaningless for the op (`setStreamPolicy("parallel")`,
 * `init({ backend: "metal" })`, a NaN size, `step = 0`).
 *
 * @remarks
 * **Why one class.** Every public function checks its arguments at the call, before it changes
 * anything, so a caller can catch bad input as one family. Shapes, axes, dtypes and devices have
 * their own subclasses-of-purpose in `@weft/tensor` (`ShapeError`, `AxisError`, `DTypeError`,
 * `DeviceMismatchError`); everything else is a `ValueError`.
 * **Invariants.** Thrown synchronously (or as the rejection of an async entry point) before any
 * state changed. The message starts with `"<op>: "`, names what was given, and says what to pass
 * instead; `kind` is `"value"`.
 */
export class ValueError extends WeftError {
  /** The entry point that rejected its argument, e.g. `"sum"`, `"setStreamPolicy"`. */
  readonly op: string;

  constructor(op: string, message: string, options?: ErrorOptions) {
    super("value", `${op}: ${message}`, options);
    this.op = op;
  }
}

/**
 * A short description of any value for messages: `string "1"`, `undefined`, `null`, `number NaN`,
 * `Float32Array(3)`, `an array of length 2`, `an object`, `a function`.
 */
export function describeValue(value: unknown): string {
  if (value === undefined) return "undefined";
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
      return `string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
    case "number":
    case "boolean":
    case "bigint":
      return `${typeof value} ${String(value)}${typeof value === "bigint" ? "n" : ""}`;
    case "symbol":
      return "a symbol";
    case "function":
      return "a function";
    default:
      break;
  }
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (ArrayBuffer.isView(value)) {
    const name = value.constructor.name;
    return "length" in value ? `${name}(${String((value as { length: number }).length)})` : name;
  }
  const name = (value as object).constructor?.name;
  return name !== undefined && name !== "Object" ? `a ${name}` : "an object";
}
