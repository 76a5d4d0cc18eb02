import { checkFunction } from "../errors/arguments.js";

/**
 * An async mutual-exclusion lock.
 *
 * @remarks
 * **Why.** JavaScript is single-threaded, but async work interleaves at every `await`; a section
 * that awaits (an autotune measurement, a cache write) and must not interleave with another holds
 * this lock.
 * **Fairness.** FIFO: waiters acquire in the order they called {@link Mutex.lock}.
 * **Not re-entrant.** A holder that calls `lock()` again waits for itself forever; code that may
 * re-enter uses a {@link ReentrancyGuard} instead, which throws at once.
 */
export class Mutex {
  /** Waiters in arrival order; each entry is woken once, when the lock passes to it. */
  readonly #waiters: Array<() => void> = [];
  #locked = false;

  /** Whether the lock is held. */
  get locked(): boolean {
    return this.#locked;
  }

  /** Acquires the lock; resolves to the function that releases it (call it exactly once). */
  async lock(): Promise<() => void> {
    if (this.#locked) {
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
    this.#locked = true;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiters.shift();
      if (next) next();
      else this.#locked = false;
    };
  }

  /** Runs `fn` while holding the lock, releasing it when `fn` settles (also on throw). */
  async runExclusive<T>(fn: () => T | Promise<T>): Promise<T> {
    checkFunction("Mutex.runExclusive", "fn", fn);
    const release = await this.lock();
    try {
      return await fn();
    } finally {
      release();
    }
  }
}
