import { type CacheStats, IdMap, InvariantError, SlotTable, checkInteger, ReentrancyError, ReentrancyGuard, StreamId, WeftError, invariant } from "@weft/environment";
import { DisposedDeviceError, TensorComputationError } from "../errors/tensor-errors.js";
import { DropOpIr, InitOpIr, type OperationIr } from "../ir/operation-ir.js";
import type { DType, TensorData, TensorId, TensorIr, TypedArray } from "../ir/tensor-ir.js";
import { numElements, tensorIr } from "../ir/tensor-ir.js";
import { FusionInspector } from "../inspector/fusion-inspector.js";
import { HandleContainer } from "../runtime/handle-container.js";
import type { FusionRuntime, Optimization, RuntimeStats } from "../runtime/fusion-runtime.js";
import { MultiStream } from "../stream/multi-stream.js";
import { MemoryTuneStore } from "@weft/runtime";
import { PlanCache, type PlanCacheOptions, defaultPlanStore, planCacheKey } from "../stream/store/plan-cache.js";
import type { ExecutionEnv } from "../stream/queue/operation-queue.js";
import type { SharedRef } from "../tensor/fusion-tensor.js";
import { FusionTensor } from "../tensor/fusion-tensor.js";

/**
 * What a read that the backend failed rejects with: a {@link TensorComputationError} (one class
 * for every failed read, whichever layer detected it), except for bugs (`InvariantError`,
 * `ReentrancyError`), which are rethrown as they are.
 */
function readFailure(ir: TensorIr, error: unknown): Error {
  if (error instanceof InvariantError || error instanceof ReentrancyError) return error;
  return TensorComputationError.fromRead(ir, error);
}

/** Process-global tensor ids: fresh for every output (SSA), never reused, unique across devices. */
let nextTensorId = 1;

function freshId(): TensorId {
  return nextTensorId++ as TensorId;
}

/** The operations a caller records: every kind but `drop` (which disposing records), each with one output. */
export type ProducingOperation = Exclude<OperationIr, { kind: "drop" }>;

/** Options of a {@link FusionDevice}. */
export interface FusionDeviceOptions {
  /** Pending operations on one stream that force its execution (default 128). */
  readonly queueLimit?: number;
  /** Explorations allowed before segments run unfused (default unbounded). */
  readonly maxExplorations?: number;
  /** Execution plans kept (least recently used evicted first); default 1024. */
  readonly maxPlans?: number;
  /** Executed blocks the inspector's log keeps (a non-negative integer; default 10 000; 0 logs none, the count still runs). */
  readonly maxLoggedBlocks?: number;
  /**
   * Persists the execution plans (`plans.json` in the cache folder in Node, IndexedDB in
   * browsers), so a server or a page reload starts with them: loaded at creation
   * ({@link FusionDevice.planCache}`.load()`), written after new plans. Default: not persisted
   * (the plans can still be exported and imported by hand).
   */
  readonly planCache?: PlanCacheOptions;
}

/** The device memory report, `weft.memory()`. */
export interface FusionMemory {
  /** Live `FusionTensor` wrappers on this device. */
  readonly liveTensors: number;
  /** Live handle-container entries (buffers or errors standing in for them). */
  readonly liveHandles: number;
  /**
   * Backend stream slots holding device memory now: bounded by the server's slots (32 by default,
   * task streams share them: docs/concepts.md#streampool-streammemory-and-taint), back to 0 once every page was given back.
   */
  readonly streams: number;
  /** Lazy streams holding pending operations, deferred frees or borrowed views: 0 at quiescence. */
  readonly pendingStreams: number;
  /** Bytes held by live allocations. */
  readonly bytesInUse: number;
  /** Bytes reserved from the device (pages), used or not. */
  readonly bytesReserved: number;
}

/**
 * What `weft.stats()` reports for one device: the backend's {@link RuntimeStats} plus the fusion
 * engine's plan cache and cross-stream views. Plain numbers (caches as `CacheStats`).
 */
export interface DeviceStats extends RuntimeStats {
  /** Execution plans held now (bounded: `maxPlans`). */
  readonly plans: number;
  /** Cached plans executed without exploring. */
  readonly planHits: number;
  /** Explorations run (a repeated graph adds none). */
  readonly explorations: number;
  /** Views of foreign tensors held by borrowing streams now. */
  readonly borrowedViews: number;
  /** Views freed from the borrowing side so far. */
  readonly viewsReleased: number;
}

/**
 * What tensors and the user API call on a device, independent of the backend's handle type: Burn's
 * fusion client. {@link FusionDevice} implements it; `@weft/tensor`'s `Device` holds one, so
 * `Tensor` never carries the handle type.
 */
export interface FusionClient {
  /** The backend's name and what it supports. */
  readonly runtime: Pick<FusionRuntime<unknown>, "name" | "capabilities">;
  /** Engine state for tests, benchmarks and `memory()`. */
  readonly inspector: FusionInspector;
  /** A fresh output `TensorIr`: new id, `NotInit`. */
  outputIr(shape: readonly number[], dtype: DType): TensorIr;
  /** Records `op` on the current stream; returns its output wrapped (home: the current stream). */
  register(op: ProducingOperation): FusionTensor;
  /**
   * Uploads host values as a new tensor on the current stream. `data.data` is copied before this
   * returns: the caller may change or reuse its array afterwards (`tensor()` passes a caller's
   * Float32Array through on this promise).
   */
  upload(data: TensorData): FusionTensor;
  /** Drains `stream` (default: the current one), then waits for its device work. */
  sync(stream?: StreamId): Promise<void>;
  /** Drains every stream, then waits for all their device work. */
  syncAll(): Promise<void>;
  /** The memory report. */
  memory(): FusionMemory;
  /** What the device holds and did (`weft.stats()`). */
  stats(): DeviceStats;
  /** Gives every free page back (`weft.releaseUnused()`). */
  releaseUnused(): void;
  /** Releases the device (its memory, caches and, where owned, the GPU device). */
  dispose(): void;
}

/**
 * Queued wrappers (see `FusionDevice`, "Leak backstop") at which the queue is first compacted: the
 * disposed ones leave it, and it may then grow to twice the live ones it kept (never below this).
 */
const LEAK_BATCH = 2048;

/** What the finalizer of a leaked wrapper needs: never the wrapper itself. */
interface LeakToken {
  readonly ref: SharedRef;
  readonly ir: TensorIr;
  readonly stream: StreamId;
}

/**
 * The fusion engine of one backend device: the lazy per-stream queues, the cross-stream sharing,
 * the plan cache, the handle container and the error delivery. Burn's fusion client + server,
 * run inline on the caller.
 *
 * @remarks
 * **How an op travels.** `register(op)` enqueues `op` on the current stream; the stream's
 * processor decides (cached plan, exploration, or wait); blocks execute through the runtime's
 * optimizations or `executeOperation`, with the stream in their `ExecutionContext` (read from
 * `StreamId.current()` once, here, and passed explicitly below: docs/pitfalls.md#p5). A read, a sync, the
 * queue limit or a plan trigger forces execution.
 * **Re-entrancy.** Every engine call runs under a {@link ReentrancyGuard}: a fuser, kernel or
 * callback that calls back into the device throws `ReentrancyError` (docs/pitfalls.md#p3). Such bug errors
 * (`InvariantError`, `ReentrancyError`) are rethrown to the caller after the engine's state was
 * made consistent; ordinary failures go onto the tensors.
 * **Invariants.**
 * - At quiescence (every wrapper disposed, every stream synced) there are no handles and no
 *   streams: `memory().liveHandles === 0 && memory().streams === 0`.
 * - Nothing is held across an `await`: reads return the backend's promise (docs/pitfalls.md#p4).
 * **Leak backstop, registered lazily.** Registering every wrapper with the `FinalizationRegistry`
 * (and unregistering it at dispose) was a large part of an op's host cost, although most wrappers
 * die within the same synchronous burst (`tidy`, temporaries — even 10,000 of them alive at once
 * until a `tidy` ends). New wrappers are therefore queued and registered in a microtask after the
 * first one is queued; only those still alive then are registered. A leaked wrapper is thus
 * registered at the end of the current synchronous turn; until then the queue holds it (so it
 * cannot be collected unregistered). **Bound:** when the queue reaches its limit (first
 * `LEAK_BATCH`), the disposed wrappers leave it and the limit becomes twice the live ones left
 * (at least `LEAK_BATCH`): the queue never holds more than twice the wrappers alive plus
 * `LEAK_BATCH`, however many are created and disposed in one turn.
 */
export class FusionDevice<H> implements FusionClient {
  /** The backend. */
  readonly runtime: FusionRuntime<H, Optimization<H>>;
  /** The device's handles, shared by all streams. */
  readonly handles: HandleContainer<H>;
  /** The lazy streams. */
  readonly streams: MultiStream<H>;
  /** Engine state for tests, benchmarks and `memory()`. */
  readonly inspector: FusionInspector;
  /**
   * The execution plans' persisted form: `export()`/`import(state)` by hand, and with
   * `options.planCache` the store they are loaded from (`load()`, started at creation) and
   * written to (`flush()`). docs/fusion-search.md, "Persisted plans".
   */
  readonly planCache: PlanCache<Optimization<H>>;
  readonly #guard: ReentrancyGuard;
  readonly #env: ExecutionEnv<H>;
  /** Set by `dispose()`: every later engine call throws `DisposedDeviceError`. */
  #disposed = false;
  /** Bug errors caught during execution, rethrown at the end of the engine call (at most a few). */
  #bugs: Error[] = [];
  #liveTensors = 0;
  /**
   * The leak backstop. Its holdings are keys into `#leakRecords`, never the records: V8 keeps a
   * registration's cell in the old generation, dead, after `unregister` until the next full
   * collection, and a record held by it would outlive every scavenge and be promoted, with all
   * it reaches (docs/performance.md#pending-reads).
   */
  readonly #registry: FinalizationRegistry<number>;
  /** What `#finalize` needs for each registered wrapper, by the key its registration holds. */
  readonly #leakRecords = new SlotTable<LeakToken>();
  /**
   * Wrappers not yet registered with `#registry`; emptied by `#registerLeaks`, compacted at
   * `#leakLimit` (bounded: see "Leak backstop" in the type doc).
   */
  #unregistered: (FusionTensor | undefined)[] = [];
  /** Queued wrappers at which `#unregistered` is compacted next. */
  #leakLimit = LEAK_BATCH;
  readonly #flushLeaks = (): void => this.#registerLeaks();

  constructor(runtime: FusionRuntime<H, Optimization<H>>, options: FusionDeviceOptions = {}) {
    this.runtime = runtime;
    this.handles = new HandleContainer<H>((h) => runtime.releaseHandle(h));
    this.streams = new MultiStream<H>(() => runtime.fusers(), options);
    this.inspector = new FusionInspector(
      this.handles as HandleContainer<unknown>,
      this.streams as MultiStream<unknown>,
      () => this.#liveTensors,
      checkInteger("FusionDevice", "options.maxLoggedBlocks", options.maxLoggedBlocks ?? 10_000, 0),
    );
    const persisted = options.planCache;
    this.planCache = new PlanCache(
      this.streams.store,
      () => runtime.fusers(),
      planCacheKey(runtime.name, persisted?.adapter ?? runtime.name, persisted?.version),
      persisted?.store ?? (persisted === undefined ? new MemoryTuneStore() : defaultPlanStore(persisted.directory)),
    );
    if (persisted !== undefined) {
      this.streams.store.onAdded = () => this.planCache.scheduleSave();
      void this.planCache.load();
    }
    this.#guard = new ReentrancyGuard(`FusionDevice(${runtime.name})`);
    this.#env = {
      runtime,
      handles: this.handles,
      onBlock: (stream, fused, name, kinds, ran) => this.inspector.record(stream, fused, name, kinds, ran),
      onBug: (error) => this.#bugs.push(error),
    };
    this.#registry = new FinalizationRegistry((key) => this.#finalize(this.#leakRecords.take(key)));
  }

  /** A fresh output `TensorIr`: new id, `NotInit`. */
  outputIr(shape: readonly number[], dtype: DType): TensorIr {
    return tensorIr(freshId(), [...shape], dtype, "NotInit");
  }

  /**
   * Records `op` on the current stream; returns its output wrapped (home: the current stream).
   * Inputs must come from {@link FusionTensor.intoIr}. A `drop` is never registered here: it is
   * what disposing a tensor's last wrapper records.
   */
  register(op: ProducingOperation): FusionTensor {
    this.#checkAlive(op.kind);
    const stream = StreamId.current();
    const out = op.out;
    if (out.status !== "NotInit") invariant(false, `output #${out.id} of ${op.kind} must be NotInit (use outputIr)`);
    this.#registerOn(stream, op);
    return this.#wrap(out, stream);
  }

  /** Uploads host values as a new tensor on the current stream (an `init` op). */
  upload(data: TensorData): FusionTensor {
    this.#checkAlive("upload");
    const expected = numElements(data.shape);
    if (data.data.length !== expected) {
      throw new WeftError(
        "shape",
        `upload: ${data.data.length} values do not fill shape [${data.shape.join(", ")}] (${expected} elements); ` +
          "pass exactly one value per element, row-major",
      );
    }
    const stream = StreamId.current();
    const out = this.outputIr(data.shape, data.dtype);
    this.#call(() => {
      const handle = this.runtime.upload(data, stream);
      this.handles.registerHandle(out.id, handle);
      this.streams.register(stream, new InitOpIr(out), this.#env);
    });
    return this.#wrap(out, stream);
  }

  /** Drains `stream` (default: the current one), then waits for its device work. */
  async sync(stream: StreamId = StreamId.current()): Promise<void> {
    this.#checkAlive("sync");
    this.#call(() => this.streams.drain(stream, this.#env));
    await this.runtime.sync(stream);
  }

  /** Drains every stream, then waits for all their device work. */
  async syncAll(): Promise<void> {
    this.#checkAlive("syncAll");
    const drained = new Set<StreamId>([StreamId.DEFAULT, StreamId.current()]);
    this.#call(() => {
      for (const s of this.streams.streamIds()) {
        drained.add(s);
        this.streams.drain(s, this.#env);
      }
    });
    await Promise.all([...drained].map((s) => this.runtime.sync(s)));
  }

  /** The memory report. */
  memory(): FusionMemory {
    const usage = this.#disposed
      ? { bytesInUse: 0, bytesReserved: 0, streams: 0 }
      : this.runtime.memoryUsage();
    return {
      liveTensors: this.#liveTensors,
      liveHandles: this.handles.size,
      streams: usage.streams,
      pendingStreams: this.streams.streamIds().length,
      bytesInUse: usage.bytesInUse,
      bytesReserved: usage.bytesReserved,
    };
  }

  /** What the backend and the engine hold and did (`weft.stats()`). */
  stats(): DeviceStats {
    const runtime: RuntimeStats = (!this.#disposed && this.runtime.resourceStats?.()) || {
      pipelines: 0,
      kernelsGenerated: 0,
      launches: 0,
      submits: 0,
      caches: {},
    };
    const plans: CacheStats = this.streams.store.stats();
    return {
      ...runtime,
      caches: { ...runtime.caches, executionPlans: plans },
      plans: plans.size,
      planHits: plans.hits,
      explorations: this.streams.budget.count,
      borrowedViews: this.streams.borrowedViews,
      viewsReleased: this.streams.viewsReleased,
    };
  }

  /** Gives every free page of the device back (`weft.releaseUnused()`); tensors are untouched. */
  releaseUnused(): void {
    this.#checkAlive("releaseUnused");
    this.#call(() => this.runtime.releaseUnused?.());
  }

  /** Whether {@link FusionDevice.dispose} was called. */
  get disposed(): boolean {
    return this.#disposed;
  }

  /**
   * Releases the device: the backend's memory, caches and (where the runtime owns it) the device
   * itself. Every later use of the device or of its tensors throws {@link DisposedDeviceError};
   * `dispose()` of its tensors stays allowed (and does nothing). Idempotent.
   */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#registerLeaks();
    if (this.planCache.pending) this.planCache.flushInBackground();
    this.runtime.dispose?.();
  }

  #checkAlive(op: string): void {
    if (this.#disposed) throw new DisposedDeviceError(op, this.runtime.name);
  }

  /**
   * Does for `tensor` what the `FinalizationRegistry` does when a leaked wrapper is collected:
   * gives its reference back through the foreign-drop path (never enqueueing into or draining a
   * pending segment). For tests that inject finalizer callbacks at chosen points.
   * @internal
   */
  simulateFinalization(tensor: FusionTensor): void {
    if (!tensor._markDisposed()) return;
    this.#forgetLeak(tensor);
    this.#finalize({ ref: tensor._ref, ir: tensor.toIr("ReadWrite"), stream: tensor.stream });
  }

  // ── FusionTensor's engine side ─────────────────────────────────────────────────────────────

  /** @internal Wrappers queued for leak registration now (bounded: see the type doc). */
  get _leakQueueLength(): number {
    return this.#unregistered.length;
  }

  /** @internal A new wrapper was created: counted now, registered as a leak candidate lazily. */
  _track(tensor: FusionTensor): void {
    this.#liveTensors++;
    const pending = this.#unregistered;
    tensor._leakSlot = pending.length;
    pending.push(tensor);
    if (pending.length === 1) queueMicrotask(this.#flushLeaks);
    else if (pending.length >= this.#leakLimit) this.#compactLeaks();
  }

  /** @internal See {@link FusionTensor.clone}. */
  _clone(tensor: FusionTensor): FusionTensor {
    this.#checkAlive("clone");
    const current = StreamId.current();
    if (current === tensor.stream) {
      tensor._ref.count++;
      return new FusionTensor(this as FusionDevice<unknown>, tensor.id, tensor.shape, tensor.dtype, tensor.stream, tensor._ref);
    }
    const view = this.#sharedView(tensor, current);
    return this.#wrap(view, current);
  }

  /** @internal See {@link FusionTensor.intoIr}. */
  _intoIr(tensor: FusionTensor): TensorIr {
    this.#checkAlive("intoIr");
    const current = StreamId.current();
    if (current === tensor.stream) return tensor.toIr("ReadOnly");
    const ref = tensor._ref;
    let view = ref.views?.get(current);
    if (view === undefined) {
      const minted = this.#sharedView(tensor, current);
      (ref.views ??= new IdMap()).set(current, minted);
      // Freed from the borrowing side at `current`'s next boundary once no pending op uses it;
      // `ref` then forgets it (if it is still `current`'s view).
      this.streams.borrow(current, minted.id, ref);
      view = minted;
    }
    return view;
  }

  /** @internal See {@link FusionTensor.dispose}. */
  _dispose(tensor: FusionTensor, foreign: boolean): void {
    if (!tensor._markDisposed()) return;
    this.#forgetLeak(tensor);
    this.#liveTensors--;
    // The device and all its memory are gone: nothing to free.
    if (this.#disposed) return;
    this.#release(tensor._refIfShared, tensor.toIr("ReadWrite"), tensor.stream, foreign);
  }

  /** @internal See {@link FusionTensor.read}. */
  _read(tensor: FusionTensor, into?: TypedArray): Promise<TypedArray> {
    if (this.#disposed) return Promise.reject(new DisposedDeviceError("read", this.runtime.name));
    const { handle, ir, error } = this.#prepareRead(tensor);
    if (error !== undefined) return Promise.reject(error);
    try {
      const read = this.runtime.read(handle as H, ir, tensor.stream, into).catch((e: unknown) => {
        throw readFailure(ir, e);
      });
      // A runtime that does not write into caller memory itself answers with its own array: copy it once.
      return into === undefined ? read : read.then((values) => (values === into ? into : copyInto(values, into)));
    } catch (e) {
      return Promise.reject(readFailure(ir, e));
    }
  }

  /** @internal See {@link FusionTensor.readSync}. */
  _readSync(tensor: FusionTensor): TypedArray | undefined {
    this.#checkAlive("readSync");
    const { handle, ir, error } = this.#prepareRead(tensor);
    if (error !== undefined) throw error;
    try {
      return this.runtime.readSync?.(handle as H, ir, tensor.stream);
    } catch (e) {
      throw readFailure(ir, e);
    }
  }

  // ── internals ───────────────────────────────────────────────────────────────────────────────

  /**
   * Registers `op` on `stream` as one guarded engine call (the guard's `begin`/`end`: no closure
   * and no call through one per recorded op), then rethrows any bug it caught.
   */
  #registerOn(stream: StreamId, op: OperationIr): void {
    const guard = this.#guard;
    guard.begin();
    try {
      this.streams.register(stream, op, this.#env);
    } finally {
      guard.end();
    }
    this.#rethrowBug();
  }

  /** Runs an engine call under the re-entrancy guard, then rethrows any bug it caught. */
  #call<T>(fn: () => T): T {
    const result = this.#guard.enter(fn);
    this.#rethrowBug();
    return result;
  }

  /** Throws the first bug (invariant, re-entrancy) the engine call just made caught, if any. */
  #rethrowBug(): void {
    const bug = this.#bugs[0];
    if (bug !== undefined) {
      this.#bugs = [];
      throw bug;
    }
  }

  /** Drops the disposed wrappers from the queue and sets its next limit (see the type doc). */
  #compactLeaks(): void {
    const pending = this.#unregistered;
    let kept = 0;
    // A disposed wrapper left its slot empty (`#forgetLeak`): the scan reads the array, not them.
    for (let i = 0; i < pending.length; i++) {
      const tensor = pending[i];
      if (tensor === undefined || tensor.disposed || tensor._leakKey >= 0) continue;
      tensor._leakSlot = kept;
      pending[kept++] = tensor;
    }
    pending.length = kept;
    this.#leakLimit = Math.max(LEAK_BATCH, 2 * kept);
  }

  /** Registers the queued wrappers that are still alive with the `FinalizationRegistry`. */
  #registerLeaks(): void {
    const pending = this.#unregistered;
    if (pending.length === 0) return;
    this.#unregistered = [];
    this.#leakLimit = LEAK_BATCH;
    for (const tensor of pending) {
      if (tensor === undefined) continue;
      tensor._leakSlot = -1;
      if (tensor.disposed || tensor._leakKey >= 0) continue;
      const key = this.#leakRecords.add({ ref: tensor._ref, ir: tensor.toIr("ReadWrite"), stream: tensor.stream });
      tensor._leakKey = key;
      this.#registry.register(tensor, key, tensor);
    }
  }

  /** Takes a dead wrapper out of the `FinalizationRegistry` (if it got there). */
  #forgetLeak(tensor: FusionTensor): void {
    const slot = tensor._leakSlot;
    if (slot >= 0) {
      // Still queued: its slot empties, so neither a compaction nor the turn's registration reads it.
      if (this.#unregistered[slot] === tensor) this.#unregistered[slot] = undefined;
      tensor._leakSlot = -1;
    }
    const key = tensor._leakKey;
    if (key < 0) return;
    tensor._leakKey = -1;
    this.#leakRecords.take(key);
    this.#registry.unregister(tensor);
  }

  #wrap(ir: TensorIr, stream: StreamId): FusionTensor {
    return new FusionTensor(this as FusionDevice<unknown>, ir.id, ir.shape, ir.dtype, stream, undefined);
  }

  /** A fresh id on `current` aliasing `tensor` (the shared view of docs/concepts.md#multistream). */
  #sharedView(tensor: FusionTensor, current: StreamId): TensorIr {
    const dst = freshId();
    this.#pendingShare = tensor;
    this.#pendingView = dst;
    this.#pendingViewStream = current;
    try {
      this.#call(this.#tagBound);
    } finally {
      this.#pendingShare = undefined;
    }
    return tensorIr(dst, tensor.shape, tensor.dtype, "ReadOnly");
  }

  /** `#tagBound`'s arguments: set just before the guarded call; the source cleared after it. */
  #pendingShare: FusionTensor | undefined;
  #pendingView = 0 as TensorId;
  #pendingViewStream: StreamId = StreamId.DEFAULT;
  /** `streams.tagSharedView` of the pending arguments: one function for the device, not a closure per share. */
  readonly #tagBound = (): void => {
    const tensor = this.#pendingShare;
    invariant(tensor !== undefined, "a shared view without its source");
    this.streams.tagSharedView(tensor.stream, tensor.id, this.#pendingView, this.#pendingViewStream, this.#env);
  };

  /**
   * The synchronous part of a read: the read plan (drain the home stream only when the tensor has
   * neither a handle nor an error), then the handle or the error.
   */
  #prepareRead(tensor: FusionTensor): { handle: H | undefined; ir: TensorIr; error: Error | undefined } {
    const ir = tensor.toIr("ReadOnly");
    return this.#call(() => {
      if (this.streams.readPlan(ir, this.handles) === "drain") this.streams.drain(tensor.stream, this.#env);
      const error = this.handles.getError(tensor.id);
      if (error !== undefined) return { handle: undefined, ir, error };
      const handle = this.handles.getHandleRef(tensor.id);
      invariant(handle !== undefined, () => `tensor #${tensor.id} has no handle after draining stream ${tensor.stream}`);
      this.streams.markRead(tensor.stream);
      return { handle, ir, error: undefined };
    });
  }

  /**
   * Gives one reference of `ref` back; the last one drops the id and its views. `undefined`: the
   * id's only reference, never viewed (`FusionTensor._refIfShared`).
   */
  #release(ref: SharedRef | undefined, ir: TensorIr, stream: StreamId, foreign: boolean): void {
    if (ref !== undefined && --ref.count > 0) return;
    if (ref?.views === undefined) {
      // The common case: never used from another stream.
      if (!foreign && StreamId.current() === stream) this.#registerOn(stream, new DropOpIr(ir));
      else this.#call(() => this.streams.foreignDrop(stream, ir, this.handles));
      return;
    }
    const entries: [StreamId, TensorIr][] = [];
    ref.views.forEach((view, viewStream) => entries.push([viewStream as StreamId, view]));
    ref.views = undefined;
    this.#call(() => {
      for (const [viewStream, view] of entries) {
        this.streams.unborrow(viewStream, view.id);
        this.#drop(viewStream, { ...view, status: "ReadWrite" }, foreign);
      }
      this.#drop(stream, ir, foreign);
    });
  }

  /** Drops `ir` homed on `stream`: a `drop` op in program order, or the foreign-drop path. */
  #drop(stream: StreamId, ir: TensorIr, foreign: boolean): void {
    if (!foreign && StreamId.current() === stream) this.streams.register(stream, new DropOpIr(ir), this.#env);
    else this.streams.foreignDrop(stream, ir, this.handles);
  }

  /** The finalizer of a leaked wrapper: always the foreign path (docs/design.md#lifetimes). */
  #finalize(token: LeakToken): void {
    this.#liveTensors--;
    if (this.#disposed) return;
    if (this.#guard.busy) {
      queueMicrotask(() => this.#release(token.ref, token.ir, token.stream, true));
      return;
    }
    this.#release(token.ref, token.ir, token.stream, true);
  }
}

/** Copies `values` into the first elements of `into` and returns `into`. */
function copyInto(values: TypedArray, into: TypedArray): TypedArray {
  (into as Float32Array).set(values as Float32Array);
  return into;
}
