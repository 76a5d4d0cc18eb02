/// <reference types="@webgpu/types" />
import { OutOfMemoryError, BufferTooBigError, InjectedFaultError, type ComputeStorage } from "@weft/server";
import { BufferUsage } from "../device/gpu-constants.js";

/** Hooks a {@link GpuBufferStorage} calls around page creation and destruction. */
export interface GpuBufferStorageHooks {
  /**
   * Called before a page is destroyed: the owner submits any unsubmitted encoder that may refer
   * to it (a page is never destroyed while an unsubmitted encoder refers to it).
   */
  beforeDestroy(): void;
  /** Called with the error-scope promise of each page creation, to be awaited by reads. */
  track(scope: Promise<unknown>): void;
  /** How many more allocations must fail (fault injection); decremented by the storage. */
  takeInjectedFailure(): boolean;
}

/**
 * The device buffers behind one stream's `MemoryManagement`: pages are `GPUBuffer`s with
 * `STORAGE | COPY_SRC | COPY_DST` usage.
 *
 * @remarks
 * **Out-of-memory is detected synchronously.** WebGPU reports a failed `createBuffer` through an
 * error scope, asynchronously; by then launches could have bound the invalid buffer and poisoned
 * whole command buffers. A buffer created with `mappedAtCreation: true` throws a `RangeError`
 * synchronously when its memory cannot be allocated (WebGPU spec), so pages are created mapped and
 * unmapped at once; the error scopes are still pushed and tracked for anything else.
 * **Sizes.** Every buffer is at least 32 bytes and a multiple of 4, so a binding rounded up to 4
 * bytes never leaves its buffer.
 * **Destruction.** `dealloc` first lets the owner submit its pending encoder, then destroys:
 * already-submitted work still completes (WebGPU keeps the memory alive until then).
 */
export class GpuBufferStorage implements ComputeStorage<GPUBuffer> {
  /** Buffers created and not yet destroyed. Added in `alloc`, removed in `dealloc`. */
  #live = 0;

  constructor(
    private readonly device: GPUDevice,
    private readonly hooks: GpuBufferStorageHooks,
    private readonly label: string,
  ) {}

  /** Number of buffers currently alive. */
  get liveBuffers(): number {
    return this.#live;
  }

  alloc(size: number): GPUBuffer {
    const bytes = Math.max(32, Math.ceil(size / 4) * 4);
    const max = this.device.limits.maxBufferSize;
    if (bytes > max) throw new BufferTooBigError(size, max);
    if (this.hooks.takeInjectedFailure()) {
      throw new OutOfMemoryError(size, { cause: new InjectedFaultError(`allocation of ${size} bytes`) });
    }
    this.device.pushErrorScope("validation");
    this.device.pushErrorScope("out-of-memory");
    let buffer: GPUBuffer;
    try {
      buffer = this.device.createBuffer({
        label: this.label,
        size: bytes,
        usage: BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST,
        mappedAtCreation: true,
      });
      buffer.unmap();
    } catch (error) {
      this.#popScopes();
      throw new OutOfMemoryError(size, { cause: error });
    }
    this.#popScopes();
    this.#live++;
    return buffer;
  }

  dealloc(buffer: GPUBuffer): void {
    this.hooks.beforeDestroy();
    buffer.destroy();
    this.#live--;
  }

  #popScopes(): void {
    const oom = this.device.popErrorScope();
    const validation = this.device.popErrorScope();
    this.hooks.track(Promise.all([oom, validation]).catch(() => undefined));
  }
}
