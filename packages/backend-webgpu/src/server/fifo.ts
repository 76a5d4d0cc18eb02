/**
 * A first-in first-out queue with amortised O(1) `shift`.
 *
 * @remarks
 * **Why.** `Array.prototype.shift` moves every remaining element: draining a queue of n tasks
 * costs O(n²). While a new pipeline is validated, every later launch, write and read of the
 * server queues behind it (a benchmark's first iteration queues thousands), so the drain must stay
 * linear.
 * **Bound.** Holds exactly the items pushed and not yet shifted; consumed slots are reclaimed when
 * they make up at least half the backing array (and at least 1024 of them), and all at once when
 * the queue empties.
 */
export class Fifo<T> {
  /** Items; slots before `#head` are consumed. */
  #items: T[] = [];
  #head = 0;

  /** How many items wait. */
  get length(): number {
    return this.#items.length - this.#head;
  }

  /** Appends `item`. */
  push(item: T): void {
    this.#items.push(item);
  }

  /** The oldest item, without removing it. */
  peek(): T | undefined {
    return this.#items[this.#head];
  }

  /** Removes and returns the oldest item. */
  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#head++;
    if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  /**
   * Puts `items` ahead of every waiting item, in their order (`items[0]` comes out first): the
   * launches a group's fallback records, which run in the group's place.
   */
  unshiftAll(items: readonly T[]): void {
    if (items.length === 0) return;
    if (this.#head >= items.length) {
      this.#head -= items.length;
      for (let i = 0; i < items.length; i++) this.#items[this.#head + i] = items[i] as T;
      return;
    }
    this.#items = [...items, ...this.#items.slice(this.#head)];
    this.#head = 0;
  }

  /** Removes and returns every item, oldest first. */
  takeAll(): T[] {
    const all = this.#items.slice(this.#head);
    this.#items = [];
    this.#head = 0;
    return all;
  }
}
