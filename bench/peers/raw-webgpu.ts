/// <reference types="@webgpu/types" />
/**
 * The raw-WebGPU baselines: hand-written WGSL kernels for the 8-op chain and for a sum, and a
 * hand-written `copyBufferToBuffer` + `mapAsync` readback, on the same `GPUDevice` Weft and
 * TensorFlow.js use.
 *
 * @remarks
 * **Why.** The targets that matter most are relative to what the hardware does with no library in
 * the way. The kernels are written the way a careful engineer would write them by hand: one
 * `vec4<f32>` per invocation, the largest work group the device allows (≤ 256), a 2-D grid when the
 * element count exceeds `maxComputeWorkgroupsPerDimension`.
 * **Two ways to run them.** {@link RawGpu.chain} creates its bind group and submits one dispatch
 * (what a caller without a batching layer does). The *limit* ({@link RawGpu.chainWork},
 * {@link RawGpu.sumWork}, {@link RawGpu.submit}) runs the way the fastest hand-written code does:
 * input and output buffers and the bind groups made once and reused, {@link LIMIT_DISPATCHES}
 * dispatches per submit, so neither submit cost nor allocation hides the kernel (issue "Speed at
 * the hardware limit": a ratio against a slow yardstick flatters the engine).
 *
 * @module
 */
import { BufferUsage, MapMode } from "@weft/backend-webgpu";

/** Dispatches per submit of the limit yardsticks (about what a hand-batched loop submits at once). */
export const LIMIT_DISPATCHES = 30;

/** A compiled chain kernel for one element count. */
interface ChainPipeline {
  readonly pipeline: GPUComputePipeline;
  readonly groups: readonly [number, number];
}

/** One dispatch with its pipeline and bind group made in advance. */
interface RawDispatch {
  readonly pipeline: GPUComputePipeline;
  readonly bind: GPUBindGroup;
  readonly groups: readonly [number, number];
}

/**
 * A unit of hand-written work ready to submit many times: its dispatches in order (a sum is two:
 * partial sums, then their sum), bind groups made once, and the buffers it reads and writes.
 */
export interface RawWork {
  readonly dispatches: readonly RawDispatch[];
  /** Where the result is (the chain's output, the sum's one-element buffer). */
  readonly output: GPUBuffer;
  /** Bytes of the result. */
  readonly outputBytes: number;
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
  #sumPipeline: GPUComputePipeline | undefined;
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

  /** Submits one dispatch of the chain `y = chain(x)` over `n` elements with a fresh bind group (no wait): a caller without a batching layer. */
  chain(x: GPUBuffer, y: GPUBuffer, n: number): void {
    this.submit(this.chainWork(x, y, n), 1);
  }

  /** The chain `y = chain(x)` over `n` elements as reusable work (bind group made once). */
  chainWork(x: GPUBuffer, y: GPUBuffer, n: number): RawWork {
    const { pipeline, groups } = this.#chainPipeline(n);
    const bind = this.device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer: x, size: n * 4 } },
        { binding: 1, resource: { buffer: y, size: n * 4 } },
      ],
    });
    return { dispatches: [{ pipeline, bind, groups }], output: y, outputBytes: n * 4 };
  }

  /**
   * The WGSL of the sum kernel: each of the grid's work groups sums a strided share of `x` (vec4
   * loads, one running sum per invocation), reduces it in workgroup memory and writes one partial.
   * Run twice, it sums a whole array: the partials, then their sum by one work group.
   */
  static sumWgsl(workgroup: number): string {
    return `
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> partial: array<f32>;
var<workgroup> acc: array<f32, ${workgroup}>;

@compute @workgroup_size(${workgroup})
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let n = arrayLength(&x);
  let stride = nwg.x * ${workgroup}u;
  var s = vec4<f32>(0.0);
  for (var i = wid.x * ${workgroup}u + lid.x; i < n; i += stride) { s += x[i]; }
  acc[lid.x] = (s.x + s.y) + (s.z + s.w);
  workgroupBarrier();
  for (var k = ${workgroup >> 1}u; k > 0u; k >>= 1u) {
    if (lid.x < k) { acc[lid.x] += acc[lid.x + k]; }
    workgroupBarrier();
  }
  if (lid.x == 0u) { partial[wid.x] = acc[0]; }
}`;
  }

  /**
   * The sum of `n` f32 in `x` as reusable work: `partials` work groups (a power of two, ≤ 4096,
   * each reading ≥ 4 vec4 per invocation) write partial sums, one work group sums them into a
   * one-element buffer. The buffers and bind groups live until {@link RawGpu.destroy}.
   */
  sumWork(x: GPUBuffer, n: number): RawWork {
    if (n % 16 !== 0) throw new Error(`the hand-written sum kernel needs a multiple of 16 elements, got ${n}`);
    // A power-of-two work group for the tree reduction in workgroup memory.
    const wg = 2 ** Math.floor(Math.log2(this.workgroup));
    if (this.#sumPipeline === undefined) {
      const module = this.device.createShaderModule({ code: RawGpu.sumWgsl(wg), label: "bench sum" });
      this.#sumPipeline = this.device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" }, label: "bench sum" });
    }
    const pipeline = this.#sumPipeline;
    let partials = 4;
    while (partials < 4096 && partials * 2 * wg * 4 * 4 <= n) partials *= 2;
    const partial = this.empty(partials * 4);
    const out = this.empty(16);
    const layout = pipeline.getBindGroupLayout(0);
    const first = this.device.createBindGroup({
      layout,
      entries: [
        { binding: 0, resource: { buffer: x, size: n * 4 } },
        { binding: 1, resource: { buffer: partial, size: partials * 4 } },
      ],
    });
    const second = this.device.createBindGroup({
      layout,
      entries: [
        { binding: 0, resource: { buffer: partial, size: partials * 4 } },
        { binding: 1, resource: { buffer: out, size: 4 } },
      ],
    });
    return {
      dispatches: [
        { pipeline, bind: first, groups: [partials, 1] },
        { pipeline, bind: second, groups: [1, 1] },
      ],
      output: out,
      outputBytes: 4,
    };
  }

  /** Encodes `times` repetitions of `work` in one compute pass and submits them at once (no wait). */
  submit(work: RawWork, times: number): void {
    const encoder = this.device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    for (let t = 0; t < times; t++) {
      for (const d of work.dispatches) {
        pass.setPipeline(d.pipeline);
        pass.setBindGroup(0, d.bind);
        pass.dispatchWorkgroups(d.groups[0], d.groups[1]);
      }
    }
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
    return this.#mapped(src, bytes, slot, (range) => new Float32Array(range.slice(0)));
  }

  /**
   * Like {@link RawGpu.read}, but copies the mapped range into caller-owned `into` (reused by the
   * caller across reads) instead of a fresh array: the least a read into existing memory can do.
   */
  async readInto(src: GPUBuffer, into: Float32Array, slot = 0): Promise<Float32Array> {
    return this.#mapped(src, into.byteLength, slot, (range) => {
      into.set(new Float32Array(range));
      return into;
    });
  }

  /** Copies `bytes` of `src` into the staging buffer of (`slot`, `bytes`), maps it and hands the range to `take`. */
  async #mapped<T>(src: GPUBuffer, bytes: number, slot: number, take: (range: ArrayBuffer) => T): Promise<T> {
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
    try {
      return take(staging.getMappedRange(0, bytes));
    } finally {
      staging.unmap();
    }
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
