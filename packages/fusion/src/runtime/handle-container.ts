import { IdMap, invariant } from "@weft/environment";
import type { TensorId, TensorIr } from "../ir/tensor-ir.js";

/**
 * How a {@link HandleContainer} gives back the references it drops.
 * Backends pass their `FusionRuntime.releaseHandle`.
 */
export type ReleaseHandle<H> = (handle: H) => void;

/**
 * The handles of one device, keyed by tensor id, shared by all of its streams. Burn's
 * `HandleContainer`, with explicit reference counts.
 *
 * @remarks
 * **Ownership.** Each entry holds one reference on its handle. {@link HandleContainer.getHandle}
 * *borrows* (no new reference): an op that keeps a handle past its own execution (a view sharing
 * the memory of its input) takes a new reference through the runtime's `aliasHandle`. Removing an
 * entry (`removeHandle`, `free`) releases its reference.
 * **Errors.** An entry may hold an error instead of a handle: the output of an op that failed, or
 * that read a tensor that carried an error. Reading such a tensor rejects with the error.
 * **Invariants.**
 * - An id's entry is set once (SSA ids); `registerHandle` over a live entry is a bug.
 * - At quiescence (all tensors disposed, all streams drained) the container is empty.
 */
export class HandleContainer<H> {
  /**
   * Live handles; entries added by `registerHandle`, removed by `removeHandle`/`free`. An
   * {@link IdMap}: every tensor id is fresh, and a `Map` rebuilt its table as they came and went.
   */
  readonly #handles = new IdMap<H>();
  /** Errors standing in for handles; added by `setError`, removed with the tensor's free. */
  readonly #errors = new Map<TensorId, Error>();
  readonly #release: ReleaseHandle<H>;

  constructor(release: ReleaseHandle<H>) {
    this.#release = release;
  }

  /** Registers `handle` (taking over the caller's reference) under `id`. */
  registerHandle(id: TensorId, handle: H): void {
    if (this.#errors.size !== 0) this.#errors.delete(id);
    const before = this.#handles.size;
    this.#handles.set(id, handle);
    // One lookup instead of `has` + `set`: a known id leaves the size unchanged.
    invariant(this.#handles.size > before, () => `tensor ${id} already has a handle (SSA ids are never reused)`);
  }

  /** The handle of `id`, borrowed; `undefined` when it does not exist (yet). */
  getHandleRef(id: TensorId): H | undefined {
    return this.#handles.get(id);
  }

  /** Whether `id` has a handle. */
  hasHandle(id: TensorId): boolean {
    return this.#handles.has(id);
  }

  /**
   * The handle of `tensor`, borrowed for the duration of the op executing it.
   * @throws InvariantError when the tensor has no handle (an execution-order bug).
   */
  getHandle(tensor: TensorIr): H {
    const handle = this.#handles.get(tensor.id);
    invariant(handle !== undefined, () => `should have a handle for tensor ${tensor.id} (${tensor.status})`);
    return handle;
  }

  /** Removes `id`'s entry (handle or error) and releases its reference. */
  removeHandle(id: TensorId): void {
    const handle = this.#handles.get(id);
    if (this.#errors.size !== 0) this.#errors.delete(id);
    if (handle === undefined) return;
    this.#handles.delete(id);
    this.#release(handle);
  }

  /** Removes the entry of `tensor` only when this use is its last (`ReadWrite`). */
  free(tensor: TensorIr): void {
    if (tensor.status === "ReadWrite") this.removeHandle(tensor.id);
  }

  /** Records that `id` will never have a handle because of `error`. */
  setError(id: TensorId, error: Error): void {
    const handle = this.#handles.get(id);
    if (handle !== undefined) {
      this.#handles.delete(id);
      this.#release(handle);
    }
    this.#errors.set(id, error);
  }

  /** The error standing in for `id`'s handle, if any. */
  getError(id: TensorId): Error | undefined {
    return this.#errors.get(id);
  }

  /** Number of errors standing in for handles (0 in the common case: error checks can be skipped). */
  get errorCount(): number {
    return this.#errors.size;
  }

  /** Number of live entries (handles and errors): zero at quiescence. */
  get size(): number {
    return this.#handles.size + this.#errors.size;
  }

  /** The ids with a live entry (for the inspector and leak reports): handles by id, then errors. */
  ids(): TensorId[] {
    return [...(this.#handles.ids().sort((a, b) => a - b) as TensorId[]), ...this.#errors.keys()];
  }
}
