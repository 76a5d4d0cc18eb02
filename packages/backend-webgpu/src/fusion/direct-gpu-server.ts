/// <reference types="@webgpu/types" preserve="true" />
import { StreamId, invariant } from "@weft/environment";
import {
  LaunchError,
  ValidationError,
  type AllocationId,
  type BufferBinding,
  type ComputeServer,
  type CubeCount,
  type KernelBinding,
  type LaunchMode,
  type MemoryHandle,
  type MemoryUsage,
} from "@weft/server";
import type { WgslKernel } from "../kernel.js";

const STORAGE = 0x0080 | 0x0004 | 0x0008; // STORAGE | COPY_SRC | COPY_DST
const MAP_READ = 0x0001 | 0x0008; // MAP_READ | COPY_DST
const UNIFORM = 0x0040 | 0x0008;

/**
 * A minimal {@link ComputeServer} over a raw `GPUDevice`: one `GPUBuffer` per allocation, one
 * submit per launch, pipelines cached by kernel key.
 *
 * @remarks
 * **Why.** The compute runtime (codegen, kernels, fusers) must run end to end on a device before and
 * independently of the full `WebGpuServer` (streams, memory pools, byte-range taint). This server
 * is what the runtime's own tests use, and what {@link createWebGpuRuntime} falls back to when it is
 * given `{ server: "direct" }`. It has no taint tracking: a failed launch throws `LaunchError` at
 * the call instead of poisoning bytes.
 * **Bounded by** live allocations (each freed on its last release) and the distinct kernel keys
 * launched (one pipeline each).
 */
export class DirectGpuServer implements ComputeServer<WgslKernel> {
  readonly name = "webgpu-direct";
  readonly device: GPUDevice;
  /** Compiled pipelines by kernel key; one entry per distinct kernel. */
  readonly #pipelines = new Map<string, GPUComputePipeline>();
  /** Live buffers by allocation id; removed when the last reference is released. */
  readonly #buffers = new Map<AllocationId, GPUBuffer>();
  #nextAllocation = 1;
  #bytesInUse = 0;
  /** Number of pipelines compiled (tests compare it with launches to see cache hits). */
  compiled = 0;
  /** Number of dispatches submitted. */
  launches = 0;

  constructor(device: GPUDevice) {
    this.device = device;
  }

  empty(size: number, stream: StreamId): MemoryHandle {
    const allocation = this.#nextAllocation++ as AllocationId;
    const bytes = Math.max(16, Math.ceil(size / 4) * 4);
    const buffer = this.device.createBuffer({ size: bytes, usage: STORAGE });
    this.#buffers.set(allocation, buffer);
    this.#bytesInUse += bytes;
    let refs = 1;
    const buffers = this.#buffers;
    const onFree = (): void => {
      buffers.delete(allocation);
      this.#bytesInUse -= bytes;
      buffer.destroy();
    };
    return {
      allocation,
      size,
      stream,
      get refs() {
        return refs;
      },
      retain() {
        invariant(refs > 0, `allocation ${allocation} retained after its last release`);
        refs++;
      },
      release() {
        invariant(refs > 0, `allocation ${allocation} released twice`);
        if (--refs === 0) onFree();
      },
      canMut: () => refs === 1,
      binding: (offset = 0, length = size - offset) => ({ allocation, offset, size: length, stream }),
    };
  }

  create(data: Uint8Array, stream: StreamId): MemoryHandle {
    const handle = this.empty(data.byteLength, stream);
    this.write(handle.binding(), data, stream);
    return handle;
  }

  write(binding: BufferBinding, data: Uint8Array, _stream: StreamId): void {
    const padded = new Uint8Array(Math.ceil(data.byteLength / 4) * 4);
    padded.set(data);
    if (padded.byteLength > 0) this.device.queue.writeBuffer(this.#buffer(binding), binding.offset, padded);
  }

  async read(bindings: readonly BufferBinding[], _stream: StreamId): Promise<Uint8Array[]> {
    return Promise.all(
      bindings.map(async (b) => {
        const size = Math.ceil(b.size / 4) * 4;
        if (size === 0) return new Uint8Array(0);
        const staging = this.device.createBuffer({ size, usage: MAP_READ });
        const encoder = this.device.createCommandEncoder();
        encoder.copyBufferToBuffer(this.#buffer(b), b.offset, staging, 0, size);
        this.device.queue.submit([encoder.finish()]);
        await staging.mapAsync(0x0001);
        const out = new Uint8Array(staging.getMappedRange().slice(0, b.size));
        staging.unmap();
        staging.destroy();
        return out;
      }),
    );
  }

  compile(kernel: WgslKernel): void {
    this.#pipeline(kernel);
  }

  launch(kernel: WgslKernel, count: CubeCount, bindings: readonly KernelBinding[], _stream: StreamId, mode: LaunchMode, uniforms?: Uint8Array): void {
    const pipeline = this.#pipeline(kernel);
    if (mode === "discard") return;
    const entries: GPUBindGroupEntry[] = bindings.map((b, i) => ({
      binding: i,
      resource: { buffer: this.#buffer(b.binding), offset: b.binding.offset, size: Math.max(4, Math.ceil(b.binding.size / 4) * 4) },
    }));
    let uniformBuffer: GPUBuffer | undefined;
    if (uniforms !== undefined) {
      uniformBuffer = this.device.createBuffer({ size: Math.max(16, Math.ceil(uniforms.byteLength / 16) * 16), usage: UNIFORM });
      const padded = new Uint8Array(uniformBuffer.size);
      padded.set(uniforms);
      this.device.queue.writeBuffer(uniformBuffer, 0, padded);
      entries.push({ binding: bindings.length, resource: { buffer: uniformBuffer } });
    }
    this.device.pushErrorScope("validation");
    const group = this.device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
    const encoder = this.device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(count[0], count[1], count[2]);
    pass.end();
    this.device.queue.submit([encoder.finish()]);
    this.launches++;
    void this.device.popErrorScope().then((e) => {
      if (e) console.error(new LaunchError(`launch of ${kernel.label ?? kernel.key} failed: ${e.message}`));
    });
    uniformBuffer?.destroy();
  }

  flush(_stream: StreamId): void {}

  async sync(_stream: StreamId = StreamId.current()): Promise<void> {
    await this.device.queue.onSubmittedWorkDone();
  }

  memoryUsage(): MemoryUsage {
    return { bytesInUse: this.#bytesInUse, bytesReserved: this.#bytesInUse, pages: this.#buffers.size, slices: this.#buffers.size, liveAllocations: this.#buffers.size, streams: this.#buffers.size > 0 ? 1 : 0 };
  }

  #buffer(binding: BufferBinding): GPUBuffer {
    const buffer = this.#buffers.get(binding.allocation);
    invariant(buffer !== undefined, () => `allocation ${binding.allocation} is not live`);
    return buffer;
  }

  #pipeline(kernel: WgslKernel): GPUComputePipeline {
    const found = this.#pipelines.get(kernel.key);
    if (found) return found;
    this.device.pushErrorScope("validation");
    const module = this.device.createShaderModule({ code: kernel.source, label: kernel.label ?? kernel.key });
    const pipeline = this.device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: kernel.entryPoint ?? "main" } });
    void this.device.popErrorScope().then((e) => {
      if (e) console.error(new ValidationError(`kernel ${kernel.label ?? kernel.key} does not compile: ${e.message}\n${kernel.source}`));
    });
    this.compiled++;
    this.#pipelines.set(kernel.key, pipeline);
    return pipeline;
  }
}
