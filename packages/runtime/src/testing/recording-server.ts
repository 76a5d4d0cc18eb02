/**
 * A small, real `ComputeServer` over host memory that records every call: what the runtime's
 * tests run against until `@weft/server/testing`'s `DummyServer` is available.
 *
 * @module
 */
import { Deferred } from "@weft/environment";
import type { StreamId } from "@weft/environment";
import { LaunchError, ValidationError } from "@weft/server";
import type {
  AllocationId,
  BufferBinding,
  ComputeServer,
  CubeCount,
  KernelBinding,
  KernelDefinition,
  LaunchMode,
  MemoryHandle,
  MemoryUsage,
} from "@weft/server";

/** A kernel of the {@link RecordingServer}: `run` gets one view per binding, in binding order. */
export interface HostTestKernel extends KernelDefinition {
  run(buffers: Uint8Array[], uniforms?: Uint8Array): void;
  /** When set, compiling the kernel fails with a `ValidationError` carrying this message. */
  readonly compileError?: string;
}

/** One recorded launch. */
export interface RecordedLaunch {
  readonly key: string;
  readonly stream: StreamId;
  readonly mode: LaunchMode;
}

/**
 * Host-memory compute server that records launches and compiles.
 *
 * @remarks
 * **Semantics.** `execute` launches run their kernel at once on the bound bytes; `discard` launches
 * only compile (a kernel compiles once: `compiled` lists each key the first time). A kernel that
 * throws while running is a device-side failure: recorded in `failures`, never thrown (the
 * `ComputeServer` contract). With `holdReads`, every read waits for {@link releaseReads}.
 */
export class RecordingServer implements ComputeServer<HostTestKernel> {
  readonly name: string;
  /** Every launch, in order. Grows for the server's life (tests only). */
  readonly launches: RecordedLaunch[] = [];
  /** Each kernel key, the first time it compiled. */
  readonly compiled: string[] = [];
  /** Errors thrown by kernels while running. */
  readonly failures: unknown[] = [];
  /** Called at the start of every server call (a re-entrancy probe for tests). */
  onCall: ((method: string) => void) | undefined;
  holdReads = false;
  readonly #memory = new Map<AllocationId, Uint8Array>();
  #nextAllocation = 0;
  #held: Array<Deferred<void>> = [];

  constructor(name = "recording") {
    this.name = name;
  }

  empty(size: number, stream: StreamId): MemoryHandle {
    this.onCall?.("empty");
    const allocation = this.#nextAllocation++ as AllocationId;
    this.#memory.set(allocation, new Uint8Array(size));
    return this.#handle(allocation, size, stream);
  }

  create(data: Uint8Array, stream: StreamId): MemoryHandle {
    this.onCall?.("create");
    const handle = this.empty(data.byteLength, stream);
    this.#bytes(handle.binding()).set(data);
    return handle;
  }

  write(binding: BufferBinding, data: Uint8Array): void {
    this.onCall?.("write");
    this.#bytes(binding).set(data.subarray(0, binding.size));
  }

  read(bindings: readonly BufferBinding[]): Promise<Uint8Array[]> {
    this.onCall?.("read");
    const snapshot = bindings.map((b) => this.#bytes(b).slice());
    if (!this.holdReads) return Promise.resolve(snapshot);
    const gate = new Deferred<void>();
    this.#held.push(gate);
    return gate.promise.then(() => snapshot);
  }

  readSync(bindings: readonly BufferBinding[]): Uint8Array[] {
    this.onCall?.("readSync");
    return bindings.map((b) => this.#bytes(b).slice());
  }

  /** Settles every held read. */
  releaseReads(): void {
    const held = this.#held;
    this.#held = [];
    for (const gate of held) gate.resolve();
  }

  compile(kernel: HostTestKernel): void {
    this.onCall?.("compile");
    if (kernel.compileError !== undefined) throw new ValidationError(`kernel "${kernel.key}": ${kernel.compileError}`);
    if (!this.compiled.includes(kernel.key)) this.compiled.push(kernel.key);
  }

  launch(
    kernel: HostTestKernel,
    _count: CubeCount,
    bindings: readonly KernelBinding[],
    stream: StreamId,
    mode: LaunchMode,
    uniforms?: Uint8Array,
  ): void {
    this.onCall?.("launch");
    this.compile(kernel);
    this.launches.push({ key: kernel.key, stream, mode });
    if (mode === "discard") return;
    try {
      kernel.run(bindings.map((b) => this.#bytes(b.binding)), uniforms);
    } catch (error) {
      this.failures.push(error);
    }
  }

  flush(): void {
    this.onCall?.("flush");
  }

  async sync(): Promise<void> {
    this.onCall?.("sync");
  }

  memoryUsage(): MemoryUsage {
    let bytes = 0;
    for (const buffer of this.#memory.values()) bytes += buffer.byteLength;
    return { bytesInUse: bytes, bytesReserved: bytes, pages: this.#memory.size, slices: this.#memory.size, liveAllocations: this.#memory.size, streams: this.#memory.size > 0 ? 1 : 0 };
  }

  #bytes(binding: BufferBinding): Uint8Array {
    const buffer = this.#memory.get(binding.allocation);
    if (buffer === undefined) throw new LaunchError(`allocation ${binding.allocation} was freed or never existed`);
    return buffer.subarray(binding.offset, binding.offset + binding.size);
  }

  #handle(allocation: AllocationId, size: number, stream: StreamId): MemoryHandle {
    const memory = this.#memory;
    let refs = 1;
    let holds = 0;
    return {
      allocation,
      size,
      stream,
      get refs() {
        return refs;
      },
      retain() {
        refs += 1;
      },
      release() {
        refs -= 1;
        if (refs === 0 && holds === 0) memory.delete(allocation);
      },
      hold() {
        holds += 1;
        return () => {
          holds -= 1;
          if (refs === 0 && holds === 0) memory.delete(allocation);
        };
      },
      canMut() {
        return refs === 1;
      },
      binding(offset = 0, length = size - offset): BufferBinding {
        return { allocation, offset, size: length, stream };
      },
    };
  }
}

/** A kernel that adds `value` to every f32 of its single read-write binding. */
export function addScalarKernel(value: number, key = `add-scalar(${value})`): HostTestKernel {
  return {
    key,
    run([buffer]) {
      if (buffer === undefined) throw new LaunchError(`${key}: needs one binding`);
      const f = new Float32Array(buffer.buffer, buffer.byteOffset, buffer.byteLength / 4);
      for (let i = 0; i < f.length; i++) f[i] = (f[i] ?? 0) + value;
    },
  };
}

/** f32 bytes of `values`. */
export function f32Bytes(values: readonly number[]): Uint8Array {
  return new Uint8Array(new Float32Array(values).buffer);
}

/** The f32 values of `bytes`. */
export function f32Values(bytes: Uint8Array): number[] {
  return [...new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)];
}
