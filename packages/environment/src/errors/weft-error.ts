/**
 * The root of every error Weft throws on purpose.
 *
 * @remarks
 * **Why.** Callers catch by family (`err instanceof WeftError`) and branch on {@link WeftError.kind}
 * without string matching. Every subclass keeps its cause through the ES2022 `cause` option, so a
 * chain prints as "Caused by" links.
 * **Invariant.** `kind` is a stable, kebab-case identifier; messages may change, kinds may not.
 */
export class WeftError extends Error {
  /** A stable identifier for the failure family, e.g. `"unsupported"`. */
  readonly kind: string;

  constructor(kind: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.kind = kind;
    this.name = new.target.name;
  }
}

/**
 * A capability Weft (or the device at hand) does not have.
 *
 * @remarks
 * **Why.** A missing capability must never silently return something wrong: it throws this,
 * naming what is missing, so a user can pick another backend, dtype or shape.
 */
export class UnsupportedError extends WeftError {
  /** What is missing, e.g. `"f16 on an adapter without shader-f16"`. */
  readonly capability: string;

  constructor(capability: string, detail?: string, options?: ErrorOptions) {
    super("unsupported", `unsupported: ${capability}${detail ? ` — ${detail}` : ""}`, options);
    this.capability = capability;
  }
}

/**
 * A broken internal invariant: a bug in Weft, never a user error.
 *
 * @remarks
 * **Why.** Bugs and errors are kept apart (docs/style.md#decisions): user-reachable failures get typed
 * errors with a fix; impossible states get this, with the invariant it violated.
 */
export class InvariantError extends WeftError {
  constructor(message: string) {
    super("internal", `internal: ${message}`);
  }
}

/**
 * Asserts an internal invariant. The message is built lazily so hot paths pay nothing.
 */
export function invariant(condition: unknown, message: string | (() => string)): asserts condition {
  if (!condition) throw new InvariantError(typeof message === "string" ? message : message());
}
