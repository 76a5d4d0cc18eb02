import { LruCache, ReentrancyGuard, type StreamId } from "@weft/environment";
import type { BufferBinding } from "../binding.js";
import {
  type ComputeServer,
  type CubeCount,
  type GroupEnd,
  type KernelBinding,
  type LaunchFallback,
  type LaunchMode,
  type MemoryUsage,
  kernelName,
  launchReads,
  launchWrites,
} from "../compute-server.js";
import { FailureStore } from "../errors/failure-store.js";
import { ErrorGraph } from "../errors/error-graph.js";
import type { TaintedReadError } from "../errors/tainted-read-error.js";
import {
  InjectedFaultError,
  InvalidBindingError,
  LaunchError,
  OutOfMemoryError,
  ServerError,
  ValidationError,
  describeError,
} from "../errors/server-error.js";
import { type DeallocPolicy, DeviceMemory } from "../memory/device-memory.js";
import type { ManagedMemoryHandle } from "../memory/managed-memory-handle.js";
import type { MemoryConfiguration } from "../memory/memory-configuration.js";
import type { MemoryManagement } from "../memory/memory-management.js";
import { StreamPool } from "../stream/stream-pool.js";
import type { HostKernel } from "./host-kernel.js";
import { HostStorage } from "./host-storage.js";
import { HostStream } from "./host-stream.js";
import { totalMemoryUsage } from "../memory/memory-usage.js";

/** A fault for {@link HostComputeServer.injectFault}. */
export type FaultSpec =
  /** Fail the `launch`-th launch that would run from now (1 = the next) with `InjectedFaultError`. */
  | { readonly launch: number }
  /** Fail the `allocation`-th `empty`/`create` from now with `OutOfMemoryError`. */
  | { readonly allocation: number }
  /** Fail every launch of the kernel with this key until `clearFaults()`. */
  | { readonly kernelKey: string }
  /** Fail every launch of a kernel whose key or label matches until `clearFaults()` (e.g. every fused block). */
  | { readonly kernelMatching: RegExp };

/** Options of a {@link HostComputeServer}. */
export interface HostComputeServerOptions {
  /** Name for logs; default `"host"`. */
  readonly name?: string;
  /** Overrides of {@link HOST_MEMORY_CONFIGURATION}. */
  readonly memory?: Partial<MemoryConfiguration>;
  /** Regular stream slots; default 32. */
  readonly maxStreams?: number;
  /**
   * Total host bytes pages may take (the device's `memoryLimit`); beyond it, once every free page
   * was reclaimed, allocations throw a typed, transient `OutOfMemoryError`. Default: unlimited.
   */
  readonly capacity?: number;
  /** When free pages go back (see `DeallocPolicy`); default 5 checks, one per 200 reserves. */
  readonly dealloc?: Partial<DeallocPolicy>;
  /** Kernel keys remembered as compiled (least recently used forgotten first); default 1024. */
  readonly maxCompiledKernels?: number;
}

/** Counters of what the server did, for tests of the layers above. Only grow, except the gauges. */
export interface HostServerStats {
  /** Launches whose kernel ran (successfully or not). */
  readonly launched: number;
  /** Launches not run because an input was tainted. */
  readonly skipped: number;
  /** Launches that failed (kernel threw, injected fault, compile error). */
  readonly failed: number;
  /** Launches in `discard` mode (compiled only). */
  readonly discarded: number;
  /** Gauge: kernel keys held as compiled now (at most `maxCompiledKernels`). */
  readonly compiled: number;
  /** Kernel compilations (misses of the compiled-key cache, re-compilations after eviction included). */
  readonly compilations: number;
  /** Compiled keys forgotten to stay within `maxCompiledKernels`. */
  readonly compiledEvictions: number;
  /** Capacity of the compiled-key cache. */
  readonly compiledCapacity: number;
  /** Compiles and launches that found their key compiled. */
  readonly compiledHits: number;
  /** Launch groups that could not run as a whole and ran their fallback instead. */
  readonly fallbacks: number;
}

/** One launch recorded in an open group: run (or replaced) when the group ends. */
interface GroupLaunch {
  readonly kernel: HostKernel;
  readonly count: CubeCount;
  readonly bindings: readonly KernelBinding[];
  /** A copy of the launch's uniforms. Its bindings are pinned when recorded (`MemoryManagement.pinBinding`), so the bytes stay as they were until the group ran. */
  readonly uniforms: Uint8Array | undefined;
}

/** An open launch group (see `ComputeServer.beginGroup`). */
interface OpenGroup {
  readonly fallback: LaunchFallback;
  readonly launches: GroupLaunch[];
}

/**
 * The open launch groups by stream. Groups are opened and ended once per fused block, on fresh
 * task streams: one slot holds the usual single open group (no `Map` entry set and deleted per
 * block, which made the map rehash), further groups open at the same time go to a map.
 * **Bound.** One entry per stream with an open group (removed at its `endGroup`).
 */
class OpenGroups {
  #stream: StreamId | undefined;
  #group: OpenGroup | undefined;
  readonly #others = new Map<StreamId, OpenGroup>();

  get(stream: StreamId): OpenGroup | undefined {
    if (stream === this.#stream) return this.#group;
    return this.#others.size === 0 ? undefined : this.#others.get(stream);
  }

  /** Opens `group` on `stream` (which has none). */
  set(stream: StreamId, group: OpenGroup): void {
    if (this.#stream === undefined) {
      this.#stream = stream;
      this.#group = group;
    } else this.#others.set(stream, group);
  }

  delete(stream: StreamId): void {
    if (stream === this.#stream) {
      this.#stream = undefined;
      this.#group = undefined;
    } else this.#others.delete(stream);
  }
}

/**
 * Defaults for host memory: pages from 64 KiB growing to 4 MiB, 16-byte alignment, 2 GiB largest
 * buffer. With the default 32 stream slots, at most 32 × 4 MiB = 128 MiB of regular pages exist
 * at once however many task streams run (per-slot memory, docs/concepts.md#streampool-streammemory-and-taint), and free pages go back
 * under the dealloc policy.
 */
export const HOST_MEMORY_CONFIGURATION: MemoryConfiguration = {
  pageSize: 4 * 1024 * 1024,
  minPageSize: 64 * 1024,
  alignment: 16,
  maxAllocation: 2 ** 31,
};

/**
 * A complete, synchronous {@link ComputeServer} over host `ArrayBuffer`s: the CPU backend is built
 * on it, and `DummyServer` (`@weft/server/testing`) extends it for the tests of every layer.
 *
 * @remarks
 * **Structure.** A {@link StreamPool} of {@link HostStream}s (each with its `MemoryManagement`
 * and `ByteRangeClaims`), one {@link ErrorGraph} behind a {@link FailureStore}.
 * **Launch** (the error contract of `ComputeServer`, docs/concepts.md#streampool-streammemory-and-taint):
 * 1. `discard` → compile only; memory and claims untouched.
 * 2. Compile (`kernel.validate`, once per key); a compile error fails the launch (step 5).
 * 3. A read (`read`/`read-write`) claimed by a failure → the launch is skipped and its writes are
 *    claimed by a failure caused by that one.
 * 4. An injected fault fails the launch.
 * 5. Run `kernel.run(views, uniforms)` with every binding pinned; a throw taints exactly the write
 *    bindings (non-`ServerError`s wrapped in `LaunchError`, cause kept).
 * 6. Success → the writes' claims are released (`written`).
 * `launch` throws only for misuse (a binding that is not live, a bad count); device-side failures
 * are recorded and surface at the read of the bytes they taint.
 * **Groups** (`beginGroup`/`endGroup`): launches recorded in an open group are pinned and kept;
 * at `endGroup("submit")` the group runs as a whole when every kernel compiles, no injected fault
 * hits one of its launches and no launch reads bytes a failure claims from outside the group;
 * else none of them runs and the fallback does, outside the guard (`ReentrancyGuard.release`),
 * and the writes it could not produce are tainted with their error.
 * **Synchronous.** Every launch runs before `launch` returns, so `flush` has nothing to submit and
 * `sync` resolves at once; reads answer synchronously too (`readSync`).
 * **Re-entrancy.** A kernel calling back into the server throws `ReentrancyError` (recorded as
 * that launch's failure).
 */
export class HostComputeServer implements ComputeServer<HostKernel> {
  readonly name: string;
  readonly storage: HostStorage;
  readonly config: MemoryConfiguration;
  readonly pool: StreamPool<HostStream>;
  readonly failures: FailureStore<HostStream>;
  readonly #guard: ReentrancyGuard;
  /** Keys compiled successfully; at most `maxCompiledKernels`, least recently used forgotten first. */
  readonly #compiled: LruCache<string, true>;
  /** The device's memory: every stream's pages, the dealloc clock, reclaim across streams. */
  readonly device: DeviceMemory;
  /** Ordinals (of `#launchOrdinal`) of launches to fail; each removed when reached. */
  readonly #launchFaults = new Set<number>();
  /** Ordinals (of `#allocationOrdinal`) of allocations to fail; each removed when reached. */
  readonly #allocationFaults = new Set<number>();
  /** Kernel keys whose every launch fails; cleared by `clearFaults`. */
  readonly #kernelFaults = new Set<string>();
  /** Key patterns whose every launch fails; cleared by `clearFaults`. */
  readonly #patternFaults: RegExp[] = [];
  /** Open launch groups by stream; an entry lives from `beginGroup` to `endGroup`. */
  readonly #groups = new OpenGroups();
  #launchOrdinal = 0;
  #allocationOrdinal = 0;
  #stats = { launched: 0, skipped: 0, failed: 0, discarded: 0, fallbacks: 0 };

  constructor(options: HostComputeServerOptions = {}) {
    this.name = options.name ?? "host";
    const config = { ...HOST_MEMORY_CONFIGURATION, ...options.memory };
    // A smaller page size given alone caps the first page too.
    this.config = { ...config, minPageSize: Math.min(config.minPageSize ?? config.pageSize, config.pageSize) };
    this.storage = new HostStorage(options.capacity);
    this.device = new DeviceMemory(options.dealloc);
    this.#compiled = new LruCache(options.maxCompiledKernels ?? 1024);
    const graph = new ErrorGraph();
    this.pool = new StreamPool<HostStream>(
      { create: (slot) => new HostStream(slot, this.storage, this.config, graph, this.device) },
      options.maxStreams ?? 32,
      0,
    );
    this.failures = new FailureStore(this.pool, graph);
    this.#guard = new ReentrancyGuard(`${this.name} compute server`);
  }

  /** The error graph of every stream's failures. */
  get graph(): ErrorGraph {
    return this.failures.graph;
  }

  empty(size: number, stream: StreamId): ManagedMemoryHandle {
    // Hot calls (`empty`, `launch`, groups) enter the guard without a closure.
    this.#guard.begin();
    try {
      return this.#reserve(size, stream);
    } finally {
      this.#guard.end();
    }
  }

  create(data: Uint8Array, stream: StreamId): ManagedMemoryHandle {
    return this.#guard.enter(() => {
      const handle = this.#reserve(data.byteLength, stream);
      this.#upload(handle.binding(), data);
      return handle;
    });
  }

  write(binding: BufferBinding, data: Uint8Array, stream: StreamId): void {
    this.#guard.enter(() => {
      this.pool.getOrCreate(stream);
      this.#upload(binding, data);
    });
  }

  read(bindings: readonly BufferBinding[], stream: StreamId): Promise<Uint8Array[]> {
    try {
      return Promise.resolve(this.readSync(bindings, stream));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Copies of the bindings' bytes.
   * @throws TaintedReadError when a failure claims any byte read (naming the root cause and chain).
   */
  readSync(bindings: readonly BufferBinding[], stream: StreamId): Uint8Array[] {
    return this.#guard.enter(() => {
      this.pool.getOrCreate(stream);
      const views = bindings.map((binding) => this.#view("read", binding));
      const error = this.failures.readError(bindings);
      if (error) throw error;
      return views.map((view) => view.slice());
    });
  }

  /**
   * The {@link TaintedReadError} a read of `bindings` would throw now, or `undefined` when every
   * byte they name is clean (`FailureStore.readError`). Records nothing; a sub-range is clean when
   * no claim overlaps it, even if other bytes of its allocation are claimed.
   * @throws InvalidBindingError when a binding names memory that is not live (as `readSync`).
   */
  failureOf(bindings: readonly BufferBinding[]): TaintedReadError | undefined {
    return this.#guard.enter(() => {
      for (const binding of bindings) this.#memoryOf("failureOf", binding).resolve(binding);
      return this.failures.readError(bindings);
    });
  }

  /** Whether a failure or a check may claim some byte now (`ComputeServer.hasClaims`). */
  hasClaims(): boolean {
    return this.failures.hasClaims;
  }

  /** Whether a pending deferred check claims a byte of `bindings` (`ComputeServer.pendingOf`). */
  pendingOf(bindings: readonly BufferBinding[]): boolean {
    return this.#guard.enter(() => {
      for (const binding of bindings) this.#memoryOf("pendingOf", binding).resolve(binding);
      return this.failures.pendingOf(bindings).length > 0;
    });
  }

  compile(kernel: HostKernel): void {
    this.#guard.enter(() => this.#compile(kernel));
  }

  launch(
    kernel: HostKernel,
    count: CubeCount,
    bindings: readonly KernelBinding[],
    stream: StreamId,
    mode: LaunchMode,
    uniforms?: Uint8Array,
  ): void {
    this.#guard.begin();
    try {
      const group = mode === "execute" ? this.#groups.get(stream) : undefined;
      if (group === undefined) this.#launch(kernel, count, bindings, stream, mode, uniforms);
      else this.#record(group, kernel, count, bindings, stream, uniforms);
    } finally {
      this.#guard.end();
    }
  }

  beginGroup(stream: StreamId, fallback: LaunchFallback): void {
    this.#guard.begin();
    try {
      if (this.#groups.get(stream) !== undefined) {
        throw new LaunchError(`beginGroup: stream ${stream} already has an open launch group; end it first (groups do not nest)`);
      }
      this.pool.getOrCreate(stream);
      this.#groups.set(stream, { fallback, launches: [] });
    } finally {
      this.#guard.end();
    }
  }

  endGroup(stream: StreamId, end: GroupEnd): void {
    this.#guard.begin();
    try {
      const group = this.#groups.get(stream);
      if (group === undefined) throw new LaunchError(`endGroup: stream ${stream} has no open launch group; call beginGroup first`);
      this.#groups.delete(stream);
      try {
        this.#endGroup(group, stream, end);
      } finally {
        this.#unpinGroup(group);
      }
    } finally {
      this.#guard.end();
    }
  }

  flush(stream: StreamId): void {
    // Launches ran when recorded: nothing is waiting to be submitted.
    void stream;
  }

  sync(stream: StreamId): Promise<void> {
    void stream;
    return Promise.resolve();
  }

  memoryUsage(): MemoryUsage {
    return totalMemoryUsage(this.pool.streams(), (s) => s.memory.usage());
  }

  /**
   * One dealloc-policy check of every stream (`force = false`), or every free page given back
   * (`force = true`, what {@link HostComputeServer.releaseUnused} does).
   */
  memoryCleanup(force: boolean): void {
    if (force) this.device.releaseUnused();
    else this.device.check();
  }

  /** Gives every free page of every stream back (`weft.releaseUnused()`). */
  releaseUnused(): void {
    this.#guard.enter(() => this.device.releaseUnused());
  }

  /**
   * Pins `binding` in the memory of the stream that allocated it (a cross-stream reader's pin);
   * call the returned function once the reader's work is done.
   */
  pin(binding: BufferBinding): () => void {
    return this.#memoryOf("pin", binding).pin(binding);
  }

  /** Schedules a fault (see {@link FaultSpec}). Faults add up; `clearFaults` removes them all. */
  injectFault(spec: FaultSpec): void {
    if ("kernelKey" in spec) {
      this.#kernelFaults.add(spec.kernelKey);
      return;
    }
    if ("kernelMatching" in spec) {
      this.#patternFaults.push(spec.kernelMatching);
      return;
    }
    const n = "launch" in spec ? spec.launch : spec.allocation;
    if (!Number.isSafeInteger(n) || n < 1) {
      throw new RangeError(`injectFault: the ordinal must be a positive integer (1 = the next one), got ${n}`);
    }
    if ("launch" in spec) this.#launchFaults.add(this.#launchOrdinal + n);
    else this.#allocationFaults.add(this.#allocationOrdinal + n);
  }

  /** Removes every scheduled fault. */
  clearFaults(): void {
    this.#launchFaults.clear();
    this.#allocationFaults.clear();
    this.#kernelFaults.clear();
    this.#patternFaults.length = 0;
  }

  /** What the server did so far. */
  stats(): HostServerStats {
    const compiled = this.#compiled.stats();
    return {
      ...this.#stats,
      compiled: compiled.size,
      compilations: compiled.misses,
      compiledEvictions: compiled.evictions,
      compiledCapacity: compiled.capacity,
      compiledHits: compiled.hits,
    };
  }

  #reserve(size: number, stream: StreamId): ManagedMemoryHandle {
    const memory = this.pool.getOrCreate(stream).memory;
    const ordinal = ++this.#allocationOrdinal;
    if (this.#allocationFaults.delete(ordinal)) {
      throw new OutOfMemoryError(size, { cause: new InjectedFaultError(`allocation #${ordinal} of ${size} bytes`) });
    }
    return memory.reserve(size, stream);
  }

  #upload(binding: BufferBinding, data: Uint8Array): void {
    const view = this.#view("write", binding);
    if (data.byteLength !== binding.size) {
      throw new InvalidBindingError(
        "write",
        `${data.byteLength} bytes of data for a binding of ${binding.size} bytes; pass exactly the binding's size`,
      );
    }
    view.set(data);
    this.failures.written([binding]);
  }

  #compile(kernel: HostKernel): void {
    if (this.#compiled.get(kernel.key) !== undefined) return;
    try {
      kernel.validate?.();
    } catch (error) {
      if (error instanceof ServerError) throw error;
      throw new ValidationError(`kernel "${kernelName(kernel)}" failed to compile: ${describeError(error)}`, { cause: error });
    }
    this.#compiled.set(kernel.key, true);
  }

  #launch(
    kernel: HostKernel,
    count: CubeCount,
    bindings: readonly KernelBinding[],
    stream: StreamId,
    mode: LaunchMode,
    uniforms: Uint8Array | undefined,
  ): void {
    checkCount(kernel, count);
    this.pool.getOrCreate(stream);
    // Misuse is thrown before anything is recorded: every binding must name live bytes.
    for (let i = 0; i < bindings.length; i++) {
      const binding = (bindings[i] as KernelBinding).binding;
      this.#memoryOf("launch", binding).check(binding);
    }
    // The writes list is built only where a failure path or a live claim needs it (the common
    // launch allocates nothing but its views array and views).
    if (mode === "discard") {
      this.#stats.discarded++;
      this.#compile(kernel);
      return;
    }
    if (count[0] * count[1] * count[2] === 0) return;
    try {
      this.#compile(kernel);
    } catch (error) {
      this.#fail(error as ServerError, launchWrites(bindings));
      return;
    }
    // While no failure is live (the common case) no read can be claimed: no list of reads.
    const readFailure = this.failures.hasClaims ? this.failures.checkReads(launchReads(bindings)) : undefined;
    if (readFailure) {
      this.#stats.skipped++;
      this.failures.skipLaunch(readFailure, launchWrites(bindings), `kernel "${kernelName(kernel)}"`);
      return;
    }
    const ordinal = ++this.#launchOrdinal;
    if (this.#launchFaults.size > 0 && this.#launchFaults.delete(ordinal)) {
      this.#fail(new InjectedFaultError(`launch #${ordinal} (kernel "${kernelName(kernel)}")`), launchWrites(bindings));
      return;
    }
    const keyFault = this.#keyFault(kernel);
    if (keyFault !== undefined) {
      this.#fail(keyFault, launchWrites(bindings));
      return;
    }
    // Pinned while the kernel runs; `pinBinding`/`unpinBinding` pair per binding (no closure each).
    const views = new Array<Uint8Array>(bindings.length);
    for (let i = 0; i < bindings.length; i++) {
      const binding = (bindings[i] as KernelBinding).binding;
      const memory = this.#memoryOf("launch", binding);
      memory.pinBinding(binding);
      views[i] = memory.resolveWith(binding, byteView);
    }
    this.#stats.launched++;
    try {
      kernel.run(views, uniforms);
    } catch (error) {
      this.#fail(
        error instanceof ServerError
          ? error
          : new LaunchError(`kernel "${kernelName(kernel)}" failed: ${describeError(error)}`, { cause: error }),
        launchWrites(bindings),
      );
      return;
    } finally {
      for (let i = 0; i < bindings.length; i++) {
        const binding = (bindings[i] as KernelBinding).binding;
        this.#memoryOf("launch", binding).unpinBinding(binding);
      }
    }
    if (this.failures.hasClaims) this.failures.written(launchWrites(bindings));
  }

  /** The injected fault every launch of `kernel` fails with (`kernelKey`/`kernelMatching`), if any. */
  #keyFault(kernel: HostKernel): InjectedFaultError | undefined {
    // No closure per launch: with no fault injected (the common case) this is two size checks.
    let hit = this.#kernelFaults.size > 0 && this.#kernelFaults.has(kernel.key);
    for (let i = 0; !hit && i < this.#patternFaults.length; i++) {
      const p = this.#patternFaults[i] as RegExp;
      hit = p.test(kernel.key) || p.test(kernel.label ?? "");
    }
    return hit ? new InjectedFaultError(`every launch of kernel "${kernelName(kernel)}"`) : undefined;
  }

  /** Checks a launch for misuse and keeps it, pinned, in `group` (see `endGroup`). */
  #record(group: OpenGroup, kernel: HostKernel, count: CubeCount, bindings: readonly KernelBinding[], stream: StreamId, uniforms: Uint8Array | undefined): void {
    checkCount(kernel, count);
    this.pool.getOrCreate(stream);
    for (let i = 0; i < bindings.length; i++) {
      const binding = (bindings[i] as KernelBinding).binding;
      this.#memoryOf("launch", binding).check(binding);
    }
    // Every binding pinned here is unpinned once by `endGroup` (`#unpinGroup`).
    for (let i = 0; i < bindings.length; i++) {
      const binding = (bindings[i] as KernelBinding).binding;
      this.#memoryOf("launch", binding).pinBinding(binding);
    }
    group.launches.push({ kernel, count, bindings, uniforms: uniforms?.slice() });
  }

  /** Takes back the pins `#record` took for every launch of `group`. */
  #unpinGroup(group: OpenGroup): void {
    for (const l of group.launches) {
      for (let i = 0; i < l.bindings.length; i++) {
        const binding = (l.bindings[i] as KernelBinding).binding;
        this.#memoryOf("launch", binding).unpinBinding(binding);
      }
    }
  }

  /** Runs a submitted group as a whole, or its fallback (see the type doc); drops an aborted one. */
  #endGroup(group: OpenGroup, stream: StreamId, end: GroupEnd): void {
    switch (end) {
      case "abort":
        group.fallback.discard();
        return;
      case "submit":
        break;
      default:
        return end satisfies never;
    }
    const failure = this.#groupFailure(group);
    if (failure === undefined) {
      group.fallback.discard();
      for (const l of group.launches) this.#launch(l.kernel, l.count, l.bindings, stream, "execute", l.uniforms);
      return;
    }
    this.#stats.fallbacks++;
    let gaps: ReturnType<LaunchFallback["run"]>;
    try {
      gaps = this.#guard.release(() => group.fallback.run(failure));
    } catch (error) {
      // A fallback that throws leaves its writes unproduced: every write of the group fails.
      const cause = error instanceof ServerError ? error : new LaunchError(`a launch group's fallback failed: ${describeError(error)}`, { cause: error });
      gaps = group.launches.flatMap((l) => l.bindings.filter((b) => b.access !== "read").map((b) => ({ binding: b.binding, error: cause })));
    }
    for (const gap of gaps) this.#fail(gap.error, [gap.binding]);
  }

  /**
   * Why `group` cannot run as a whole, or `undefined` when it can: a kernel that does not compile,
   * an injected fault on one of its launches (consumed), or a read, from outside the group, of
   * bytes a failure claims.
   */
  #groupFailure(group: OpenGroup): ServerError | undefined {
    // Allocations the group's earlier launches write; only needed while some failure is live.
    const writtenInGroup = this.failures.hasClaims ? new Set<number>() : undefined;
    let ordinal = this.#launchOrdinal;
    for (const l of group.launches) {
      try {
        this.#compile(l.kernel);
      } catch (error) {
        return error as ServerError;
      }
      if (writtenInGroup !== undefined) {
        const external = l.bindings.filter((b) => b.access !== "write" && !writtenInGroup.has(b.binding.allocation)).map((b) => b.binding);
        const readFailure = this.failures.checkReads(external);
        if (readFailure !== undefined) return readFailure.error;
      }
      if (l.count[0] * l.count[1] * l.count[2] > 0) {
        ordinal++;
        if (this.#launchFaults.delete(ordinal)) return new InjectedFaultError(`launch #${ordinal} (kernel "${kernelName(l.kernel)}")`);
        const keyFault = this.#keyFault(l.kernel);
        if (keyFault !== undefined) return keyFault;
      }
      if (writtenInGroup !== undefined) for (const b of l.bindings) if (b.access !== "read") writtenInGroup.add(b.binding.allocation);
    }
    return undefined;
  }

  #fail(error: ServerError, writes: readonly BufferBinding[]): void {
    this.#stats.failed++;
    this.failures.failLaunch(error, writes);
  }

  #memoryOf(op: string, binding: BufferBinding): MemoryManagement<ArrayBuffer> {
    const owner = this.pool.tryGet(binding.stream);
    if (!owner) {
      throw new InvalidBindingError(op, `binding names stream ${binding.stream}, which never allocated memory here`);
    }
    return owner.memory;
  }

  #view(op: string, binding: BufferBinding): Uint8Array {
    return this.#memoryOf(op, binding).resolveWith(binding, byteView);
  }
}

/** A byte view of `size` bytes at `offset` of `buffer` (`MemoryManagement.resolveWith`'s maker). */
function byteView(buffer: ArrayBuffer, offset: number, size: number): Uint8Array {
  return new Uint8Array(buffer, offset, size);
}

/** Throws the misuse error of a launch whose `count` is not three non-negative integers. */
function checkCount(kernel: HostKernel, count: CubeCount): void {
  let valid = count.length === 3;
  for (let i = 0; valid && i < 3; i++) valid = Number.isSafeInteger(count[i]) && (count[i] as number) >= 0;
  if (!valid) throw new LaunchError(`launch of "${kernelName(kernel)}": count must be three non-negative integers, got [${count.join(", ")}]`);
}

