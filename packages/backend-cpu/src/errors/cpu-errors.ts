import { WeftError } from "@weft/environment";

/**
 * An index read from tensor data that lies outside the indexed dimension (`gather`).
 *
 * @remarks
 * **Why at execution.** Indices are data, so they can only be checked when the kernel runs. The
 * kernel throws this; the server records it as the launch's failure, taints the output, and the
 * error reaches the caller at the read of that output (or anything computed from it), with the op,
 * the shapes and the fix in its message. Negative indices are out of range (no wrap-around).
 */
export class IndexOutOfRangeError extends WeftError {
  constructor(
    readonly op: string,
    readonly index: number,
    readonly size: number,
    readonly shape: readonly number[],
    readonly axis: number,
  ) {
    super(
      "index-out-of-range",
      `${op}: index ${index} is out of range for axis ${axis} of size ${size} (input shape [${shape.join(", ")}]); ` +
        `indices must lie in [0, ${size}) — clamp or validate them before the ${op}`,
    );
  }
}

/**
 * An operation whose arguments are valid for the IR but have no defined result on this backend
 * (a `max`/`argmax` over an empty axis, negative padding). Thrown when the operation executes,
 * so the engine puts it on the operation's outputs.
 */
export class InvalidOperationError extends WeftError {
  constructor(readonly op: string, detail: string) {
    super("invalid-operation", `${op}: ${detail}`);
  }
}
