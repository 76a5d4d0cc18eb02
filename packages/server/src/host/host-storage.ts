import { OutOfMemoryError } from "../errors/server-error.js";
import type { ComputeStorage } from "../memory/compute-storage.js";

/** `bytes` as a short human-readable size (`64 MiB`). */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${Number.isInteger(value) ? value : value.toFixed(1)} ${units[unit]}`;
}

/**
 * Host memory for {@link HostComputeServer}: pages are plain `ArrayBuffer`s, shared by every
 * stream of the server.
 *
 * @remarks
 * **Capacity** (`memoryLimit`). With a `capacity`, an allocation that would take the bytes held
 * past it throws a typed, transient `OutOfMemoryError` naming the limit, like a device would; the
 * manager then reclaims every stream's free pages and retries once. Without one, only the
 * JavaScript engine limits it: an `ArrayBuffer` it refuses (a `RangeError`) is reported as the
 * same `OutOfMemoryError` (cause kept), so that path reclaims and retries too.
 * **Bounded.** `bytesAllocated` is the sum of the sizes of buffers handed out and not deallocated.
 */
export class HostStorage implements ComputeStorage<ArrayBuffer> {
  #bytes = 0;

  constructor(readonly capacity: number = Number.POSITIVE_INFINITY) {
    if (!(capacity > 0)) throw new RangeError(`HostStorage: capacity must be a positive number of bytes, got ${capacity}`);
  }

  /** Bytes held by live buffers. */
  get bytesAllocated(): number {
    return this.#bytes;
  }

  alloc(size: number): ArrayBuffer {
    if (this.#bytes + size > this.capacity) {
      throw new OutOfMemoryError(size, {
        detail: `memoryLimit ${formatBytes(this.capacity)}: ${formatBytes(this.#bytes)} reserved`,
      });
    }
    let buffer: ArrayBuffer;
    try {
      buffer = new ArrayBuffer(size);
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      throw new OutOfMemoryError(size, { cause: error, detail: `the JavaScript engine refused: ${error.message}` });
    }
    this.#bytes += size;
    return buffer;
  }

  dealloc(resource: ArrayBuffer): void {
    this.#bytes -= resource.byteLength;
  }
}
