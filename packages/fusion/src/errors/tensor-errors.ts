import { WeftError } from "@weft/environment";
import { TaintedReadError } from "@weft/server";
import type { OperationIr } from "../ir/operation-ir.js";
import { operationInputs, operationOutputs } from "../ir/operation-descriptor.js";
import type { TensorId, TensorIr } from "../ir/tensor-ir.js";

/**
 * A short, human-readable description of one operation for error chains and logs:
 * `"binary add [2,3] f32 → #12"`.
 */
export function describeOperation(op: OperationIr): string {
  const name = "op" in op ? `${op.kind} ${op.op}` : op.kind;
  const ins = operationInputs(op)
    .map((t) => `#${t.id}[${t.shape.join(",")}] ${t.dtype}`)
    .join(", ");
  const outs = operationOutputs(op)
    .map((t) => `#${t.id}[${t.shape.join(",")}] ${t.dtype}`)
    .join(", ");
  return `${name}(${ins})${outs ? ` → ${outs}` : ""}`;
}

/**
 * A tensor or device used after its device was disposed (`device.dispose()`, or `weft.init()`
 * replacing the device it was created on). Thrown at the call; nothing was recorded.
 */
export class DisposedDeviceError extends WeftError {
  constructor(readonly op: string, readonly device: string) {
    super(
      "device-disposed",
      `${op}: device ${device} was disposed (weft.init() replaces the current device and releases the old one); ` +
        "its tensors are gone — create tensors on the current device instead",
    );
  }
}

/**
 * The error a failed read rejects with — always this class, wherever the failure was detected: an
 * operation that threw when the engine ran it, one that did not run because an input carried an
 * error, or device work that failed after the engine registered its output (the backend reports
 * those as the server's `TaintedReadError`, which becomes this error's `cause`). Delivered by the
 * read of that tensor (or of anything computed from it), never by an unrelated drain or read.
 *
 * @remarks
 * **Why.** Device work is lazy: the op that fails runs far from the call that recorded it. The
 * reader needs the *root* cause (the compile error, the out-of-memory, the injected fault) and
 * the *chain* of operations it travelled through, from the failing op to the tensor being read.
 * One class means one `catch` for every computation failure; `root` says what went wrong.
 * **Cause chain.** `cause` is the root, or the server's `TaintedReadError` whose own `cause` is the
 * root: following `cause` always reaches {@link TensorComputationError.root}.
 * **Transient.** {@link TensorComputationError.transient} is the root's: `true` only for
 * failures that may go away by themselves (out of memory after frees reach the device); compute
 * the tensor again then. Everything else fails the same way until the program or data changes.
 * **Invariants.**
 * - {@link TensorComputationError.root} is never itself a `TensorComputationError`.
 * - {@link TensorComputationError.chain} is non-empty; `chain[0]` is the op that failed (or, for
 *   a device-side failure, the failure the server recorded first), the last entry the op that
 *   would have produced the tensor carrying this error (or the read).
 */
export class TensorComputationError extends WeftError {
  /** The original failure (a `ServerError`, an `UnsupportedError`, …). */
  readonly root: Error;
  /** Descriptions of the operations the failure travelled through, root first. */
  readonly chain: readonly string[];

  constructor(root: Error, chain: readonly string[], options?: ErrorOptions) {
    super(
      "computation",
      `tensor computation failed: ${root.message}\n` +
        `  while computing: ${chain.join("\n    → ")}\n` +
        "  (the tensor you read depends on an operation that failed; fix the root cause above — " +
        "other tensors are unaffected)",
      { cause: options?.cause ?? root },
    );
    this.root = root;
    this.chain = chain;
  }

  /** Whether the root failure is transient (see the type doc): retrying the computation may work. */
  get transient(): boolean {
    return (this.root as { transient?: unknown }).transient === true;
  }

  /**
   * The error an output of `op` carries because `cause` happened: `op` failed with `cause`, or one
   * of its inputs carried `cause` (then the chain grows by one link).
   */
  static from(op: OperationIr, cause: unknown): TensorComputationError {
    const link = describeOperation(op);
    if (cause instanceof TensorComputationError) return new TensorComputationError(cause.root, [...cause.chain, link]);
    if (cause instanceof TaintedReadError) return new TensorComputationError(cause.root, [...serverChain(cause), link], { cause });
    const root = cause instanceof Error ? cause : new Error(String(cause));
    return new TensorComputationError(root, [link]);
  }

  /**
   * The error a read of `tensor` rejects with when the backend's read failed with `cause`: `cause`
   * itself when it already is one, else a `TensorComputationError` whose chain ends with the read.
   */
  static fromRead(tensor: TensorIr, cause: unknown): TensorComputationError {
    if (cause instanceof TensorComputationError) return cause;
    const link = `read of #${tensor.id}[${tensor.shape.join(",")}] ${tensor.dtype}`;
    if (cause instanceof TaintedReadError) return new TensorComputationError(cause.root, [...serverChain(cause), link], { cause });
    const root = cause instanceof Error ? cause : new Error(String(cause));
    return new TensorComputationError(root, [link]);
  }
}

/** The server's chain of a device-side failure, root first, one line per failed or skipped launch. */
function serverChain(error: TaintedReadError): string[] {
  return error.chain.map((e) => `[${e.kind}] ${e.message}`);
}

/**
 * Thrown synchronously when a disposed `FusionTensor` is used.
 *
 * @remarks
 * **Why.** JavaScript ownership is explicit (`dispose`, `using`, `tidy`); a use after dispose is a
 * user bug that must fail at the call, naming the op, instead of reading freed memory.
 * **Invariant.** Throwing it leaves every engine state untouched.
 */
export class DisposedTensorError extends WeftError {
  /** The operation that tried to use the tensor (`"add"`, `"read"`, `"clone"`). */
  readonly op: string;
  /** The disposed tensor's id. */
  readonly tensorId: TensorId;

  constructor(op: string, tensorId: TensorId, shape: readonly number[]) {
    super(
      "disposed",
      `${op}: tensor #${tensorId} with shape [${shape.join(", ")}] was already disposed ` +
        "(by dispose(), a `using` block, tidy(), scope() or the end of a Stream.spawn task); keep it " +
        "alive with clone() before disposing, return it from the tidy()/scope()/task callback, or keep() it",
    );
    this.op = op;
    this.tensorId = tensorId;
  }
}

/**
 * Thrown by `Scope.track` once the scope has settled.
 *
 * @remarks
 * **Why.** A settled scope has already disposed what it owned; a tensor tracked afterwards would
 * never be disposed by it. Failing at the call says so, instead of leaking silently. The tensor is
 * left as it was (still alive, owned by whoever owned it).
 */
export class ScopeSettledError extends WeftError {
  constructor(op: string) {
    super(
      "scope-settled",
      `${op}: the scope already settled and disposed what it owned; track tensors while its callback ` +
        "is still running, or dispose them yourself",
    );
  }
}
