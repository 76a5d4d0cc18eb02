import { StreamId } from "@weft/environment";
import { ServerError, StreamCreationError } from "../errors/server-error.js";

/**
 * Creates backend streams for a {@link StreamPool}, lazily, one per slot.
 *
 * @remarks
 * `create` throws a {@link ServerError} when the backend cannot create a stream (e.g. a poisoned
 * device). The pool passes the slot's synthetic id (see {@link StreamPool.streamIds}); a factory
 * may ignore it.
 */
export interface StreamFactory<S> {
  create(slot: StreamId): S;
}

/**
 * A fixed set of slots holding backend streams, created lazily by a {@link StreamFactory}
 * (CubeCL's `StreamPool`, the semantics of docs/concepts.md#streampool-streammemory-and-taint).
 *
 * @remarks
 * **Slots.** `maxStreams` regular slots followed by `numSpecial` special ones, all pre-sized and
 * empty at construction. A stream id maps to regular slot `id % maxStreams`, so distinct ids may
 * share a slot (which only merges two FIFO lanes: safe). Special slots are reached only by index.
 * **Creation.** `getMut`/`getOrCreate`/`getOrCreateSpecial` create the slot's stream on first use;
 * `tryGet`, `streams` and `streamIds` never create one: resolving which stream owns a buffer must
 * not bring a stream into existence, and a buffer's slot was initialised by its allocation.
 * **Bounded.** At most `maxStreams + numSpecial` streams ever exist; a slot, once filled, stays.
 */
export class StreamPool<S> {
  /** One entry per slot, `undefined` until first use; never shrinks or grows. */
  readonly #slots: Array<S | undefined>;
  /**
   * The initialised streams in slot order (what {@link streams} returns): a new array each time a
   * stream is created (at most `maxStreams + numSpecial` times), never mutated, so a caller may
   * iterate it while streams are created.
   */
  #initialised: readonly S[] = [];
  readonly #maxStreams: number;
  readonly #numSpecial: number;

  constructor(
    /** The factory new streams come from. Streams already created are unaffected by its changes. */
    readonly factory: StreamFactory<S>,
    maxStreams: number,
    numSpecial: number,
  ) {
    if (!Number.isSafeInteger(maxStreams) || maxStreams < 1) {
      throw new RangeError(`StreamPool: maxStreams must be a positive integer, got ${maxStreams}`);
    }
    if (!Number.isSafeInteger(numSpecial) || numSpecial < 0) {
      throw new RangeError(`StreamPool: numSpecial must be a non-negative integer, got ${numSpecial}`);
    }
    this.#maxStreams = maxStreams;
    this.#numSpecial = numSpecial;
    this.#slots = new Array<S | undefined>(maxStreams + numSpecial).fill(undefined);
  }

  /** Number of regular slots. */
  get maxStreams(): number {
    return this.#maxStreams;
  }

  /** Number of special slots. */
  get numSpecial(): number {
    return this.#numSpecial;
  }

  /**
   * The initialised streams, regular then special, in slot order. Never creates one. An array kept
   * up to date on creation (not a walk of the slots): servers scan it on every launch.
   */
  streams(): readonly S[] {
    return this.#initialised;
  }

  /**
   * Synthetic ids, one per initialised regular slot: slot `i` gives `StreamId.of(i)`, which maps
   * back to slot `i` (`i % maxStreams === i`), so these ids are safe to feed to per-stream APIs.
   */
  streamIds(): StreamId[] {
    const ids: StreamId[] = [];
    for (let i = 0; i < this.#maxStreams; i++) if (this.#slots[i] !== undefined) ids.push(StreamId.of(i));
    return ids;
  }

  /** The regular slot of `id`: `id % maxStreams`. */
  streamIndex(id: StreamId): number {
    return id % this.#maxStreams;
  }

  /**
   * The stream for `id`, created if needed.
   * @throws StreamCreationError `a stream could not be created: …`, wrapping the factory's error.
   */
  getMut(id: StreamId): S {
    return this.#getOrThrow(this.streamIndex(id));
  }

  /** The special stream `index`, created if needed; throws like {@link StreamPool.getMut}. */
  getSpecial(index: number): S {
    return this.#getOrThrow(this.#specialSlot(index));
  }

  /**
   * The stream for `id`, created if needed.
   * @throws ServerError the factory's own error when creation fails (a non-`ServerError` thrown by
   *   the factory is wrapped in a {@link StreamCreationError}).
   */
  getOrCreate(id: StreamId): S {
    return this.#getOrCreateIndex(this.streamIndex(id));
  }

  /** The special stream `index` (0-based, after the regular slots), created if needed. */
  getOrCreateSpecial(index: number): S {
    return this.#getOrCreateIndex(this.#specialSlot(index));
  }

  /** The stream on `id`'s slot when that slot was ever initialised; never creates one. */
  tryGet(id: StreamId): S | undefined {
    return this.#slots[this.streamIndex(id)];
  }

  #specialSlot(index: number): number {
    if (!Number.isSafeInteger(index) || index < 0 || index >= this.#numSpecial) {
      throw new RangeError(
        `StreamPool: special stream ${index} does not exist; this pool has ${this.#numSpecial} special streams`,
      );
    }
    return this.#maxStreams + index;
  }

  #getOrThrow(index: number): S {
    try {
      return this.#getOrCreateIndex(index);
    } catch (error) {
      throw new StreamCreationError(error);
    }
  }

  #getOrCreateIndex(index: number): S {
    const existing = this.#slots[index];
    if (existing !== undefined) return existing;
    let created: S;
    try {
      created = this.factory.create(StreamId.of(index));
    } catch (error) {
      if (error instanceof ServerError) throw error;
      throw new StreamCreationError(error);
    }
    this.#slots[index] = created;
    this.#initialised = this.#slots.filter((slot): slot is S => slot !== undefined);
    return created;
  }
}
