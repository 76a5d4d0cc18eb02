/// <reference types="@webgpu/types" />
/**
 * The raw-WebGPU baselines: a hand-written WGSL kernel for the 8-op chain and a hand-written
 * `copyBufferToBuffer` + `mapAsync` readback, on the same `GPUDevice` Weft and TensorFlow.js use.
 *
 * @remarks
 * **Why.** The targets that matter most are relative to what the hardware does with no library in
 * the way: "≥ 95% of one hand-written kernel", "within 2× of a raw `mapAsync` copy". The kernel is
 * written the way a careful engineer would write it by hand: one `vec4<f32>` per invocation, the
 * largest work group the device allows (≤ 256), a 2-D grid when the element count exceeds
 * `maxComputeWorkgroupsPerDimension`, one dispatch per submit (what a caller without a batching
 * layer does).
 *
 * @module
 */
import { BufferUsage, MapMode } from "@weft/backend-webgpu";

/** A compiled chain kernel for one element count. */
interface ChainPipeline {
  readonly pipeline: GPUComputePipeline;
  readonly groups: readonly [number, number];
}

/**
 * Raw WebGPU on one device: buffers, the chain kernel, readback.
 *
 * @remarks **Bound.** Caches one pipeline per element count and one staging buffer per
 * (slot, size); both live until {@link RawGpu.destroy}.
 */
export class RawGpu {
  readonly device: GPUDevice;
  /** The work-group size: `min(256, maxComputeWorkgroupSizeX, maxComputeInvocationsPerWorkgroup)`. */
  readonly workgroup: number;
  readonly #pipelines = new Map<number, ChainPipeline>();
  readonly #staging = new Map<string, GPUBuffer>();
  readonly #owned: GPUBuffer[] = [];

  constructor(device: GPUDevice) {
    this.device = device;
    this.workgroup = Math.min(256, device.limits.maxComputeWorkgroupSizeX, device.limits.maxComputeInvocationsPerWorkgroup);
  }

  /** A storage buffer holding `data`. */
  upload(data: Float32Array): GPUBuffer {
    const buffer = this.empty(data.byteLength);
    this.device.queue.writeBuffer(buffer, 0, data.buffer, data.byteOffset, data.byteLength);
    return buffer;
  }

  /** An uninitialised storage buffer of `bytes` (copyable both ways). */
  empty(bytes: number): GPUBuffer {
    const buffer = this.device.createBuffer({ size: bytes, usage: BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST });
    this.#owned.push(buffer);
    return buffer;
  }

  /** The WGSL of the chain kernel for a grid whose rows are `rowInvocations` wide. */
  static chainWgsl(workgroup: number, rowInvocations: number): string {
    return `
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;

@compute @workgroup_size(${workgroup})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.y * ${rowInvocations}u + gid.x;
  if (i >= arrayLength(&y)) { return; }
  let v = x[i];
  let s = sin(v * 0.5 + 1.0);
  y[i] = max(exp(-(s * s)) + v, vec4<f32>(0.0));
}`;
  }

  #chainPipeline(n: number): ChainPipeline {
    const cached = this.#pipelines.get(n);
    if (cached !== undefined) return cached;
    if (n % 4 !== 0) throw new Error(`the hand-written chain kernel needs a multiple of 4 elements, got ${n}`);
    const groups = Math.ceil(n / 4 / this.workgroup);
    const gx = Math.min(groups, this.device.limits.maxComputeWorkgroupsPerDimension);
    const gy = Math.ceil(groups / gx);
    const module = this.device.createShaderModule({ code: RawGpu.chainWgsl(this.workgroup, gx * this.workgroup), label: "bench chain" });
    const pipeline = this.device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" }, label: "bench chain" });
    const made = { pipeline, groups: [gx, gy] as const };
    this.#pipelines.set(n, made);
    return made;
  }

  /** Submits one dispatch of the chain `y = chain(x)` over `n` elements (no wait). */
  chain(x: GPUBuffer, y: GPUBuffer, n: number): void {
    const { pipeline, groups } = this.#chainPipeline(n);
    const bind = this.device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer: x, size: n * 4 } },
        { binding: 1, resource: { buffer: y, size: n * 4 } },
      ],
    });
    const encoder = this.device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bind);
    pass.dispatchWorkgroups(groups[0], groups[1]);
    pass.end();
    this.device.queue.submit([encoder.finish()]);
  }

  /** Waits for everything submitted on the device's queue. */
  wait(): Promise<undefined> {
    return this.device.queue.onSubmittedWorkDone();
  }

  /**
   * Copies `bytes` of `src` into a mappable staging buffer (one per `slot`, reused), maps it and
   * returns a host copy: the least a readback can do.
   */
  async read(src: GPUBuffer, bytes: number, slot = 0): Promise<Float32Array> {
    const key = `${slot}:${bytes}`;
    let staging = this.#staging.get(key);
    if (staging === undefined) {
      staging = this.device.createBuffer({ size: bytes, usage: BufferUsage.MAP_READ | BufferUsage.COPY_DST });
      this.#staging.set(key, staging);
    }
    const encoder = this.device.createCommandEncoder();
    encoder.copyBufferToBuffer(src, 0, staging, 0, bytes);
    this.device.queue.submit([encoder.finish()]);
    await staging.mapAsync(MapMode.READ);
    const out = new Float32Array(staging.getMappedRange().slice(0));
    staging.unmap();
    return out;
  }

  /** Destroys every buffer this object created. */
  destroy(): void {
    for (const b of this.#owned) b.destroy();
    for (const b of this.#staging.values()) b.destroy();
    this.#owned.length = 0;
    this.#staging.clear();
  }

  /** Destroys one buffer created by {@link RawGpu.upload} / {@link RawGpu.empty}. */
  release(buffer: GPUBuffer): void {
    const i = this.#owned.indexOf(buffer);
    if (i >= 0) this.#owned.splice(i, 1);
    buffer.destroy();
  }
}
