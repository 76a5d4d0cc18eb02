import { OutOfMemoryError } from "../errors/server-error.js";
import type { ComputeStorage } from "../memory/compute-storage.js";

/**
 * Host memory for {@link HostComputeServer}: pages are plain `ArrayBuffer`s.
 *
 * @remarks
 * **Capacity.** With a `capacity`, an allocation that would take the bytes held past it throws
 * `OutOfMemoryError`, like a device would; that is how the reclaim-and-retry path is exercised on
 * the host. Without one, only the JavaScript engine limits it.
 * **Bounded.** `bytesAllocated` is the sum of the sizes of buffers handed out and not deallocated.
 */
export class HostStorage implements ComputeStorage<ArrayBuffer> {
  #bytes = 0;

  constructor(readonly capacity: number = Number.POSITIVE_INFINITY) {}

  /** Bytes held by live buffers. */
  get bytesAllocated(): number {
    return this.#bytes;
  }

  alloc(size: number): ArrayBuffer {
    if (this.#bytes + size > this.capacity) throw new OutOfMemoryError(size);
    const buffer = new ArrayBuffer(size);
    this.#bytes += size;
    return buffer;
  }

  dealloc(resource: ArrayBuffer): void {
    this.#bytes -= resource.byteLength;
  }
}
