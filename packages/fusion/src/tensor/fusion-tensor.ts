import type { IdMap, StreamId } from "@weft/environment";
import type { FusionDevice } from "../device/fusion-device.js";
import { DisposedTensorError } from "../errors/tensor-errors.js";
import { type DType, type TensorId, type TensorIr, type TypedArray, tensorIr } from "../ir/tensor-ir.js";
import { type Owner, adopt } from "./ownership.js";

/**
 * The key under which an object exposes the `FusionTensor` it wraps (a `Symbol.for`, so copies of
 * this package agree). `tidy`, `scope`, `keep` and `dispose` find every `FusionTensor` reachable
 * through it; `Tensor` carries it.
 */
export const FUSION_TENSOR: unique symbol = Symbol.for("weft.fusion-tensor") as never;

/**
 * The state shared by every same-stream reference (`clone()`) of one tensor id. Burn's `count`.
 *
 * **Bound.** `views` has at most one entry per stream borrowing the tensor now (a view leaves at
 * its stream's next boundary); it is emptied (each view dropped) when {@link SharedRef.count}
 * reaches zero. It is created on the first use from another stream only, so a tensor that stays
 * on its home stream costs no table; an `IdMap`, it keeps the slots of its peak (at most 16 KiB
 * while ≤ 512 streams borrowed it at once), so a weight borrowed by every request rebuilds nothing.
 * @internal
 */
export interface SharedRef {
  /** Live wrappers of this id on its home stream; the id is dropped when it reaches 0. */
  count: number;
  /** Borrowed uses from other streams: one shared-view id per stream (fresh ids, aliases). */
  views: IdMap<TensorIr> | undefined;
}

/** A new {@link SharedRef}: one wrapper, no view. A class, not a literal: docs/performance.md#allocation-sites. */
class FreshRef implements SharedRef {
  count = 1;
  views: IdMap<TensorIr> | undefined = undefined;
}

/**
 * One reference to a lazily computed tensor on a {@link FusionDevice}. Burn's `FusionTensor`.
 *
 * @remarks
 * **Why.** It is what the user API holds: an id in the engine's IR, the tensor's *home stream*
 * (the stream whose queue produced it), and a reference count shared by its same-stream clones,
 * so the engine knows when the last reference dies and can elide writes or reuse buffers in place.
 * **Ownership (JavaScript).** Ops *borrow* their inputs ({@link FusionTensor.intoIr}); the wrapper
 * stays usable until {@link FusionTensor.dispose} (or `using`, or the `tidy` or async scope that
 * owns it, see `ownership.ts`). The last dispose of an
 * id registers a `drop` on the home stream (a foreign drop when called from another stream).
 * A `FinalizationRegistry` frees leaked wrappers through the foreign-drop path only.
 * **Invariants.**
 * - `id`, `shape`, `dtype`, `stream` never change.
 * - After `dispose()`, every use throws {@link DisposedTensorError} naming the op; `dispose()`
 *   itself is idempotent.
 */
export class FusionTensor {
  /** The tensor's id in the IR (shared by same-stream clones). */
  readonly id: TensorId;
  /** Logical shape. */
  readonly shape: readonly number[];
  /** Element type. */
  readonly dtype: DType;
  /** The home stream: the stream whose queue produces this id. */
  readonly stream: StreamId;
  /** The device that owns the tensor. */
  readonly device: FusionDevice<unknown>;
  /**
   * The state shared with this id's other wrappers, made on first need (a clone, a use from
   * another stream, a leak registration: {@link FusionTensor._ref}); until then this wrapper is
   * the id's only reference and no view exists — most tensors (a step's intermediates) never
   * need one, and an object per recorded op was garbage.
   */
  #ref: SharedRef | undefined;
  #disposed = false;
  /** The `ReadOnly` IR of this tensor, built on first use and shared by every borrowing use. */
  #readOnly: TensorIr | undefined;
  /**
   * @internal The key of this wrapper's record in the device's leak table while the device has it
   * registered with its `FinalizationRegistry` (it does so lazily, in batches, for wrappers still
   * alive; see `FusionDevice`), else −1.
   */
  _leakKey = -1;
  /**
   * @internal This wrapper's index in the device's queue of wrappers not yet registered as leak
   * candidates, or −1 when it is not queued (kept by the device: a dispose empties the slot).
   */
  _leakSlot = -1;
  /**
   * @internal The `tidy` frame or async scope that will dispose this wrapper, if any (see
   * `ownership.ts`); set when it is created or handed on, cleared by `keep` and when its owner ends.
   */
  _owner: Owner | undefined = undefined;

  /** @internal Created by {@link FusionDevice} only. */
  constructor(device: FusionDevice<unknown>, id: TensorId, shape: readonly number[], dtype: DType, stream: StreamId, ref: SharedRef | undefined) {
    this.device = device;
    this.id = id;
    this.shape = shape;
    this.dtype = dtype;
    this.stream = stream;
    this.#ref = ref;
    device._track(this);
    adopt(this);
  }

  /** True once this wrapper was disposed (directly, by `tidy`, or by `using`). */
  get disposed(): boolean {
    return this.#disposed;
  }

  /** This tensor, for the reachability walk of `tidy`, `scope`, `keep` and `dispose`. */
  get [FUSION_TENSOR](): FusionTensor {
    return this;
  }

  /** @internal The shared reference state (the device's clone, view and leak paths); made on first access. */
  get _ref(): SharedRef {
    return (this.#ref ??= new FreshRef());
  }

  /**
   * @internal The shared reference state if it was ever made, else `undefined`: this wrapper is
   * the id's only reference and the id has no view (the device's release path).
   */
  get _refIfShared(): SharedRef | undefined {
    return this.#ref;
  }

  /** @internal Marks the wrapper dead without any engine effect (the device does the rest). */
  _markDisposed(): boolean {
    if (this.#disposed) return false;
    this.#disposed = true;
    return true;
  }

  /**
   * A new reference to the same value. On the home stream it shares the id and the count (cheap);
   * from another stream it is a shared view: a fresh id aliasing the same buffer, homed on the
   * current stream (docs/concepts.md#multistream).
   * @throws DisposedTensorError after dispose.
   */
  clone(): FusionTensor {
    this.#check("clone");
    return this.device._clone(this);
  }

  /**
   * Gives this reference back. The last reference of the id registers a `drop` on the home stream
   * (or takes the foreign-drop path from another stream). Idempotent.
   */
  dispose(): void {
    this.device._dispose(this, false);
  }

  /** `using t = …` support: the same as {@link FusionTensor.dispose}. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  /**
   * The tensor as an input of the op named `opName`: a *borrowing* use (`ReadOnly`; the wrapper
   * stays usable). From another stream, a shared view on the current stream is used instead (one
   * per stream, freed when this tensor's last reference dies).
   * @throws DisposedTensorError naming `opName` after dispose.
   */
  intoIr(opName: string): TensorIr {
    this.#check(opName);
    return this.device._intoIr(this);
  }

  /**
   * The values, once computed. Non-consuming. All synchronous work (draining the home stream if
   * the tensor is not computed yet, taking the handle, starting the backend read) happens before
   * this returns; the promise holds nothing of the engine.
   * `into`, when given, is caller-owned memory of the dtype's array type with at least the
   * tensor's element count: the values are written into it and the promise resolves to it.
   * @returns rejects with the {@link TensorComputationError} this tensor carries, or with the
   *   backend's read error.
   * @throws DisposedTensorError after dispose.
   */
  read(into?: TypedArray): Promise<TypedArray> {
    this.#check("read");
    return this.device._read(this, into);
  }

  /**
   * The values now where the backend can answer synchronously (else `undefined`).
   * @throws DisposedTensorError after dispose; the tensor's computation error when it carries one.
   */
  readSync(): TypedArray | undefined {
    this.#check("readSync");
    return this.device._readSync(this);
  }

  /**
   * The `TensorIr` of this tensor with `status`, without any check or side effect. The `ReadOnly`
   * one is built once and shared (IR objects are immutable).
   */
  toIr(status: TensorIr["status"]): TensorIr {
    if (status === "ReadOnly") return (this.#readOnly ??= tensorIr(this.id, this.shape, this.dtype, status));
    return tensorIr(this.id, this.shape, this.dtype, status);
  }

  #check(op: string): void {
    if (this.#disposed) throw new DisposedTensorError(op, this.id, this.shape);
  }
}
