/** Where an {@link OperationsValidator} stands. */
export type ValidatorState = { readonly kind: "validating" } | { readonly kind: "found"; readonly size: number } | { readonly kind: "invalidated" };

/**
 * Checks, one operation at a time, whether a stream's operations match an expected sequence of
 * relative keys. Burn's `OperationsValidator`.
 *
 * **Invariant.** Once `found` or `invalidated` it never changes again.
 */
export class OperationsValidator {
  #state: ValidatorState = { kind: "validating" };

  constructor(private readonly expected: readonly string[]) {}

  get state(): ValidatorState {
    return this.#state;
  }

  /** Compares `key`, the operation at `position` of the watched sequence, with the expectation. */
  update(key: string, position: number): void {
    if (this.#state.kind !== "validating") return;
    const want = this.expected[position];
    if (want === undefined || want !== key) this.#state = { kind: "invalidated" };
    else if (position === this.expected.length - 1) this.#state = { kind: "found", size: this.expected.length };
  }
}
