import type { BufferBinding } from "../binding.js";
import type { FailureId } from "./error-graph.js";
import { ServerError } from "./server-error.js";

/**
 * A read of bytes that a failed launch was to write (directly, or through launches skipped because
 * they read such bytes). This is how a deferred device failure reaches the caller: at the read,
 * where the caller waits for the data (docs/design.md#errors).
 *
 * @remarks
 * **Kind.** `"tainted"`: the read itself worked, the bytes were never written. Not
 * transient: reading the same bytes again fails the same way until something writes them.
 * **Message.** Names the root cause and the chain, root first. **Cause.** The root error, so
 * `error.cause` is the first thing that went wrong (an out-of-memory, an injected fault, a kernel
 * that threw).
 */
export class TaintedReadError extends ServerError {
  constructor(
    /** The binding read that a failure claims. */
    readonly needed: BufferBinding,
    /** The failure claiming it (the last link of `chain`). */
    readonly failure: FailureId,
    /** The first error of the chain. */
    readonly root: ServerError,
    /** Every error from the root to the failure claiming the bytes, root first. */
    readonly chain: readonly ServerError[],
  ) {
    const steps = chain.map((error) => `[${error.kind}] ${error.message}`).join(" → ");
    super(
      "tainted",
      `read of bytes ${needed.offset}..${needed.offset + needed.size} of allocation ${needed.allocation} ` +
        `failed: the work that should have written them failed. Root cause: [${root.kind}] ${root.message}. ` +
        `Chain (root first): ${steps}`,
      { cause: root },
    );
  }
}
