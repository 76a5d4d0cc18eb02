/**
 * The typed errors the user API throws *at the call*, before anything is recorded.
 *
 * @remarks
 * **Why.** docs/design.md#errors: bad input (shape or dtype mismatch, bad axis, use after dispose,
 * wrong device) throws synchronously, names the op, the shapes and the fix, and leaves all state
 * intact. Every op validates all of its arguments before it registers its first operation, so
 * catching one of these errors never leaves a half-built graph behind.
 * **Invariant.** Every message starts with `"<op>: "`; `kind` is stable (messages may change).
 *
 * @module
 */
import { WeftError } from "@weft/environment";

/** Formats a shape the way every message prints it: `[2,3]`, `[]` for a scalar. */
export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(",")}]`;
}

/**
 * Shapes that do not fit the op: operands that cannot broadcast, a reshape that changes the element
 * count, a ragged nested array, a matmul whose inner dimensions differ.
 */
export class ShapeError extends WeftError {
  /** The op that rejected its arguments, e.g. `"add"`. */
  readonly op: string;
  /** The shapes involved, in argument order. */
  readonly shapes: readonly (readonly number[])[];

  constructor(op: string, shapes: readonly (readonly number[])[], message: string) {
    super("shape", `${op}: ${message}`);
    this.op = op;
    this.shapes = shapes;
  }
}

/** An axis outside `[-rank, rank)`, repeated, or not allowed for this op. */
export class AxisError extends WeftError {
  readonly op: string;
  readonly axis: number;
  readonly shape: readonly number[];

  constructor(op: string, axis: number, shape: readonly number[], message?: string) {
    super(
      "axis",
      `${op}: ${message ?? `axis ${axis} is out of range for shape ${formatShape(shape)} (rank ${shape.length}); use an axis in [${-shape.length}, ${shape.length})`}`,
    );
    this.op = op;
    this.axis = axis;
    this.shape = shape;
  }
}

/** A dtype the op does not accept (e.g. `and` on `f32`, arithmetic on two `bool` tensors). */
export class DTypeError extends WeftError {
  readonly op: string;

  constructor(op: string, message: string) {
    super("dtype", `${op}: ${message}`);
    this.op = op;
  }
}

/**
 * A value that has the wrong type, cannot be represented or makes no sense for the op (`sum("1")`,
 * a NaN size, `step = 0`). Defined in `@weft/environment` so every layer throws the same class.
 */
export { ValueError } from "@weft/environment";

/**
 * Operands that live on two different devices. Weft never copies between devices implicitly: a copy
 * is a read plus an upload, which the user must ask for.
 */
export class DeviceMismatchError extends WeftError {
  readonly op: string;

  constructor(op: string, first: string, second: string) {
    super(
      "device-mismatch",
      `${op}: operands live on two devices (${first} and ${second}); move one with ` +
        "`weft.tensor(await t.data(), { device, shape: t.shape, dtype: t.dtype })` first",
    );
    this.op = op;
  }
}

/** No device was chosen yet: neither `weft.init()`/`setDevice()` nor a `{ device }` option. */
export class NoDeviceError extends WeftError {
  constructor(op: string) {
    super(
      "no-device",
      `${op}: no current device; call \`await weft.init()\` (or setDevice(device)) first, or pass { device }`,
    );
  }
}

/**
 * `dataSync()` on a device that cannot answer synchronously (WebGPU reads are asynchronous), or on
 * a tensor whose work has not run yet where the device cannot run it synchronously.
 */
export class SyncReadError extends WeftError {
  readonly op: string;

  constructor(op: string, backend: string) {
    super(
      "sync-read",
      `${op}: the ${backend} device cannot read this tensor synchronously; use \`await t.data()\` instead`,
    );
    this.op = op;
  }
}
