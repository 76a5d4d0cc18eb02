/**
 * A promise with its `resolve`/`reject` exposed.
 *
 * @remarks
 * **Why.** Readbacks and syncs settle from callbacks far from where the promise was made.
 * **Invariant.** Settles at most once: later `resolve`/`reject` calls are ignored, and
 * {@link Deferred.settled} tells whether it has settled. `onSettle`, when given, runs exactly once,
 * synchronously, by the first `resolve` or `reject` (bookkeeping that would otherwise hang off
 * `promise.finally`, which allocates two more promises per deferred).
 */
export class Deferred<T> {
  readonly promise: Promise<T>;
  #resolve!: (value: T | PromiseLike<T>) => void;
  #reject!: (reason: unknown) => void;
  #settled = false;
  readonly #onSettle: (() => void) | undefined;

  constructor(onSettle?: () => void) {
    this.#onSettle = onSettle;
    this.promise = new Promise<T>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  /** Whether `resolve` or `reject` has been called. */
  get settled(): boolean {
    return this.#settled;
  }

  resolve(value: T | PromiseLike<T>): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#onSettle?.();
    this.#resolve(value);
  }

  reject(reason: unknown): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#onSettle?.();
    this.#reject(reason);
  }
}
