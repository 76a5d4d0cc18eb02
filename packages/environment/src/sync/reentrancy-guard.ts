import { WeftError } from "../errors/weft-error.js";

/**
 * Thrown when a service call re-enters the same service (docs/pitfalls.md#p3: a tensor method
 * called from inside a server task).
 */
export class ReentrancyError extends WeftError {
  constructor(readonly service: string) {
    super(
      "reentrancy",
      `${service} was re-entered while one of its calls was running: ` +
        "do not call tensor or client methods from inside a server task (callbacks, fusers, kernels)",
    );
  }
}

/**
 * Marks a service as busy for the duration of a synchronous call and throws a clear
 * {@link ReentrancyError} when the call re-enters it.
 *
 * @remarks
 * **Why.** Weft runs its services inline on the caller (the model of CubeCL's re-entrant device
 * handle). A service call that re-enters the same service would see its own half-updated state;
 * Rust panics with "already borrowed", we throw before touching anything.
 * **Invariant.** The busy flag is cleared on return and on throw.
 */
export class ReentrancyGuard {
  #busy = false;

  constructor(readonly service: string) {}

  /** Whether a call is running. */
  get busy(): boolean {
    return this.#busy;
  }

  /** Runs synchronous `fn` as one call of the service. */
  enter<T>(fn: () => T): T {
    if (this.#busy) throw new ReentrancyError(this.service);
    this.#busy = true;
    try {
      return fn();
    } finally {
      this.#busy = false;
    }
  }

  /**
   * {@link ReentrancyGuard.enter} without the closure, for hot paths: starts one call (throws
   * `ReentrancyError` when one is running). The caller must end it with
   * {@link ReentrancyGuard.end} in a `finally`, and only when `begin` returned.
   */
  begin(): void {
    if (this.#busy) throw new ReentrancyError(this.service);
    this.#busy = true;
  }

  /** Ends the call {@link ReentrancyGuard.begin} started. */
  end(): void {
    this.#busy = false;
  }

  /**
   * Runs `fn` as if outside the guard, then restores it: for the one documented nested entry
   * point — a launch group's fallback (`LaunchFallback.run`), which the server calls from inside
   * a guarded call and which legitimately records launches. Anything else re-entering still
   * throws `ReentrancyError`.
   */
  release<T>(fn: () => T): T {
    const busy = this.#busy;
    this.#busy = false;
    try {
      return fn();
    } finally {
      this.#busy = busy;
    }
  }
}
