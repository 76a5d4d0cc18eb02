/// <reference types="@webgpu/types" preserve="true" />
import { invariant } from "@weft/environment";
import { BufferUsage } from "../device/gpu-constants.js";
import { bufferSizeClass } from "./gpu-buffer-storage.js";

/** Tuning of a {@link StagingPool}; every field has a default. */
export interface StagingPoolOptions {
  /** Free staging buffers kept for reuse (the oldest are destroyed beyond it). Default 8. */
  readonly maxBuffers?: number;
  /**
   * Bytes of free staging buffers kept for reuse (the oldest are destroyed beyond it). Default
   * `min(1 GiB, 2 × maxBufferSize)`: enough to keep a batch of the largest possible read warm.
   */
  readonly maxBytes?: number;
}

/** Counters of a {@link StagingPool}; they only grow, except the gauge. */
export interface StagingPoolStats {
  /** `device.createBuffer` calls for staging buffers. */
  readonly created: number;
  /** Acquisitions served by a kept buffer instead of a new one. */
  readonly reused: number;
  /** Staging buffers destroyed (beyond the budget, or at `purge`). */
  readonly destroyed: number;
  /** Gauge: bytes of free staging buffers kept for reuse. */
  readonly retainedBytes: number;
}

/**
 * The `MAP_READ | COPY_DST` buffers that readback copies land in, recycled by size class.
 *
 * @remarks
 * **Why.** Every read batch needs one mappable buffer big enough for all its copies; creating one
 * per batch costs a `createBuffer` (and, on some backends, a zero-fill) for every read. The pool
 * rounds each request up to its {@link bufferSizeClass} (≤ 12.5% waste) and hands back a kept
 * buffer of exactly that class when it has one, so a steady-state loop of reads of one size
 * creates no staging buffer after the first.
 * **What stays true.** A buffer is either handed out (mapped or about to be, owned by exactly one
 * batch) or kept here unmapped; `release` takes back only unmapped buffers. The kept set is bounded
 * by `maxBuffers` and `maxBytes` (oldest destroyed first), and emptied by {@link StagingPool.purge}.
 */
export class StagingPool {
  readonly #device: GPUDevice;
  readonly #maxBuffers: number;
  readonly #maxBytes: number;
  /** The device's `maxBufferSize`, read once (each `GPUSupportedLimits` attribute is a native getter). */
  readonly #maxBufferSize: number;
  /** Free buffers, oldest first; at most `#maxBuffers` of them and `#maxBytes` in total. */
  readonly #free: GPUBuffer[] = [];
  #retainedBytes = 0;
  #created = 0;
  #reused = 0;
  #destroyed = 0;

  constructor(device: GPUDevice, options: StagingPoolOptions = {}) {
    this.#device = device;
    this.#maxBuffers = options.maxBuffers ?? 8;
    this.#maxBufferSize = device.limits.maxBufferSize;
    this.#maxBytes = options.maxBytes ?? Math.min(2 ** 30, 2 * this.#maxBufferSize);
    invariant(this.#maxBuffers >= 0 && this.#maxBytes >= 0, "staging pool bounds are non-negative");
  }

  /** The size of the buffer {@link StagingPool.acquire} hands out for a request of `bytes`. */
  sizeClass(bytes: number): number {
    return bufferSizeClass(bytes, this.#maxBufferSize);
  }

  /**
   * An unmapped staging buffer of at least `bytes` bytes (its size class): a kept one of that
   * class, else a new one. The caller owns it until it passes it to `release` (or destroys it).
   */
  acquire(bytes: number): GPUBuffer {
    const size = this.sizeClass(bytes);
    const i = this.#free.findIndex((b) => b.size === size);
    if (i >= 0) {
      const [buffer] = this.#free.splice(i, 1);
      invariant(buffer !== undefined, "findIndex returned an index of the free list");
      this.#retainedBytes -= buffer.size;
      this.#reused++;
      return buffer;
    }
    this.#created++;
    return this.#device.createBuffer({ label: "weft readback", size, usage: BufferUsage.MAP_READ | BufferUsage.COPY_DST });
  }

  /** Takes back an unmapped buffer for reuse, destroying the oldest kept ones beyond the budget. */
  release(buffer: GPUBuffer): void {
    invariant(buffer.mapState === "unmapped", "a staging buffer is released only after unmap");
    this.#free.push(buffer);
    this.#retainedBytes += buffer.size;
    while (this.#free.length > this.#maxBuffers || this.#retainedBytes > this.#maxBytes) {
      const oldest = this.#free.shift();
      if (oldest === undefined) break;
      this.#retainedBytes -= oldest.size;
      this.#destroy(oldest);
    }
  }

  /** Destroys every kept buffer (buffers handed out are unaffected). */
  purge(): void {
    for (const b of this.#free.splice(0)) this.#destroy(b);
    this.#retainedBytes = 0;
  }

  /** Counters (see {@link StagingPoolStats}). */
  stats(): StagingPoolStats {
    return { created: this.#created, reused: this.#reused, destroyed: this.#destroyed, retainedBytes: this.#retainedBytes };
  }

  #destroy(buffer: GPUBuffer): void {
    this.#destroyed++;
    buffer.destroy();
  }
}
