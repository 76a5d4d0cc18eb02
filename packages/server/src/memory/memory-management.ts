import { IdMap, type StreamId, invariant } from "@weft/environment";
import type { AllocationId, BufferBinding } from "../binding.js";
import type { MemoryUsage } from "../compute-server.js";
import { BufferTooBigError, InvalidBindingError, OutOfMemoryError } from "../errors/server-error.js";
import type { ComputeStorage } from "./compute-storage.js";
import { type AllocationState, type HandleOwner, ManagedMemoryHandle, countOnce } from "./managed-memory-handle.js";
import { DeviceMemory } from "./device-memory.js";
import { type MemoryConfiguration, checkMemoryConfiguration, minPageSizeOf } from "./memory-configuration.js";

/** Process-wide allocation counter: ids are never reused, across every manager. */
let nextAllocation = 1;

/** A contiguous range of a page: free (`allocation` undefined) or held by one allocation. */
class Slice {
  constructor(
    public offset: number,
    public size: number,
    public allocation: AllocationState | undefined,
    /** The slices before and after this one in its page (address order), so freeing merges in O(1). */
    public prev: Slice | undefined,
    public next: Slice | undefined,
  ) {}
}

/**
 * One storage resource, split into slices that tile it exactly: a doubly linked list in address
 * order, plus the free ones in an array sorted by offset.
 *
 * @remarks
 * **Why two views.** First fit needs the free slices in address order; freeing needs a slice's
 * neighbours. Walking every slice (live ones included) for either made each reserve and free cost
 * O(live allocations), quadratic in a program that keeps 10,000 small tensors alive.
 */
interface Page<R> {
  readonly resource: R;
  readonly size: number;
  /** A page made for one allocation larger than `pageSize`. */
  readonly dedicated: boolean;
  /** The slice at offset 0. */
  first: Slice;
  /** The free slices, sorted by offset (never two adjacent: freeing merges them). */
  readonly free: Slice[];
  /** How many slices tile the page. */
  sliceCount: number;
  /**
   * The dealloc policy's count (`DeallocPolicy`): checks that found the page free since it last
   * served a reserve, minus reserves it served; given back when it reaches `policy.checks`.
   */
  freeChecks: number;
  /**
   * Created since this stream's last idle check: that check skips it once, so a loop that frees
   * everything at each step keeps the page it allocated instead of re-creating it every step.
   */
  fresh: boolean;
}

/**
 * A live allocation: its handle's counts (`AllocationState`, shared with its
 * `ManagedMemoryHandle`) and where its bytes are, in one object (one per allocation, not a state
 * and an entry). A freed one keeps its last slice and page until its handle is collected.
 */
/**
 * An allocation's state and its live entry, one object. Built with `new`, as the slices are: an
 * object literal per reserve would be allocated old for good once a phase kept thousands alive
 * (docs/performance.md#allocation-sites).
 */
class LiveAllocation<R> implements AllocationState {
  handleRefs = 1;
  bindingRefs = 0;
  holds = 0;
  freed = false;
  constructor(
    readonly id: AllocationId,
    readonly size: number,
    readonly stream: StreamId,
    readonly slice: Slice,
    readonly page: Page<R>,
  ) {}
}

/** Where a binding's bytes live in storage. */
export interface ResolvedBinding<R> {
  readonly resource: R;
  /** Byte offset of the binding's first byte in `resource`. */
  readonly offset: number;
  readonly size: number;
}

class Resolved<R> implements ResolvedBinding<R> {
  constructor(
    readonly resource: R,
    readonly offset: number,
    readonly size: number,
  ) {}
}

/** Optional hooks of a {@link MemoryManagement}. */
export interface MemoryManagementOptions {
  /**
   * Called once when an allocation's slice goes back to its page (no handle, no pin left), e.g.
   * so the stream drops the allocation's taint claims.
   */
  readonly onFree?: (allocation: AllocationId) => void;
  /**
   * The device's memory, shared by every stream of a server: the dealloc clock and reclaiming
   * across streams (default: a private one, for a manager used alone).
   */
  readonly device?: DeviceMemory;
}

/**
 * One stream's memory: pages from a {@link ComputeStorage}, split into first-fit slices, handed
 * out as {@link ManagedMemoryHandle}s with explicit counts (CubeCL's `MemoryManagement` with a
 * sliced pool and an exclusive pool for large buffers).
 *
 * @remarks
 * **Reserve.** Sizes are rounded up to `alignment`. Up to `pageSize`: the first free slice that
 * fits, in page order, split (the remainder stays free); else a new page *sized to the work*: the
 * next power of two at least as large as the request and as the regular pages held so far, from
 * `minPageSize` up to `pageSize`. Larger: a free dedicated page of at most twice the size, else a
 * new dedicated page. Over `maxAllocation`: `BufferTooBigError`. When storage throws
 * `OutOfMemoryError` (a device, or a `memoryLimit`, refused), every fully free page of *every*
 * stream of the device is given back (`DeviceMemory.releaseUnused`) and the allocation retried
 * once; a second failure is rethrown, typed and transient.
 * **Give back** (CubeCL's dealloc policy, `DeallocPolicy`): a fully free page goes back to
 * storage once checks found it free `policy.checks` times without a reserve on it in between.
 * Checks run every `policy.period` reserves of the device, and on this stream whenever its last
 * live allocation is freed (the stream went idle); an idle check skips pages created since the
 * stream's previous one, so a loop that allocates and frees everything at each step keeps its
 * pages warm, while a finished task's pages go at the next check. `cleanup(true)` gives back
 * every free page.
 * **Reuse.** A slice is reused only when no handle reference *and* no pin (binding ref) remains.
 * Pins cover in-flight launches and cross-stream readers: a binding read by another stream stays
 * pinned until that stream's work is done, and the backend calls `unpin` then (docs/pitfalls.md#p14).
 * **Free.** A freed slice merges with free neighbours, so a page's slices always tile it.
 * **Bounded.** `#live` holds exactly the allocations with a reference or a pin; pages only grow on
 * a reserve nothing free could serve, and every fully free page is given back within
 * `policy.checks` checks unless reserves keep using it.
 */
export class MemoryManagement<R> implements HandleOwner {
  /** Pages in allocation order; removed only by `cleanup`. */
  readonly #pages: Page<R>[] = [];
  /** Live allocations (a reference or a pin) and their slices. Removed when freed. */
  readonly #live = new IdMap<LiveAllocation<R>>();
  /** The page `#findFree` or `#newPage` just chose: `reserve`'s scratch (an answer object per reserve would be a literal). */
  #chosen: Page<R> | undefined;
  readonly #onFree: ((allocation: AllocationId) => void) | undefined;
  readonly #minPageSize: number;
  /** Set by `dispose`: every page is given back as soon as it is free. */
  #disposed = false;
  /** Detaches this manager from the device's memory. */
  readonly #detach: () => void;
  /** The device's memory this stream's pages belong to. */
  readonly device: DeviceMemory;

  constructor(
    readonly storage: ComputeStorage<R>,
    readonly config: MemoryConfiguration,
    /** The stream whose memory this is; the default stamp on handles and bindings. */
    readonly stream: StreamId,
    options: MemoryManagementOptions = {},
  ) {
    checkMemoryConfiguration(config);
    this.#onFree = options.onFree;
    this.#minPageSize = minPageSizeOf(config);
    this.device = options.device ?? new DeviceMemory();
    this.#detach = this.device.attach(this);
  }

  /**
   * Gives every free page back and leaves the device's memory (a destroyed stream or server);
   * pages still holding live allocations go back as soon as their last allocation is freed.
   */
  dispose(): void {
    this.#disposed = true;
    this.cleanup(true);
    this.#detach();
  }

  /**
   * Reserves `size` bytes. The handle starts with one reference; its bindings name `stream`
   * (default: this manager's stream — pass the caller's id when several ids share a pool slot).
   */
  reserve(size: number, stream: StreamId = this.stream): ManagedMemoryHandle {
    if (!Number.isSafeInteger(size) || size < 0) {
      throw new RangeError(`MemoryManagement.reserve: size must be a non-negative integer, got ${size}`);
    }
    if (size > this.config.maxAllocation) throw new BufferTooBigError(size, this.config.maxAllocation);
    const sliceSize = Math.max(this.#align(size), this.config.alignment);
    let index = this.#findFree(sliceSize);
    const created = index < 0;
    if (created) index = this.#newPage(sliceSize);
    const page = this.#chosen as Page<R>;
    this.#chosen = undefined;
    const free = page.free[index];
    invariant(free && free.allocation === undefined && free.size >= sliceSize, "reserve: chosen slice is free and fits");
    let slice = free;
    if (free.size > sliceSize) {
      // A new slice for the allocation, before the free one, which keeps its object and its place
      // among the free ones (it only moves up): the new object dies with the allocation, young,
      // while the free remainder lives on — the other way round, every reserve left a fresh free
      // slice that outlived scavenges and was promoted (docs/performance.md#what-a-request-leaves-behind).
      slice = new Slice(free.offset, sliceSize, undefined, free.prev, free);
      if (free.prev) free.prev.next = slice;
      else page.first = slice;
      free.prev = slice;
      free.offset += sliceSize;
      free.size -= sliceSize;
      page.sliceCount++;
    } else {
      page.free.splice(index, 1);
    }
    // The handle's state and the live entry are one object (where its bytes are, and its counts).
    const state = new LiveAllocation<R>(nextAllocation++ as AllocationId, size, stream, slice, page);
    slice.allocation = state;
    this.#live.set(state.id, state);
    if (!created) page.freeChecks = Math.max(0, page.freeChecks - 1);
    const handle = new ManagedMemoryHandle(state, this);
    // After the slice is taken: a check run now cannot give its page back.
    this.device.reserved();
    return handle;
  }

  /** Where `binding`'s bytes live. Throws {@link InvalidBindingError} when they are not live here. */
  resolve(binding: BufferBinding): ResolvedBinding<R> {
    const live = this.#entry("resolve", binding);
    return new Resolved(live.page.resource, live.slice.offset + binding.offset, binding.size);
  }

  /**
   * `resolve` without building its answer: throws {@link InvalidBindingError} when `binding`'s
   * bytes are not live here (a launch's misuse check, once per binding).
   */
  check(binding: BufferBinding): void {
    this.#entry("resolve", binding);
  }

  /**
   * `make(resource, offset, size)` of `binding`'s bytes (what `resolve` answers, passed as
   * arguments: a host launch builds its views from them without an intermediate object).
   */
  resolveWith<V>(binding: BufferBinding, make: (resource: R, offset: number, size: number) => V): V {
    const live = this.#entry("resolve", binding);
    return make(live.page.resource, live.slice.offset + binding.offset, binding.size);
  }

  /**
   * {@link MemoryManagement.pin} without the closure, for a caller that pairs the calls itself (a
   * host launch, a launch group): every `pinBinding` must be matched by exactly one
   * {@link MemoryManagement.unpinBinding} of the same allocation.
   */
  pinBinding(binding: BufferBinding): void {
    this.#entry("pin", binding).bindingRefs++;
  }

  /** Takes back one {@link MemoryManagement.pinBinding} of `binding`'s allocation (see there). */
  unpinBinding(binding: BufferBinding): void {
    const state = this.#live.get(binding.allocation);
    invariant(state !== undefined && state.bindingRefs > 0, "MemoryManagement.unpinBinding: the allocation is not pinned");
    state.bindingRefs--;
    if (state.bindingRefs === 0) this.maybeFree(state);
  }

  /** Whether `allocation` is live (a reference or a pin) in this manager. */
  isLive(allocation: AllocationId): boolean {
    return this.#live.has(allocation);
  }

  /**
   * Pins `binding`'s allocation (a binding ref) until the returned function is called: its slice is
   * not reused even after its last handle is released. Call `unpin` exactly once.
   */
  pin(binding: BufferBinding): () => void {
    return countOnce(this.#entry("pin", binding), "bindingRefs", "unpin (called twice)", this);
  }

  /** Frees `state`'s slice when no reference and no pin remain. @internal */
  maybeFree(state: AllocationState): void {
    if (state.handleRefs > 0 || state.bindingRefs > 0 || state.holds > 0 || state.freed) return;
    const live = this.#live.get(state.id);
    invariant(live, () => `MemoryManagement: allocation ${state.id} freed twice`);
    state.freed = true;
    this.#live.delete(state.id);
    const page = live.page;
    const slice = live.slice;
    slice.allocation = undefined;
    const prev = slice.prev?.allocation === undefined ? slice.prev : undefined;
    const next = slice.next?.allocation === undefined ? slice.next : undefined;
    if (prev) {
      // `prev` absorbs the slice (and `next`, which then leaves the free list).
      prev.size += slice.size;
      unlink(slice);
      page.sliceCount--;
      if (next) {
        prev.size += next.size;
        unlink(next);
        page.sliceCount--;
        page.free.splice(freeIndex(page.free, next), 1);
      }
    } else if (next) {
      // `next` absorbs the slice and keeps its place among the free ones (it only moves down: no
      // free slice lies between them). The freed slice's object dies young (see `reserve`).
      next.offset = slice.offset;
      next.size += slice.size;
      unlink(slice);
      if (page.first === slice) page.first = next;
      page.sliceCount--;
    } else {
      page.free.splice(insertionIndex(page.free, slice.offset), 0, slice);
    }
    this.#onFree?.(state.id);
    // The stream went idle: one policy check of its pages (see the type doc).
    if (this.#disposed) this.cleanup(true);
    else if (this.#live.size === 0) this.#check(false, true);
  }

  /**
   * `force`: gives every fully free page back to storage. Else one check of the dealloc policy:
   * each fully free page gains a free check and is given back once it has `policy.checks`.
   */
  cleanup(force: boolean): void {
    this.#check(force, false);
  }

  /** See {@link MemoryManagement.cleanup}; an `idle` check skips (and un-marks) fresh pages. */
  #check(force: boolean, idle: boolean): void {
    const checks = this.device.policy.checks;
    let released = 0;
    for (let i = this.#pages.length - 1; i >= 0; i--) {
      const page = this.#pages[i] as Page<R>;
      const fresh = page.fresh;
      if (idle) page.fresh = false;
      const free = page.sliceCount === 1 && page.first.allocation === undefined;
      if (!free) continue;
      if (!force && (idle && fresh ? page.freeChecks : ++page.freeChecks) < checks) continue;
      this.#pages.splice(i, 1);
      this.storage.dealloc(page.resource);
      released++;
    }
    if (released > 0) this.device.released(released);
  }

  /** The memory report of this manager. `bytesInUse` counts requested sizes of live allocations. */
  usage(): MemoryUsage {
    let bytesInUse = 0;
    this.#live.forEach((state) => {
      bytesInUse += state.size;
    });
    let bytesReserved = 0;
    let slices = 0;
    for (const page of this.#pages) {
      bytesReserved += page.size;
      slices += page.sliceCount;
    }
    return {
      bytesInUse,
      bytesReserved,
      pages: this.#pages.length,
      slices,
      liveAllocations: this.#live.size,
      streams: this.#pages.length > 0 ? 1 : 0,
    };
  }

  #align(size: number): number {
    const a = this.config.alignment;
    return Math.ceil(size / a) * a;
  }

  /** The index of a free slice of at least `sliceSize` bytes in the page it leaves in `#chosen`, or −1. */
  #findFree(sliceSize: number): number {
    const dedicated = sliceSize > this.config.pageSize;
    for (const page of this.#pages) {
      if (page.dedicated !== dedicated) continue;
      if (dedicated && (page.size < sliceSize || page.size > 2 * sliceSize)) continue;
      const free = page.free;
      for (let index = 0; index < free.length; index++) {
        if ((free[index] as Slice).size < sliceSize) continue;
        this.#chosen = page;
        return index;
      }
    }
    return -1;
  }

  /** The size of a new regular page for a slice of `sliceSize` (see the type doc). */
  #regularPageSize(sliceSize: number): number {
    let held = 0;
    for (const page of this.#pages) if (!page.dedicated) held += page.size;
    const wanted = Math.max(sliceSize, held, this.#minPageSize);
    let size = this.#minPageSize;
    while (size < wanted && size < this.config.pageSize) size *= 2;
    return Math.min(this.#align(size), this.config.pageSize);
  }

  /** Adds a page for a slice of `sliceSize` bytes, leaves it in `#chosen`; the index of its one free slice (0). */
  #newPage(sliceSize: number): number {
    const dedicated = sliceSize > this.config.pageSize;
    const size = dedicated ? sliceSize : this.#regularPageSize(sliceSize);
    let resource: R;
    try {
      resource = this.storage.alloc(size);
    } catch (error) {
      if (!(error instanceof OutOfMemoryError)) throw error;
      // Free pages of every stream of the device, then one retry; a second refusal is the answer.
      this.device.releaseUnused();
      resource = this.storage.alloc(size);
    }
    const first = new Slice(0, size, undefined, undefined, undefined);
    const page: Page<R> = {
      resource,
      size,
      dedicated,
      first,
      free: [first],
      sliceCount: 1,
      freeChecks: this.device.policy.checks - 1,
      fresh: true,
    };
    this.#pages.push(page);
    this.#chosen = page;
    return 0;
  }

  #entry(op: string, binding: BufferBinding): LiveAllocation<R> {
    const live = this.#live.get(binding.allocation);
    if (!live) {
      throw new InvalidBindingError(
        `MemoryManagement.${op}`,
        `allocation ${binding.allocation} is not live in stream ${this.stream}'s memory (it was freed, or another ` +
          "stream allocated it); keep a handle on memory while it is used",
      );
    }
    const { offset, size } = binding;
    if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(size) || offset < 0 || size < 0 || offset + size > live.size) {
      throw new InvalidBindingError(
        `MemoryManagement.${op}`,
        `bytes [${offset}, ${offset + size}) are outside allocation ${binding.allocation} of ${live.size} bytes`,
      );
    }
    return live;
  }
}

/**
 * Removes `slice` from its page's linked list (its neighbours point past it) and clears its own
 * links. Why clear them: the removed slice object stays reachable from its allocation's state as
 * long as a handle does, and it may already sit in V8's old generation; links left in it would be
 * old-to-young pointers into the page's current slices, which every young collection treats as
 * roots, so dead slices would keep newer ones alive into the old generation until a full
 * collection (the hazard of docs/performance.md#pending-reads; this one was not measurable alone).
 */
function unlink(slice: Slice): void {
  if (slice.prev) slice.prev.next = slice.next;
  if (slice.next) slice.next.prev = slice.prev;
  slice.prev = undefined;
  slice.next = undefined;
}

/** The index of `slice` in the offset-sorted `free` (binary search). */
function freeIndex(free: readonly Slice[], slice: Slice): number {
  const at = insertionIndex(free, slice.offset);
  invariant(free[at] === slice, "MemoryManagement: a free slice is in its page's free list");
  return at;
}

/** The first index of `free` whose offset is not below `offset`. */
function insertionIndex(free: readonly Slice[], offset: number): number {
  let lo = 0;
  let hi = free.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((free[mid] as Slice).offset < offset) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
