/** The key of an empty slot (ids are non-negative). */
const EMPTY = -1;

/** The fewest slots a table has (a power of two). */
const MIN_CAPACITY = 8;

/** Tables of at most this many slots never shrink (16 KiB of keys and values at most). */
const SHRINK_ABOVE = 1024;

/**
 * A map from ids — non-negative safe integers: tensor, allocation and stream ids — to values,
 * that allocates nothing per operation at a steady size: open addressing with linear probing,
 * keys in a `Float64Array`, values in a parallel array, and deletion by shifting the entries that
 * follow back into the hole (no tombstones).
 *
 * @remarks
 * **Why.** A long-lived `Map` whose keys come and go — a new id per tensor, allocation or task
 * stream — rebuilds its table as it grows, as it shrinks below half, and after as many deletions
 * as it has slots; and the table of a `Map` that lives in the old generation is allocated there
 * directly. In the serving workload (32 requests in flight, each on its own stream, every tensor
 * id and allocation id fresh) those tables were about half of what the old generation gained per
 * request, and the old generation's growth is what brings on a mark-compact, the pause behind the
 * slowest rounds (docs/performance.md#what-a-request-leaves-behind). Here a table is rebuilt only
 * when the map crosses a size it never had (×2) or empties far below its peak (see Bound).
 * **Order.** Iteration follows the table, not insertion: a caller that needs an order sorts.
 * **Bound.** Slots: the smallest power of two above 2 × the largest size since the last shrink
 * (at least 8). A table of at most 1,024 slots never shrinks (16 KiB: a map that fills and empties
 * on every wave of requests keeps its peak's table); a larger one halves when a deletion leaves it
 * at most ⅛ full, down to 1,024 slots. Memory: 8 bytes of key and one value reference per slot.
 * **Invariant.** Every key sits in the first empty-free run of slots from its hash (linear
 * probing's invariant), which `delete` keeps by shifting back each following entry whose home is
 * not between it and the hole.
 */
export class IdMap<V> {
  #keys: Float64Array;
  #values: (V | undefined)[];
  /** `capacity - 1`. */
  #mask: number;
  /** `32 − log2(capacity)`: a hash's top bits index the table (Fibonacci hashing). */
  #shift: number;
  #size = 0;

  constructor() {
    this.#keys = new Float64Array(MIN_CAPACITY).fill(EMPTY);
    this.#values = new Array<V | undefined>(MIN_CAPACITY).fill(undefined);
    this.#mask = MIN_CAPACITY - 1;
    this.#shift = 32 - Math.log2(MIN_CAPACITY);
  }

  /** Entries held. */
  get size(): number {
    return this.#size;
  }

  /** The slots of the table now (for tests and the bound). */
  get capacity(): number {
    return this.#keys.length;
  }

  /** The value of `id`, or `undefined`. */
  get(id: number): V | undefined {
    const keys = this.#keys;
    for (let i = this.#home(id); ; i = (i + 1) & this.#mask) {
      const k = keys[i] as number;
      if (k === EMPTY) return undefined;
      if (k === id) return this.#values[i];
    }
  }

  /** Whether `id` has an entry. */
  has(id: number): boolean {
    const keys = this.#keys;
    for (let i = this.#home(id); ; i = (i + 1) & this.#mask) {
      const k = keys[i] as number;
      if (k === EMPTY) return false;
      if (k === id) return true;
    }
  }

  /** Sets `id`'s value (adding the entry when it has none). Throws `RangeError` for an id that is not a non-negative safe integer. */
  set(id: number, value: V): this {
    const keys = this.#keys;
    for (let i = this.#home(id); ; i = (i + 1) & this.#mask) {
      const k = keys[i] as number;
      if (k === EMPTY) {
        if (!Number.isSafeInteger(id) || id < 0) throw new RangeError(`IdMap: an id is a non-negative safe integer, got ${id}`);
        keys[i] = id;
        this.#values[i] = value;
        this.#size++;
        if (2 * this.#size > keys.length) this.#resize(2 * keys.length);
        return this;
      }
      if (k === id) {
        this.#values[i] = value;
        return this;
      }
    }
  }

  /** Removes `id`'s entry; whether there was one. */
  delete(id: number): boolean {
    const keys = this.#keys;
    const mask = this.#mask;
    let hole = this.#home(id);
    for (; ; hole = (hole + 1) & mask) {
      const k = keys[hole] as number;
      if (k === EMPTY) return false;
      if (k === id) break;
    }
    // Backward shift: each following entry of the run whose home is not cyclically in
    // (hole, j] moves into the hole, which moves to where it was.
    for (let j = (hole + 1) & mask; ; j = (j + 1) & mask) {
      const k = keys[j] as number;
      if (k === EMPTY) break;
      const home = this.#home(k);
      const stays = hole <= j ? hole < home && home <= j : hole < home || home <= j;
      if (stays) continue;
      keys[hole] = k;
      this.#values[hole] = this.#values[j];
      hole = j;
    }
    keys[hole] = EMPTY;
    this.#values[hole] = undefined;
    this.#size--;
    if (keys.length > SHRINK_ABOVE && 8 * this.#size <= keys.length) this.#resize(keys.length / 2);
    return true;
  }

  /** Removes every entry (the table keeps its slots). */
  clear(): void {
    this.#keys.fill(EMPTY);
    this.#values.fill(undefined);
    this.#size = 0;
  }

  /** Calls `f` with every entry, in table order (see Order). `f` must not change the map. */
  forEach(f: (value: V, id: number) => void): void {
    const keys = this.#keys;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i] as number;
      if (k !== EMPTY) f(this.#values[i] as V, k);
    }
  }

  /** The ids, in table order (a new array). */
  ids(): number[] {
    const out: number[] = [];
    this.forEach((_, id) => out.push(id));
    return out;
  }

  /** The values, in table order (a new array). */
  values(): V[] {
    const out: V[] = [];
    this.forEach((value) => out.push(value));
    return out;
  }

  /** The slot a probe for `id` starts at. */
  #home(id: number): number {
    // The high word matters only past 2^32 ids; `>>> 0` keeps the low word exact.
    const mixed = (id >>> 0) ^ Math.floor(id / 4294967296);
    return Math.imul(mixed, 0x9e3779b1) >>> this.#shift;
  }

  #resize(capacity: number): void {
    const keys = this.#keys;
    const values = this.#values;
    this.#keys = new Float64Array(capacity).fill(EMPTY);
    this.#values = new Array<V | undefined>(capacity).fill(undefined);
    this.#mask = capacity - 1;
    this.#shift = 32 - Math.log2(capacity);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i] as number;
      if (k === EMPTY) continue;
      let j = this.#home(k);
      while (this.#keys[j] !== EMPTY) j = (j + 1) & this.#mask;
      this.#keys[j] = k;
      this.#values[j] = values[i];
    }
    // The replaced array may sit in the old generation: left filled, its dead slots would be
    // old-to-young pointers, roots of every scavenge until a full collection, keeping the values
    // it held (and all they reach) alive into the old generation (docs/performance.md#pending-reads).
    values.fill(undefined);
  }
}
