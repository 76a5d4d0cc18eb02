/**
 * Values held under small integer keys that the table hands out: a slot array and a free list.
 * For what a long-lived owner holds for a while and lets go of one by one — the reads and syncs a
 * server has in flight, a leak backstop's records — and must sometimes reach all at once.
 *
 * @remarks
 * **Why not a `Set` or a `Map`.** Their hash tables are rebuilt as entries come and go, and the
 * table of a collection that lives in V8's old generation is allocated there directly; a dead old
 * object's pointers into the young generation are roots for every young collection until the next
 * full one, so a table left behind, still pointing at the entries it held, keeps them alive (the
 * mechanism as we understand it; the effect is measured). An owner that adds and removes a
 * short-lived value per request thus kept the values of its past requests — and all they reach —
 * alive through each scavenge and into the old generation. Measured (serving probe, null backend, 2026-12-01): the WebGPU server's set of
 * pending reads alone made a request's promises, closures and results outlive every scavenge —
 * 124–211 KB promoted per MB allocated and ~1.7–2.5 MB copied per scavenge in a read-only loop,
 * against 3 KB and ~0.15 MB with that set gone (docs/performance.md#pending-reads). Here a slot
 * is overwritten when its value leaves, so no stale pointer is left anywhere. `IdMap` is the same
 * remedy for tables whose keys are given (tensor, allocation and stream ids).
 * **Bound.** The slot array is as long as the most values held at once (a freed key is reused
 * before the array grows); the free list holds at most that many numbers.
 */
export class SlotTable<T> {
  readonly #slots: (T | undefined)[] = [];
  readonly #free: number[] = [];
  #size = 0;

  /** Values held now. */
  get size(): number {
    return this.#size;
  }

  /** Holds `value` (not `undefined`); returns its key, a small non-negative integer. */
  add(value: T): number {
    const key = this.#free.length > 0 ? (this.#free.pop() as number) : this.#slots.length;
    this.#slots[key] = value;
    this.#size++;
    return key;
  }

  /** Gives back the value held under `key` and frees the key. Throws `RangeError` when none is. */
  take(key: number): T {
    const value = this.#slots[key];
    if (value === undefined) throw new RangeError(`SlotTable.take: nothing is held under key ${key}`);
    this.#slots[key] = undefined;
    this.#free.push(key);
    this.#size--;
    return value;
  }

  /** The values held now, by key (a copy: the table may change while the caller walks it). */
  values(): T[] {
    const out: T[] = [];
    for (const value of this.#slots) if (value !== undefined) out.push(value);
    return out;
  }
}
