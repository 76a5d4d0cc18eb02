import { StreamId } from "@weft/environment";
import { describe, expect, it } from "vitest";
import type { AllocationId } from "../binding.js";
import { BufferTooBigError, InvalidBindingError, OutOfMemoryError, ReleasedHandleError } from "../errors/server-error.js";
import type { ComputeStorage } from "./compute-storage.js";
import { DeviceMemory } from "./device-memory.js";
import { MemoryManagement } from "./memory-management.js";

/** Storage handing out numbered resources, with a byte capacity. */
class FakeStorage implements ComputeStorage<{ id: number; size: number }> {
  next = 0;
  held = 0;
  deallocs = 0;
  /** Sizes of every alloc, in order. */
  readonly sizes: number[] = [];
  constructor(public capacity = Number.POSITIVE_INFINITY) {}
  alloc(size: number) {
    if (this.held + size > this.capacity) throw new OutOfMemoryError(size);
    this.held += size;
    this.sizes.push(size);
    return { id: this.next++, size };
  }
  dealloc(resource: { size: number }) {
    this.held -= resource.size;
    this.deallocs++;
  }
}

function setup(capacity?: number, onFree?: (a: AllocationId) => void) {
  const storage = new FakeStorage(capacity);
  const memory = new MemoryManagement(storage, { pageSize: 256, alignment: 16, maxAllocation: 4096 }, StreamId.of(0), onFree ? { onFree } : {});
  return { storage, memory };
}

describe("MemoryManagement", () => {
  it("splits pages into first-fit aligned slices", () => {
    const { memory } = setup();
    const a = memory.reserve(10);
    const b = memory.reserve(20);
    const ra = memory.resolve(a.binding());
    const rb = memory.resolve(b.binding());
    expect(ra.resource, "both fit one page").toBe(rb.resource);
    expect(ra.offset).toBe(0);
    expect(rb.offset, "slices start at multiples of the alignment").toBe(16);
    expect(memory.usage()).toEqual({ bytesInUse: 30, bytesReserved: 256, pages: 1, slices: 3, liveAllocations: 2, streams: 1 });
  });

  it("a slice is reused only when no handle and no binding refers to it", () => {
    const { memory } = setup();
    const a = memory.reserve(64);
    const offset = memory.resolve(a.binding()).offset;
    const unpin = memory.pin(a.binding());
    a.release();
    const b = memory.reserve(64);
    expect(memory.resolve(b.binding()).offset, "handle released but binding pinned → not reused").not.toBe(offset);
    unpin();
    const c = memory.reserve(64);
    expect(memory.resolve(c.binding()).offset, "both gone → the slice is reused").toBe(offset);
  });

  it("a cross-stream pin keeps memory after the owner released it, until the reader unpins", () => {
    const freed: AllocationId[] = [];
    const { memory } = setup(undefined, (a) => freed.push(a));
    const h = memory.reserve(32);
    const readerPin = memory.pin(h.binding(0, 16));
    h.release();
    expect(memory.isLive(h.allocation), "the reader's work may still read it").toBe(true);
    expect(memory.resolve({ allocation: h.allocation, offset: 0, size: 16, stream: h.stream }).size).toBe(16);
    readerPin();
    expect(freed, "freed exactly once, when the last pin went").toEqual([h.allocation]);
    expect(() => readerPin(), "unpinning twice is refused").toThrow(ReleasedHandleError);
  });

  it("pinBinding/unpinBinding pin like pin(): the slice stays until the last unpin, then is freed once", () => {
    const freed: AllocationId[] = [];
    const { memory } = setup(undefined, (a) => freed.push(a));
    const h = memory.reserve(32);
    const binding = h.binding();
    memory.pinBinding(binding);
    memory.pinBinding(binding);
    h.release();
    expect(memory.isLive(h.allocation), "two pins keep it").toBe(true);
    memory.unpinBinding(binding);
    expect(freed, "one pin left").toEqual([]);
    expect(memory.resolveWith(binding, (_r, offset, size) => [offset, size])).toEqual([0, 32]);
    memory.unpinBinding(binding);
    expect(freed, "freed exactly once, when the last pin went").toEqual([h.allocation]);
    expect(() => memory.unpinBinding(binding), "an unpin without a pin is a bug").toThrow(/not pinned/);
    expect(() => memory.check(binding), "a freed binding is refused").toThrow(InvalidBindingError);
  });

  it("canMut is true exactly when one handle reference exists; pins do not count", () => {
    const { memory } = setup();
    const h = memory.reserve(16);
    expect(h.canMut()).toBe(true);
    h.retain();
    expect(h.canMut(), "a shared handle is never written in place").toBe(false);
    h.release();
    const unpin = memory.pin(h.binding());
    expect(h.canMut(), "a binding keeps the slice, not ownership").toBe(true);
    unpin();
  });

  it("a hold keeps the handle usable and the slice alive without counting for canMut", () => {
    const freed: AllocationId[] = [];
    const { memory } = setup(undefined, (a) => freed.push(a));
    const h = memory.reserve(16);
    const unhold = h.hold();
    expect(h.canMut(), "a launch group's fallback does not take in-place writes away").toBe(true);
    h.release();
    expect(freed, "held: not freed with its last reference").toEqual([]);
    expect(h.binding().allocation, "a held handle still binds").toBe(h.allocation);
    h.retain(); // the fallback runs: the hold becomes a reference
    unhold();
    expect(freed).toEqual([]);
    h.release();
    expect(freed, "freed once the reference and the hold are gone").toEqual([h.allocation]);
    expect(() => unhold(), "releasing a hold twice is refused").toThrow(ReleasedHandleError);
  });

  it("use after the final release and double release throw clear errors", () => {
    const { memory } = setup();
    const h = memory.reserve(16);
    h.release();
    expect(() => h.release(), "double release").toThrow(ReleasedHandleError);
    expect(() => h.binding(), "binding after release").toThrow(/already released/);
    expect(() => h.canMut()).toThrow(ReleasedHandleError);
    expect(() => h.retain()).toThrow(ReleasedHandleError);
  });

  it("bindings outside the allocation are refused", () => {
    const { memory } = setup();
    const h = memory.reserve(16);
    expect(() => h.binding(8, 16)).toThrow(InvalidBindingError);
    expect(() => memory.resolve({ ...h.binding(), size: 17 })).toThrow(InvalidBindingError);
    expect(() => memory.resolve({ ...h.binding(), allocation: 999_999 as AllocationId })).toThrow(/not live/);
  });

  it("allocations larger than pageSize get a dedicated page; cleanup(true) gives back every free page", () => {
    const { memory, storage } = setup();
    const small = memory.reserve(16);
    const big = memory.reserve(1000);
    expect(memory.usage().pages).toBe(2);
    expect(memory.usage().bytesReserved, "a dedicated page has the aligned size").toBe(256 + 1008);
    big.release();
    small.release(); // the stream is idle now: one check, which spares pages created since the last
    expect(memory.usage().pages, "fresh pages survive the first idle check").toBe(2);
    memory.cleanup(false);
    expect(memory.usage().pages, "a page used once is given back at the next check that finds it free").toBe(0);
    memory.reserve(16).release();
    memory.cleanup(true);
    expect(storage.held, "cleanup(true) gives back every free page").toBe(0);
  });

  it("cleanup keeps pages that still hold a live slice", () => {
    const { memory } = setup();
    const a = memory.reserve(16);
    memory.cleanup(true);
    expect(memory.usage().pages).toBe(1);
    a.release();
  });

  it("freed neighbours coalesce so a large slice fits again", () => {
    const { memory } = setup();
    const hs = [0, 1, 2, 3].map(() => memory.reserve(64));
    for (const h of hs) h.release();
    expect(memory.usage().slices, "four freed slices merge into one").toBe(1);
    const whole = memory.reserve(256);
    expect(memory.usage().pages, "the merged page serves a page-sized slice").toBe(1);
    whole.release();
  });

  it("maxAllocation → BufferTooBigError", () => {
    const { memory } = setup();
    expect(() => memory.reserve(4097)).toThrow(BufferTooBigError);
  });

  it("OutOfMemoryError from storage → cleanup(true) and retry once, then rethrow", () => {
    const { memory, storage } = setup(512);
    const a = memory.reserve(200);
    const b = memory.reserve(200); // a second regular page: storage is full
    b.release(); // …and that page is fully free
    expect(() => memory.reserve(1000), "a 1008-byte page does not fit even after the reclaim").toThrow(OutOfMemoryError);
    expect(storage.deallocs, "the retry reclaimed the fully free page first").toBe(1);
    expect(memory.usage().pages, "the live page was kept").toBe(1);
    a.release();
  });

  it("the retry after a reclaim succeeds when the freed page was what stood in the way", () => {
    const { memory, storage } = setup(600);
    const a = memory.reserve(200);
    const b = memory.reserve(200);
    b.release();
    // 512 bytes held; a 304-byte dedicated page fits only once the free page is given back.
    const c = memory.reserve(300);
    expect(storage.deallocs, "the free page was given back to make room").toBe(1);
    expect(memory.usage().pages).toBe(2);
    expect(storage.held).toBe(256 + 304);
    a.release();
    c.release();
  });

  it("pages are sized to the work: small first, doubling up to pageSize", () => {
    const storage = new FakeStorage();
    const memory = new MemoryManagement(storage, { pageSize: 4096, minPageSize: 256, alignment: 16, maxAllocation: 1 << 20 }, StreamId.of(0));
    const held = [memory.reserve(12)];
    expect(memory.usage().bytesReserved, "12 bytes in use reserve one minimum page").toBe(256);
    for (let i = 0; i < 30; i++) held.push(memory.reserve(200));
    const sizes = storage.sizes;
    expect(sizes.slice(0, 6), "each new page doubles what the stream holds").toEqual([256, 256, 512, 1024, 2048, 4096]);
    expect(Math.max(...sizes), "never beyond pageSize").toBe(4096);
    for (const h of held) h.release();
  });

  it("a regular slice larger than the current pages gets a page that fits it, not a dedicated one", () => {
    const storage = new FakeStorage();
    const memory = new MemoryManagement(storage, { pageSize: 4096, minPageSize: 256, alignment: 16, maxAllocation: 1 << 20 }, StreamId.of(0));
    const h = memory.reserve(1500);
    expect(storage.sizes).toEqual([2048]);
    h.release();
  });

  it("dealloc policy: a page reused by many reserves survives that many checks; a page used once goes at the first", () => {
    const storage = new FakeStorage();
    const device = new DeviceMemory({ checks: 3, period: 1_000_000 });
    const memory = new MemoryManagement(storage, { pageSize: 256, alignment: 16, maxAllocation: 4096 }, StreamId.of(0), { device });
    const keep = memory.reserve(16); // the stream never goes idle in this test
    for (let i = 0; i < 10; i++) memory.reserve(16).release(); // nine reserves served by the existing page
    const once = memory.reserve(1000); // a dedicated page, used once
    once.release();
    device.check();
    expect(memory.usage().pages, "the page used once went at the first check").toBe(1);
    keep.release(); // idle: one more check, but the shared page is in use-credit
    expect(memory.usage().pages, "the busy page stays").toBe(1);
    for (let i = 0; i < 3; i++) device.check();
    expect(memory.usage().pages, "…until checks found it free `checks` times more than it was used").toBe(0);
    expect(device.stats()).toMatchObject({ pagesReleased: 2 });
  });

  it("a loop that frees everything at each step keeps its page warm: no page created after the first step", () => {
    const storage = new FakeStorage();
    const memory = new MemoryManagement(storage, { pageSize: 256, alignment: 16, maxAllocation: 4096 }, StreamId.of(0), {
      device: new DeviceMemory({ period: 1_000_000 }),
    });
    for (let step = 0; step < 100; step++) memory.reserve(16).release();
    expect(storage.sizes.length, "one page for a hundred idle steps").toBe(1);
  });

  it("the dealloc clock counts reserves of every stream of the device: an idle stream's free pages age while others work", () => {
    const storage = new FakeStorage();
    const device = new DeviceMemory({ checks: 2, period: 10 });
    const config = { pageSize: 256, alignment: 16, maxAllocation: 4096 };
    const idle = new MemoryManagement(storage, config, StreamId.of(1), { device });
    const busy = new MemoryManagement(storage, config, StreamId.of(2), { device });
    const k = idle.reserve(16);
    for (let i = 0; i < 5; i++) idle.reserve(16).release();
    k.release();
    expect(idle.usage().pages, "a page reused five times stays after the idle check").toBe(1);
    const live = busy.reserve(16);
    for (let i = 0; i < 40; i++) busy.reserve(16).release();
    expect(device.stats().checks, "one check per 10 reserves of the device").toBe(4);
    expect(idle.usage().pages, "the idle stream's page was given back by the device's checks").toBe(0);
    expect(busy.usage().pages, "the busy stream keeps its page").toBe(1);
    live.release();
  });

  it("an out-of-memory reclaims the free pages of every stream of the device before the one retry", () => {
    const storage = new FakeStorage(768);
    const device = new DeviceMemory({ period: 1_000_000 });
    const config = { pageSize: 256, alignment: 16, maxAllocation: 4096 };
    const other = new MemoryManagement(storage, config, StreamId.of(1), { device });
    const mine = new MemoryManagement(storage, config, StreamId.of(2), { device });
    const a = other.reserve(16);
    const b = other.reserve(250); // a second page of the other stream
    b.release();
    const c = mine.reserve(16);
    expect(storage.held, "full").toBe(768);
    const d = mine.reserve(250);
    expect(other.usage().pages, "the other stream's free page made room").toBe(1);
    expect(device.stats().reclaims).toBe(1);
    for (const h of [a, c, d]) h.release();
  });

  it("dispose gives every page back and leaves the device", () => {
    const storage = new FakeStorage();
    const device = new DeviceMemory();
    const memory = new MemoryManagement(storage, { pageSize: 256, alignment: 16, maxAllocation: 4096 }, StreamId.of(0), { device });
    const h = memory.reserve(16);
    h.retain();
    h.release();
    expect(device.stats().streams).toBe(1);
    h.release();
    memory.dispose();
    expect([storage.held, device.stats().streams]).toEqual([0, 0]);
  });

  it("random reserves and releases never hand out overlapping bytes, and freeing everything merges each page back to one slice", () => {
    // A reference first-fit model (every slice, in address order) checked against the manager.
    const { memory } = setup();
    let seed = 7;
    const random = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    const live: { handle: ReturnType<typeof memory.reserve>; resource: unknown; offset: number; size: number }[] = [];
    for (let step = 0; step < 3000; step++) {
      if (live.length > 0 && random(100) < 45) {
        const [gone] = live.splice(random(live.length), 1);
        gone?.handle.release();
      } else {
        const size = 1 + random(random(10) === 0 ? 300 : 60);
        const handle = memory.reserve(size);
        const r = memory.resolve(handle.binding());
        for (const other of live) {
          const overlap = other.resource === r.resource && r.offset < other.offset + other.size && other.offset < r.offset + size;
          if (overlap) expect.fail(`step ${step}: [${r.offset}, ${r.offset + size}) overlaps a live allocation`);
        }
        live.push({ handle, resource: r.resource, offset: r.offset, size });
      }
    }
    for (const l of live) l.handle.release();
    const usage = memory.usage();
    expect(usage.liveAllocations).toBe(0);
    expect(usage.slices, "each page's free slices merged back into one").toBe(usage.pages);
  });
});
