import { WeftError } from "@weft/environment";

/**
 * An index read from tensor data that lies outside the indexed dimension (`gather`): the server
 * package's class (`@weft/server`), shared by every backend so a read rejects with the same root
 * cause on each (`docs/semantics.md`, "Index errors"). Re-exported here for the CPU backend's
 * users.
 */
export { IndexOutOfRangeError } from "@weft/server";

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
