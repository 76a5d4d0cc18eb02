/** Where an {@link OperationsValidator} stands. */
export type ValidatorState = { readonly kind: "validating" } | { readonly kind: "found"; readonly size: number } | { readonly kind: "invalidated" };

const VALIDATING: ValidatorState = { kind: "validating" };
const INVALIDATED: ValidatorState = { kind: "invalidated" };

/**
 * Checks, one operation at a time, whether a stream's operations match an expected sequence of
 * relative keys. Burn's `OperationsValidator`.
 *
 * @remarks
 * **Keys.** `K` is whatever identifies a relative operation: its key string, or (what the
 * {@link Policy} uses on the hot path) the key's interned id from the plan store, so a comparison
 * is one integer compare. The expected sequence is borrowed, never copied.
 * **Invariant.** Once `found` or `invalidated` it never changes again.
 */
export class OperationsValidator<K = string> {
  #state: ValidatorState = VALIDATING;
  #expected: readonly K[];

  constructor(expected: readonly K[]) {
    this.#expected = expected;
  }

  /** Starts over on `expected` (a reused validator: the policy keeps its candidates' validators). */
  restart(expected: readonly K[]): void {
    this.#expected = expected;
    this.#state = VALIDATING;
  }

  get state(): ValidatorState {
    return this.#state;
  }

  /** True while neither found nor invalidated. */
  get validating(): boolean {
    return this.#state === VALIDATING;
  }

  /** Compares `key`, the operation at `position` of the watched sequence, with the expectation. */
  update(key: K, position: number): void {
    if (this.#state !== VALIDATING) return;
    const expected = this.#expected;
    if (position < 0 || position >= expected.length || expected[position] !== key) this.#state = INVALIDATED;
    else if (position === expected.length - 1) this.#state = { kind: "found", size: expected.length };
  }
}
