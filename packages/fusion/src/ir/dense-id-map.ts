/** Initial slots of a {@link DenseIdMap} (a power of two). */
const INITIAL_SLOTS = 256;

/**
 * A map from non-negative safe integers (tensor ids, dim values) to dense indices `0, 1, 2, …` in
 * order of first insertion, with an O(1) {@link DenseIdMap.clear}. What the relative converter
 * numbers a segment's tensors and dims with.
 *
 * @remarks
 * **Why not a `Map`.** The converter assigns and looks up a relative id for every tensor of every
 * recorded operation and forgets them all at every execution boundary. A `Map` cleared at each
 * boundary rebuilt and regrew its hash table every segment, and its `get`/`set` were the largest
 * single cost of recording an operation. This is an open-addressing table over typed arrays whose
 * slots carry the generation that wrote them: clearing bumps the generation, so no slot is touched.
 * **Bound.** Holds the keys inserted since the last clear (one segment's tensors or dims); the
 * table doubles when half full and never shrinks, so its size follows the largest segment seen
 * (a few KiB for the default queue limit).
 * **The last key.** The most recent key and its index answer again without a probe: an op's input
 * is most often the previous op's output, and a segment's tensors share a few dims. `clear`
 * forgets it with everything else.
 */
export class DenseIdMap {
  #keys = new Float64Array(INITIAL_SLOTS);
  #values = new Int32Array(INITIAL_SLOTS);
  /** The generation each slot was written in; a slot of an older generation is empty. */
  #stamps = new Uint32Array(INITIAL_SLOTS);
  #generation = 1;
  #mask = INITIAL_SLOTS - 1;
  #size = 0;
  /** The last key looked up or inserted and its index (`NaN`: none; it never equals a key). */
  #lastKey = Number.NaN;
  #lastValue = -1;

  /** Keys held (= the next dense index). */
  get size(): number {
    return this.#size;
  }

  /** Forgets every key (O(1)). */
  clear(): void {
    this.#size = 0;
    this.#lastKey = Number.NaN;
    this.#generation++;
    if (this.#generation === 0xffffffff) {
      this.#stamps.fill(0);
      this.#generation = 1;
    }
  }

  /** The dense index of `key`, assigning the next one (`size` before the call) on first sight. */
  index(key: number): number {
    // Small enough to inline into the converter's visitor; the probe is a call of its own.
    if (key === this.#lastKey) return this.#lastValue;
    this.#lastKey = key;
    return (this.#lastValue = this.#probe(key));
  }

  /** The dense index of `key` from the table, inserting it on first sight. */
  #probe(key: number): number {
    const stamps = this.#stamps;
    const keys = this.#keys;
    const generation = this.#generation;
    const mask = this.#mask;
    let slot = hash(key) & mask;
    for (;;) {
      if (stamps[slot] !== generation) break;
      if (keys[slot] === key) return this.#values[slot] as number;
      slot = (slot + 1) & mask;
    }
    const value = this.#size++;
    stamps[slot] = generation;
    keys[slot] = key;
    this.#values[slot] = value;
    if (this.#size * 2 > mask + 1) this.#grow();
    return value;
  }

  /** Doubles the table, re-inserting this generation's keys. */
  #grow(): void {
    const keys = this.#keys;
    const values = this.#values;
    const stamps = this.#stamps;
    const generation = this.#generation;
    const slots = keys.length * 2;
    this.#keys = new Float64Array(slots);
    this.#values = new Int32Array(slots);
    this.#stamps = new Uint32Array(slots);
    this.#generation = 1;
    this.#mask = slots - 1;
    for (let i = 0; i < keys.length; i++) {
      if (stamps[i] !== generation) continue;
      let slot = hash(keys[i] as number) & this.#mask;
      while (this.#stamps[slot] === 1) slot = (slot + 1) & this.#mask;
      this.#stamps[slot] = 1;
      this.#keys[slot] = keys[i] as number;
      this.#values[slot] = values[i] as number;
    }
  }
}

/** A 32-bit mix of a safe integer (its low and high words). */
function hash(key: number): number {
  const h = Math.imul((key | 0) ^ ((key / 4294967296) | 0), 0x9e3779b1);
  return h ^ (h >>> 16);
}
