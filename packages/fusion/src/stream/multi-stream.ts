import { IdMap, StreamId, invariant } from "@weft/environment";
import type { OperationIr } from "../ir/operation-ir.js";
import type { TensorId, TensorIr } from "../ir/tensor-ir.js";
import type { HandleContainer } from "../runtime/handle-container.js";
import type { OperationFuser, Optimization } from "../runtime/fusion-runtime.js";
import { ExplorationBudget } from "./execution/explorer.js";
import { Processor } from "./execution/processor.js";
import type { ExecutionEnv } from "./queue/operation-queue.js";
import { OperationQueue, runDrop } from "./queue/operation-queue.js";
import { ExecutionPlanStore } from "./store/execution-plan-store.js";

/**
 * How a read reaches a tensor without perturbing its home stream's pending segment. Burn's
 * `ReadPlan`.
 * - `drain`: the tensor has no handle (nor error) yet: only running the queue can produce it.
 * - `direct`: read the handle as it is.
 *
 * Burn has a third plan, `DeferFree`, for a *consuming* read (`into_data` takes the tensor) of a
 * tensor a pending op still references. Weft's reads borrow (`data()` leaves the tensor alive;
 * disposing it is a separate `drop`), so that case cannot arise and the plan does not exist.
 */
export type ReadPlan = "drain" | "direct";

/** One lazy stream: its pending segment and the processor that decides about it. */
interface LazyStream<H> {
  readonly queue: OperationQueue;
  readonly processor: Processor<H>;
}

/** Options of a {@link MultiStream}. */
export interface MultiStreamOptions {
  /** Pending operations on one stream that force its execution (default 128). */
  readonly queueLimit?: number;
  /** Explorations allowed on the device before every segment runs unfused (default unbounded). */
  readonly maxExplorations?: number;
  /** Execution plans kept on the device (least recently used evicted first); default 1024. */
  readonly maxPlans?: number;
}

/**
 * What minted a borrowed view: the source tensor's shared reference, whose `views` hold one view
 * per borrowing stream (`FusionTensor`'s `SharedRef`).
 */
export interface ViewOwner {
  views: IdMap<TensorIr> | undefined;
}

/** Empty streams kept for reuse, so a stream that empties and refills does not rebuild its fusers. */
const STREAM_POOL_SIZE = 16;

/**
 * The views one stream borrowed, `[0, count)` of two parallel arrays kept at their size: a `Map`
 * filled and emptied by every served request reallocated its table as it grew and shrank, tables
 * that outlived a scavenge and filled the old generation (docs/performance.md#one-launch-fewer).
 * A stream holds the few views its pending segment uses, so lookups scan.
 */
interface BorrowedViews {
  readonly ids: TensorId[];
  readonly owners: (ViewOwner | undefined)[];
  count: number;
}

/**
 * Keeps track of the concurrent lazy streams of one device (docs/concepts.md#multistream). Burn's `MultiStream`.
 *
 * @remarks
 * **Why.** Each stream's queue assumes its inputs live on that stream; a tensor used from another
 * stream would break that. A foreign tensor id therefore never enters another stream's queue: it
 * gets a fresh id aliasing the same handle ({@link MultiStream.tagSharedView}). Drains, reads and
 * foreign drops are arranged so that events from other streams (and finalizers) never change the
 * composition of a stream's pending segment.
 * **State and bounds.**
 * - `streams`: one entry per stream holding pending operations or deferred frees; an entry is
 *   removed as soon as its queue is empty (at the end of a drain, an execution, a foreign drop or
 *   a read), so thousands of short-lived task streams do not accumulate.
 * - `sharedSources`: ids whose share needed a drain; removed when the id's last wrapper dies
 *   (its `drop` or foreign drop).
 * - `borrowed`: the views a stream minted to use foreign tensors in its ops (`FusionTensor.intoIr`
 *   from another stream). Burn frees such a copy from the borrowing side: each view is freed at
 *   its stream's next boundary (an execution, a drain — even of an empty queue —, a drop run at
 *   once) where no pending operation of that stream references it, and its owner forgets it, so
 *   the next use mints a new one. A stream therefore holds at most the views its pending segment
 *   uses, and 20,000 short tasks borrowing the same weights leave nothing behind. Freed from the
 *   source side instead (the source's last reference died first) a view leaves `borrowed` too.
 * - `store`: the device's plans, shared by all streams (bounded, see `ExecutionPlanStore`).
 * **Errors.** Execution never throws for a failed operation: its error is put on the tensors it
 * would have written (`setOutputErrors`) and delivered by their reads.
 */
export class MultiStream<H> {
  readonly #streams = new IdMap<LazyStream<H>>();
  readonly #pool: LazyStream<H>[] = [];
  readonly #fusers: () => OperationFuser<Optimization<H>>[];
  /** The device's execution plans. */
  readonly store: ExecutionPlanStore<Optimization<H>>;
  /** The device's exploration budget and count. */
  readonly budget: ExplorationBudget;
  /** Sources whose share required draining their stream (bounded, see the type doc). */
  readonly sharedSources = new Set<TensorId>();
  /**
   * Per borrowing stream, its views of foreign tensors and how their owner forgets each (bounded,
   * see the type doc). A stream's entry goes with its last view.
   */
  readonly #borrowed = new IdMap<BorrowedViews>();
  /** Empty per-stream view lists kept for the next borrowing stream (at most `STREAM_POOL_SIZE`). */
  readonly #viewMaps: BorrowedViews[] = [];
  /** Views freed from the borrowing side so far (`weft.stats()`). */
  #viewsReleased = 0;
  readonly #queueLimit: number;

  constructor(fusers: () => OperationFuser<Optimization<H>>[], options: MultiStreamOptions = {}) {
    this.#fusers = fusers;
    this.#queueLimit = options.queueLimit ?? 128;
    invariant(this.#queueLimit >= 1, "queueLimit must be at least 1");
    this.budget = new ExplorationBudget(options.maxExplorations ?? Infinity);
    this.store = new ExecutionPlanStore<Optimization<H>>(options.maxPlans);
  }

  /** Views of foreign tensors held by borrowing streams now. */
  get borrowedViews(): number {
    let n = 0;
    this.#borrowed.forEach((views) => {
      n += views.count;
    });
    return n;
  }

  /** Views freed from the borrowing side so far. */
  get viewsReleased(): number {
    return this.#viewsReleased;
  }

  /**
   * Records `view` as borrowed by `stream`: freed at the stream's next boundary where no pending
   * operation uses it; `owner` then forgets it (`owner.views` loses `stream`'s entry if it is
   * still `view`), so the next use mints a new view. No closure per borrow.
   */
  borrow(stream: StreamId, view: TensorId, owner: ViewOwner): void {
    let views = this.#borrowed.get(stream);
    if (views === undefined) this.#borrowed.set(stream, (views = this.#viewMaps.pop() ?? { ids: [], owners: [], count: 0 }));
    for (let i = 0; i < views.count; i++) {
      if (views.ids[i] !== view) continue;
      views.owners[i] = owner;
      return;
    }
    views.ids[views.count] = view;
    views.owners[views.count] = owner;
    views.count++;
  }

  /** Forgets `view` as borrowed by `stream` (its owner frees it another way). */
  unborrow(stream: StreamId, view: TensorId): void {
    const views = this.#borrowed.get(stream);
    if (views === undefined) return;
    for (let i = 0; i < views.count; i++) {
      if (views.ids[i] !== view) continue;
      removeAt(views, i);
      break;
    }
    if (views.count === 0) this.#dropViewMap(stream, views);
  }

  /** `stream` borrows nothing any more: its empty list goes back to the pool. */
  #dropViewMap(stream: StreamId, views: BorrowedViews): void {
    this.#borrowed.delete(stream);
    if (this.#viewMaps.length < STREAM_POOL_SIZE) this.#viewMaps.push(views);
  }

  /** A boundary of `stream`: frees every view it borrowed that no pending operation uses. */
  #releaseBorrowed(stream: StreamId, handles: HandleContainer<H>): void {
    const views = this.#borrowed.get(stream);
    if (views === undefined) return;
    const queue = this.#streams.get(stream)?.queue;
    // Compacted in place: the views still used keep their order.
    let kept = 0;
    for (let i = 0; i < views.count; i++) {
      const view = views.ids[i] as TensorId;
      const owner = views.owners[i] as ViewOwner;
      if (queue?.referencesTensor(view) === true) {
        views.ids[kept] = view;
        views.owners[kept++] = owner;
        continue;
      }
      handles.removeHandle(view);
      const minted = owner.views;
      if (minted !== undefined && minted.get(stream)?.id === view) minted.delete(stream);
      this.#viewsReleased++;
    }
    for (let i = kept; i < views.count; i++) views.owners[i] = undefined;
    views.count = kept;
    if (views.count === 0) this.#dropViewMap(stream, views);
  }

  /** The streams holding pending work or deferred frees, by id. */
  streamIds(): StreamId[] {
    return this.#streams.ids().sort((a, b) => a - b) as StreamId[];
  }

  /** Pending operations of `stream` (0 when it has no entry). */
  queueLength(stream: StreamId): number {
    return this.#streams.get(stream)?.queue.length ?? 0;
  }

  /** The pending operations of `stream` in global form (a copy, for inspection). */
  pending(stream: StreamId): OperationIr[] {
    return [...(this.#streams.get(stream)?.queue.global ?? [])];
  }

  #getOrCreate(stream: StreamId): LazyStream<H> {
    let s = this.#streams.get(stream);
    if (s === undefined) {
      s = this.#pool.pop() ?? { queue: new OperationQueue(), processor: new Processor<H>(this.#fusers(), this.budget) };
      this.#streams.set(stream, s);
    }
    return s;
  }

  #removeIfEmpty(stream: StreamId): void {
    const s = this.#streams.get(stream);
    if (s === undefined || !s.queue.isEmpty) return;
    this.#streams.delete(stream);
    if (this.#pool.length < STREAM_POOL_SIZE) this.#pool.push(s);
  }

  /**
   * Enqueues `op` on `stream` and lets its processor decide (lazy). A `drop` removes its id from
   * `sharedSources`; a `drop` on an empty segment is carried out at once (see `#dropNow`). When
   * the queue reaches the limit, the stream is drained.
   */
  register(stream: StreamId, op: OperationIr, env: ExecutionEnv<H>): void {
    let s = this.#streams.get(stream);
    if (op.kind === "drop") {
      if (this.sharedSources.size !== 0) this.sharedSources.delete(op.tensor.id);
      if (s === undefined || s.queue.length === 0 || !s.queue.referencesTensor(op.tensor.id)) {
        this.#dropNow(stream, op, s, env);
        return;
      }
    }
    if (s === undefined) s = this.#getOrCreate(stream);
    s.queue.add(op);
    const executed = s.processor.process(s.queue, this.store, "lazy", stream, env);
    if (s.queue.length >= this.#queueLimit) this.drain(stream, env);
    else {
      if (executed > 0) this.#releaseBorrowed(stream, env.handles);
      // The entry goes once its queue is empty (the common case keeps it: one check, no lookup).
      if (s.queue.isEmpty) this.#removeIfEmpty(stream);
    }
  }

  /**
   * A `drop` no pending operation references (the segment is empty, or none of its operations
   * reads or writes the tensor): no pending operation can use its tensor, so it runs alone,
   * unfused, at once (what the processor would decide for an empty segment; in a non-empty one
   * it would only lengthen the segment and its keys). Done directly: handed to the runtime and
   * logged as the same one-op block (`runDrop`), the handle freed through `freeHandle` with
   * whether the runtime was handed it, and the deferred frees flushed (it is a boundary, like any
   * execution). A drop of a tensor a pending operation produces or reads stays in the segment, in
   * program order: the fusers read it (an output nobody keeps is not written).
   * Why: disposing an already computed tensor is the most frequent operation of a `tidy` loop. A
   * serving request's `tidy` drops 13 intermediates while its last block is still pending; six
   * of them were computed blocks ago and went through the segment one by one.
   */
  #dropNow(stream: StreamId, op: Extract<OperationIr, { kind: "drop" }>, pending: LazyStream<H> | undefined, env: ExecutionEnv<H>): void {
    const ran = runDrop(op, { handles: env.handles, stream }, env);
    env.runtime.freeHandle(env.handles, op.tensor, ran);
    this.#releaseBorrowed(stream, env.handles);
    if (pending === undefined) return;
    pending.queue.flushDeferred(env.handles);
    this.#removeIfEmpty(stream);
  }

  /**
   * Runs `stream`'s pending segment to completion, then flushes its deferred frees (a drain is a
   * boundary even on an empty queue). Reports nothing: failed operations leave their errors on
   * the tensors they would have written.
   */
  drain(stream: StreamId, env: ExecutionEnv<H>): void {
    const s = this.#streams.get(stream);
    if (s === undefined) {
      // Still a boundary: views the stream borrowed for operations that already ran go now.
      this.#releaseBorrowed(stream, env.handles);
      return;
    }
    s.processor.process(s.queue, this.store, "sync", stream, env);
    invariant(s.queue.length === 0, () => `a drain of stream ${stream} left ${s.queue.length} operations`);
    s.queue.flushDeferred(env.handles);
    this.#releaseBorrowed(stream, env.handles);
    this.#removeIfEmpty(stream);
  }

  /**
   * Sets up `dst` (homed on `dstStream`) as a cross-stream alias of `src` (homed on `srcStream`),
   * through the runtime's `aliasHandle(handle, dstStream)`. Drains `srcStream` only
   * when `src` has no handle yet and was never drained for a share (`sharedSources`); a chained
   * share (a view re-shared onward) finds its handle registered and never drains. A source that
   * carries an error passes it on to `dst`.
   */
  tagSharedView(srcStream: StreamId, src: TensorId, dst: TensorId, dstStream: StreamId, env: ExecutionEnv<H>): void {
    const { handles } = env;
    if (!this.sharedSources.has(src) && !handles.hasHandle(src) && handles.getError(src) === undefined) {
      this.sharedSources.add(src);
      this.drain(srcStream, env);
    }
    const handle = handles.getHandleRef(src);
    if (handle !== undefined) {
      handles.registerHandle(dst, env.runtime.aliasHandle(handle, dstStream));
      return;
    }
    const error = handles.getError(src);
    invariant(error !== undefined, () => `shared source ${src} has neither a handle nor an error after draining stream ${srcStream}`);
    handles.setError(dst, error);
  }

  /** How to read `ir` (a borrow) without changing its pending segment's composition. */
  readPlan(ir: TensorIr, handles: HandleContainer<H>): ReadPlan {
    return !handles.hasHandle(ir.id) && handles.getError(ir.id) === undefined ? "drain" : "direct";
  }

  /**
   * Marks a tensor homed on `stream` as read (`stream` is the tensor's, passed explicitly, never
   * the reader's: docs/pitfalls.md#p5): the stream's entry goes away if it is empty.
   */
  markRead(stream: StreamId): void {
    this.#removeIfEmpty(stream);
  }

  /**
   * Frees `ir` (homed on `stream`) from outside that stream's program order: another stream's
   * dispose, or a finalizer. Never enqueues into nor drains the pending segment: when a pending
   * operation references the tensor (including its producer, when it is not computed yet), the
   * free waits for the next boundary; otherwise it happens now.
   */
  foreignDrop(stream: StreamId, ir: TensorIr, handles: HandleContainer<H>): void {
    this.sharedSources.delete(ir.id);
    const s = this.#streams.get(stream);
    if (s !== undefined && s.queue.referencesTensor(ir.id)) {
      s.queue.deferredFrees.push(ir);
      return;
    }
    handles.removeHandle(ir.id);
    this.#removeIfEmpty(stream);
  }
}

/** Removes entry `i` of `views` (the last one takes its place; the freed slot drops its owner). */
function removeAt(views: BorrowedViews, i: number): void {
  const last = views.count - 1;
  views.ids[i] = views.ids[last] as TensorId;
  views.owners[i] = views.owners[last];
  views.owners[last] = undefined;
  views.count = last;
}
