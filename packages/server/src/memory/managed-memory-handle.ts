import type { StreamId } from "@weft/environment";
import { bufferBinding, type AllocationId, type BufferBinding } from "../binding.js";
import type { MemoryHandle } from "../compute-server.js";
import { InvalidBindingError, ReleasedHandleError } from "../errors/server-error.js";

/**
 * The bookkeeping of one live allocation, shared by its handle and its manager.
 * @internal
 */
export interface AllocationState {
  readonly id: AllocationId;
  /** Requested size in bytes (the slice may be larger, rounded to the alignment). */
  readonly size: number;
  readonly stream: StreamId;
  /** Holders of the handle; `canMut ⇔ handleRefs === 1`. */
  handleRefs: number;
  /** Pins: in-flight launches and cross-stream readers. They keep the slice, not `canMut`. */
  bindingRefs: number;
  /** Holds ({@link ManagedMemoryHandle.hold}): keep the handle usable and the slice, not `canMut`. */
  holds: number;
  /** Set once the slice went back to its page; nothing may use the state afterwards. */
  freed: boolean;
}

/** What a handle tells its manager. @internal */
export interface HandleOwner {
  /** Called when a count reached zero; frees the slice when both did. */
  maybeFree(state: AllocationState): void;
}

/**
 * Counts one more `count` (a pin or a hold) on `state`; the returned function takes it back exactly
 * once (a second call throws {@link ReleasedHandleError} naming `what`) and lets `owner` free the
 * slice when nothing else keeps it.
 * @internal
 */
export function countOnce(state: AllocationState, count: "bindingRefs" | "holds", what: string, owner: HandleOwner): () => void {
  state[count]++;
  let done = false;
  return () => {
    if (done) throw new ReleasedHandleError(what, state.id);
    done = true;
    state[count]--;
    if (state[count] === 0) owner.maybeFree(state);
  };
}

/**
 * A reference-counted handle on one allocation of a {@link MemoryManagement}: the
 * {@link MemoryHandle} every server hands out.
 *
 * @remarks
 * **Counts.** Starts at one reference. `retain()` per extra holder, `release()` once per holder.
 * `canMut()` ⇔ exactly one reference (bindings do not count: a pin keeps memory alive, it does not
 * share ownership), nor do holds (`hold()`: a launch group's fallback keeps its block's tensors
 * usable until the group ran, without taking in-place writes away from the block after it). The
 * slice is reused only when no reference, no hold and no pin remain.
 * **Misuse.** Any use after the last release, and a release past zero, throw
 * {@link ReleasedHandleError}; a binding outside the allocation throws {@link InvalidBindingError}.
 */
export class ManagedMemoryHandle implements MemoryHandle {
  readonly #state: AllocationState;
  readonly #owner: HandleOwner;
  /** The whole-allocation binding, made on its first use (one per handle). */
  #whole: BufferBinding | undefined;

  constructor(state: AllocationState, owner: HandleOwner) {
    this.#state = state;
    this.#owner = owner;
  }

  get allocation(): AllocationId {
    return this.#state.id;
  }

  get size(): number {
    return this.#state.size;
  }

  get stream(): StreamId {
    return this.#state.stream;
  }

  get refs(): number {
    return this.#state.handleRefs;
  }

  retain(): void {
    this.#alive("retain");
    this.#state.handleRefs++;
  }

  release(): void {
    this.#alive("release");
    this.#state.handleRefs--;
    if (this.#state.handleRefs === 0) this.#owner.maybeFree(this.#state);
  }

  hold(): () => void {
    this.#alive("hold");
    return countOnce(this.#state, "holds", "MemoryHandle.hold (released twice)", this.#owner);
  }

  canMut(): boolean {
    this.#alive("canMut");
    return this.#state.handleRefs === 1;
  }

  binding(offset = 0, size = this.#state.size - offset): BufferBinding {
    this.#alive("binding");
    // The whole allocation (what backends bind per launch) is one object per handle: a binding
    // is a plain readonly value, so sharing it changes nothing for its users.
    if (offset === 0 && size === this.#state.size) return (this.#whole ??= bufferBinding(this.#state.id, 0, size, this.#state.stream));
    if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(size) || offset < 0 || size < 0 || offset + size > this.#state.size) {
      throw new InvalidBindingError(
        "MemoryHandle.binding",
        `bytes [${offset}, ${offset + size}) are outside allocation ${this.#state.id} of ${this.#state.size} bytes; ` +
          "bind a range inside the allocation",
      );
    }
    return bufferBinding(this.#state.id, offset, size, this.#state.stream);
  }

  #alive(op: string): void {
    if (this.#state.handleRefs <= 0 && this.#state.holds <= 0) throw new ReleasedHandleError(`MemoryHandle.${op}`, this.#state.id);
  }
}
