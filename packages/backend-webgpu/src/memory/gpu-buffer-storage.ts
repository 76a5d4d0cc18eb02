/// <reference types="@webgpu/types" preserve="true" />
import { invariant } from "@weft/environment";
import { OutOfMemoryError, BufferTooBigError, InjectedFaultError, formatBytes, type ComputeStorage } from "@weft/server";
import { BufferUsage } from "../device/gpu-constants.js";

/** Hooks a {@link GpuBufferStorage} calls around page creation and destruction. */
export interface GpuBufferStorageHooks {
  /**
   * Called before a page is destroyed: the owner submits any unsubmitted encoder that may refer
   * to it (a page is never destroyed while an unsubmitted encoder refers to it).
   */
  beforeDestroy(): void;
  /** Called with each buffer right before it is destroyed (e.g. to drop cached bind groups). */
  onDestroy?(buffer: GPUBuffer): void;
  /** Called with the error-scope promise of each page creation, to be awaited by reads. */
  track(scope: Promise<unknown>): void;
  /** How many more allocations must fail (fault injection); decremented by the storage. */
  takeInjectedFailure(): boolean;
  /** Called when the device reported, asynchronously, that `buffer` could not be allocated. */
  onOutOfMemory?(buffer: GPUBuffer, error: OutOfMemoryError): void;
}

/** Tuning of a {@link GpuBufferStorage}. */
export interface GpuBufferStorageOptions {
  /**
   * Bytes of freed buffers kept for reuse (the oldest are destroyed beyond it). Default
   * {@link DEFAULT_RETAINED_BYTES} (at most `maxBufferSize`).
   */
  readonly retainedBytes?: number;
  /**
   * The device's `memoryLimit`: bytes of page buffers (handed out and retained) never exceed it.
   * A creation that would is refused with a typed, transient `OutOfMemoryError` (after retained
   * buffers were destroyed to make room), before the native allocator is asked. Default: none.
   */
  readonly capacity?: number;
}

/** Default {@link GpuBufferStorageOptions.retainedBytes}: 128 MiB of freed pages kept for reuse. */
export const DEFAULT_RETAINED_BYTES = 128 * 1024 * 1024;

/** Counters of a {@link GpuBufferStorage}; they only grow, except the two gauges. */
export interface GpuBufferStorageStats {
  /** `device.createBuffer` calls. */
  readonly created: number;
  /** Allocations served by a retained (freed) buffer instead of a new one. */
  readonly reused: number;
  /** `GPUBuffer.destroy` calls. */
  readonly destroyed: number;
  /** Gauge: buffers alive (handed out or retained). */
  readonly liveBuffers: number;
  /** Gauge: bytes of retained buffers waiting for reuse. */
  readonly retainedBytes: number;
  /** Gauge: bytes of every live buffer (handed out or retained): what `capacity` bounds. */
  readonly liveBytes: number;
}

/**
 * The size class of a buffer of `bytes`: at most 32 bytes' worth of rounding below 256 bytes,
 * then a multiple of 1/8 of the power of two below it (at most 12.5% waste), so allocations of
 * nearly the same size share retained buffers. Never above `max` when `bytes` fits it.
 */
export function bufferSizeClass(bytes: number, max: number): number {
  const b = Math.max(32, Math.ceil(bytes / 4) * 4);
  if (b <= 256) return Math.ceil(b / 32) * 32;
  const pow = 2 ** Math.floor(Math.log2(b));
  const step = pow / 8;
  const rounded = Math.ceil(b / step) * step;
  return rounded <= max ? rounded : b;
}

/**
 * The device buffers behind every stream's `MemoryManagement` of one server: pages are
 * `GPUBuffer`s with `STORAGE | COPY_SRC | COPY_DST` usage, recycled through a pool of freed
 * buffers shared by the streams, under one optional `capacity` (the device's `memoryLimit`).
 *
 * @remarks
 * **Why a pool below the manager.** `MemoryManagement` gives free pages back under its dealloc
 * policy, and another stream (or size) may need one right after; creating a 64 MiB–1 GiB buffer
 * again costs far more than the kernel that fills it. So `dealloc` does not destroy: it *retains* the buffer under its size class
 * ({@link bufferSizeClass}), and `alloc` takes a retained buffer of the same class before creating
 * one. A steady-state loop (allocate, run, free) therefore creates no buffer after warm-up.
 * **Destruction** happens when retained bytes exceed `retainedBytes` (oldest first), when a
 * creation would pass `capacity`, when the device reports out-of-memory, and on
 * {@link GpuBufferStorage.purge} (`releaseUnused`, explicit cleanup). It first lets the owner submit its pending encoder; already-submitted work still
 * completes (WebGPU keeps the memory alive until then).
 * **Reuse is ordered by the queue.** A retained buffer may still be read or written by submitted
 * work; its next user's commands are submitted after that work, on the same `GPUQueue`.
 * **Out of memory** is detected with an `out-of-memory` error scope around `createBuffer` (no
 * `mappedAtCreation`, which zero-fills and uploads every new page on the host). The scope settles
 * asynchronously: the buffer is then marked failed ({@link GpuBufferStorage.failure}), every
 * retained buffer is destroyed, and `onOutOfMemory` tells the owner, which fails launches binding
 * it. Injected faults (tests) still throw `OutOfMemoryError` synchronously.
 * **Sizes.** Every buffer is at least 32 bytes and a multiple of 4, so a binding rounded up to 4
 * bytes never leaves its buffer.
 */
export class GpuBufferStorage implements ComputeStorage<GPUBuffer> {
  /** Retained buffers by size class, oldest first. Added in `dealloc`, taken by `alloc`, emptied by `purge`. */
  readonly #retained = new Map<number, GPUBuffer[]>();
  /** Retained buffers in the order they were retained: the eviction order. Same entries as `#retained`. */
  readonly #retainOrder: GPUBuffer[] = [];
  /** Buffers the device failed to allocate, with the error. Entries die with their buffer (weak). */
  readonly #failed = new WeakMap<GPUBuffer, OutOfMemoryError>();
  #retainLimit: number;
  /** The device's `maxBufferSize`, read once (each `GPUSupportedLimits` attribute is a native getter). */
  readonly #maxBufferSize: number;
  #retainedBytes = 0;
  readonly #capacity: number;
  /** Bytes of every live buffer (handed out or retained); at most `#capacity`. */
  #liveBytes = 0;
  #live = 0;
  #created = 0;
  #reused = 0;
  #destroyed = 0;

  constructor(
    private readonly device: GPUDevice,
    private readonly hooks: GpuBufferStorageHooks,
    private readonly label: string,
    options: GpuBufferStorageOptions = {},
  ) {
    this.#maxBufferSize = device.limits.maxBufferSize;
    this.#retainLimit = options.retainedBytes ?? Math.min(DEFAULT_RETAINED_BYTES, this.#maxBufferSize);
    this.#capacity = options.capacity ?? Number.POSITIVE_INFINITY;
  }

  /** Number of buffers currently alive (handed out or retained). */
  get liveBuffers(): number {
    return this.#live;
  }

  /** Counters (see {@link GpuBufferStorageStats}). */
  stats(): GpuBufferStorageStats {
    return {
      created: this.#created,
      reused: this.#reused,
      destroyed: this.#destroyed,
      liveBuffers: this.#live,
      retainedBytes: this.#retainedBytes,
      liveBytes: this.#liveBytes,
    };
  }

  /** The out-of-memory error the device reported for `buffer`, if any. */
  failure(buffer: GPUBuffer): OutOfMemoryError | undefined {
    return this.#failed.get(buffer);
  }

  alloc(size: number): GPUBuffer {
    const max = this.#maxBufferSize;
    const needed = Math.max(32, Math.ceil(size / 4) * 4);
    if (needed > max) throw new BufferTooBigError(size, max);
    if (this.hooks.takeInjectedFailure()) {
      throw new OutOfMemoryError(size, { cause: new InjectedFaultError(`allocation of ${size} bytes`) });
    }
    const bytes = bufferSizeClass(size, max);
    const retained = this.#retained.get(bytes)?.shift();
    if (retained !== undefined) {
      const at = this.#retainOrder.indexOf(retained);
      invariant(at >= 0, "a retained buffer is in the eviction order");
      this.#retainOrder.splice(at, 1);
      this.#retainedBytes -= retained.size;
      this.#reused++;
      return retained;
    }
    if (this.#liveBytes + bytes > this.#capacity) {
      // Retained buffers are the first to go: they hold memory nothing uses.
      this.purge();
      if (this.#liveBytes + bytes > this.#capacity) {
        throw new OutOfMemoryError(size, {
          detail: `memoryLimit ${formatBytes(this.#capacity)}: ${formatBytes(this.#liveBytes)} of pages held`,
        });
      }
    }
    this.device.pushErrorScope("validation");
    this.device.pushErrorScope("out-of-memory");
    const buffer = this.device.createBuffer({
      label: this.label,
      size: bytes,
      usage: BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST,
    });
    this.#created++;
    this.#live++;
    this.#liveBytes += buffer.size;
    const oom = this.device.popErrorScope();
    const validation = this.device.popErrorScope();
    this.hooks.track(
      Promise.all([oom, validation]).then(
        ([outOfMemory, invalid]) => {
          const reported = outOfMemory ?? invalid;
          if (reported === null) return;
          const error = new OutOfMemoryError(size, { cause: new Error(reported.message) });
          this.#failed.set(buffer, error);
          this.purge();
          this.hooks.onOutOfMemory?.(buffer, error);
        },
        () => undefined,
      ),
    );
    return buffer;
  }

  dealloc(buffer: GPUBuffer): void {
    if (this.#failed.has(buffer) || buffer.size > this.#retainLimit) {
      this.#destroy([buffer]);
      return;
    }
    const list = this.#retained.get(buffer.size);
    if (list === undefined) this.#retained.set(buffer.size, [buffer]);
    else list.push(buffer);
    this.#retainOrder.push(buffer);
    this.#retainedBytes += buffer.size;
    const evicted: GPUBuffer[] = [];
    while (this.#retainedBytes > this.#retainLimit) {
      const oldest = this.#retainOrder.shift();
      invariant(oldest !== undefined, "retained bytes are held by retained buffers");
      const same = this.#retained.get(oldest.size);
      const at = same?.indexOf(oldest) ?? -1;
      invariant(same !== undefined && at >= 0, "a retained buffer is listed under its size class");
      same.splice(at, 1);
      if (same.length === 0) this.#retained.delete(oldest.size);
      this.#retainedBytes -= oldest.size;
      evicted.push(oldest);
    }
    this.#destroy(evicted);
  }

  /**
   * Destroys every retained buffer and keeps none from now on: every later `dealloc` destroys its
   * buffer (a destroyed server, whose live pages are destroyed as their handles are released).
   */
  destroyAll(): void {
    this.#retainLimit = 0;
    this.purge();
  }

  /** Destroys every retained buffer (explicit cleanup, memory pressure). */
  purge(): void {
    const all = this.#retainOrder.splice(0);
    this.#retained.clear();
    this.#retainedBytes = 0;
    this.#destroy(all);
  }

  #destroy(buffers: readonly GPUBuffer[]): void {
    if (buffers.length === 0) return;
    this.hooks.beforeDestroy();
    for (const buffer of buffers) {
      this.hooks.onDestroy?.(buffer);
      buffer.destroy();
      this.#live--;
      this.#liveBytes -= buffer.size;
      this.#destroyed++;
    }
  }
}
