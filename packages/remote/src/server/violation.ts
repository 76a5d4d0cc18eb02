/**
 * Why the server ends a session: a frame it cannot accept. Thrown while a frame is read or run;
 * the server answers `fatal` with it and closes that session only.
 *
 * @module
 */
import { WeftError } from "@weft/environment";

/** Which kind of violation: a malformed or forged message, or a limit. */
export type ViolationKind = "protocol" | "limit";

/**
 * A client message the server refuses. `protocol`: malformed, an unknown or forged tensor id, an
 * operation whose shapes or dtypes do not fit; `limit`: a session limit exceeded ({@link limit}
 * names it).
 */
export class SessionViolation extends WeftError {
  /** `protocol` or `limit`. */
  readonly violation: ViolationKind;
  /** The limit's name for a `limit` violation. */
  readonly limit: string | undefined;

  constructor(violation: ViolationKind, message: string, limit?: string) {
    super(`remote-${violation}`, message);
    this.violation = violation;
    this.limit = limit;
  }
}

/** Throws a `protocol` {@link SessionViolation} unless `condition` holds. */
export function check(condition: boolean, message: string | (() => string)): asserts condition {
  if (!condition) throw new SessionViolation("protocol", typeof message === "string" ? message : message());
}
