/// <reference types="@webgpu/types" />
import { UnsupportedError, invariant, type StreamId } from "@weft/environment";
import {
  BaseFusionRuntime,
  numElements,
  type ExecutionContext,
  type OperationFuser,
  type OperationIr,
  type TensorData,
  type TensorIr,
  type TypedArray,
} from "@weft/fusion";
import type { ComputeServer, MemoryUsage } from "@weft/server";
import { ExprGraph } from "../codegen/wgsl/expr.js";
import { deviceProfile, type DeviceProfile, type ProfileLimits } from "../codegen/wgsl/types.js";
import {
  contiguousHandle,
  contiguousStrides,
  expandView,
  isContiguous,
  permuteView,
  releaseWebGpuHandle,
  reshapeView,
  sliceView,
  type WebGpuHandle,
} from "../handle/web-gpu-handle.js";
import type { WgslKernel } from "../kernel.js";
import { elementwiseKernel, elementwiseKey, type ElementwiseSpec } from "../kernels/elementwise.js";
import { gatherKernel, gatherKey, type GatherSpec } from "../kernels/gather.js";
import { newCounters, resetCounters, type RuntimeCounters } from "./counters.js";
import { ElementwiseFuser, MatmulFuser, ReduceFuser } from "./fusers.js";
import { Launcher } from "./launcher.js";
import { bindingOf, bytesOf, runElementwiseBlock } from "./run-elementwise.js";
import { runMatmulBlock } from "./run-matmul.js";
import { runReduceBlock } from "./run-reduce.js";
import type { WebGpuOptimization } from "./optimization.js";

/** What {@link WebGpuRuntime} needs: a server that runs WGSL kernels, and the device's limits. */
export interface WebGpuRuntimeOptions {
  readonly server: ComputeServer<WgslKernel>;
  readonly limits: ProfileLimits;
  readonly features: { has(name: string): boolean };
  /** Whether `fusers()` offers fusers (default true); false runs every op unfused. */
  readonly fusion?: boolean;
}

/**
 * The WebGPU backend's `FusionRuntime`: runs every `OperationIr` kind as WGSL kernels, fuses
 * elementwise chains, reductions with their prologue/epilogue and matmuls with their epilogue into
 * ONE kernel each, and keeps layout ops as views.
 *
 * @remarks
 * **Handles** are {@link WebGpuHandle}s (strided views, one memory reference each): `retainHandle`
 * makes a new reference, `canMut` is true for the sole reference, and in-place writes happen only
 * then. **Kernel cache** keyed by canonical kernel keys (relative structure + baked shapes,
 * strides and scalars + device profile), never tensor ids; see {@link WebGpuRuntime.counters}.
 * **Inputs** are borrowed; a `ReadWrite` input or a `drop` is freed from the container after the
 * op (removing an entry twice is harmless, so the engine's own `freeHandle` composes with it).
 */
export class WebGpuRuntime extends BaseFusionRuntime<WebGpuHandle, WebGpuOptimization> {
  readonly name = "webgpu";
  readonly server: ComputeServer<WgslKernel>;
  readonly profile: DeviceProfile;
  /** Launch, fusion, elision, in-place and cache counters (see {@link RuntimeCounters}). */
  readonly counters: RuntimeCounters = newCounters();
  readonly fusion: boolean;
  readonly #launcher: Launcher;

  constructor(options: WebGpuRuntimeOptions) {
    super();
    this.server = options.server;
    this.profile = deviceProfile(options.limits, options.features);
    this.fusion = options.fusion ?? true;
    this.#launcher = new Launcher(this.server, this.profile, this.counters);
  }

  /** Zeroes {@link WebGpuRuntime.counters}. */
  resetCounters(): void {
    resetCounters(this.counters);
  }

  fusers(): OperationFuser<WebGpuOptimization>[] {
    if (!this.fusion) return [];
    const maxBindings = this.profile.maxStorageBuffers - 1;
    return [new ElementwiseFuser(this, maxBindings), new ReduceFuser(this, maxBindings), new MatmulFuser(this, maxBindings)];
  }

  /** Runs a fused block (called by the optimizations). */
  executeBlock(kind: "elementwise" | "reduce" | "matmul", ctx: ExecutionContext<WebGpuHandle>, ops: readonly OperationIr[]): void {
    switch (kind) {
      case "elementwise":
        return runElementwiseBlock(this.#launcher, ctx, ops, true);
      case "reduce":
        if (!runReduceBlock(this.#launcher, ctx, ops, true)) for (const op of ops) this.executeOperation(op, ctx);
        return;
      case "matmul":
        return runMatmulBlock(this.#launcher, ctx, ops, true);
      default:
        return kind satisfies never;
    }
  }

  executeOperation(op: OperationIr, ctx: ExecutionContext<WebGpuHandle>): void {
    const launcher = this.#launcher;
    switch (op.kind) {
      case "init":
        return;
      case "drop":
        ctx.handles.removeHandle(op.tensor.id);
        return;
      case "full":
      case "arange":
      case "random":
      case "unary":
      case "binary":
      case "binary-scalar":
      case "clamp":
      case "cast":
      case "where":
        return runElementwiseBlock(launcher, ctx, [op], false);
      case "reduce":
        invariant(runReduceBlock(launcher, ctx, [op], false), "a lone reduce always plans");
        return;
      case "matmul":
        return runMatmulBlock(launcher, ctx, [op], false);
      case "reshape": {
        const input = ctx.handles.getHandle(op.input);
        let view = reshapeView(input, op.out.shape);
        if (view === undefined) {
          const dense = this.#contiguous(input, ctx.stream);
          view = reshapeView(dense, op.out.shape);
          releaseWebGpuHandle(dense);
        }
        invariant(view !== undefined, "a contiguous copy always reshapes as a view");
        return this.#finishView(op.input, op.out, view, ctx);
      }
      case "permute":
        return this.#finishView(op.input, op.out, permuteView(ctx.handles.getHandle(op.input), op.axes), ctx);
      case "expand":
        return this.#finishView(op.input, op.out, expandView(ctx.handles.getHandle(op.input), op.out.shape), ctx);
      case "slice":
        return this.#finishView(op.input, op.out, sliceView(ctx.handles.getHandle(op.input), op.ranges), ctx);
      case "concat": {
        const out = this.#allocate(op.out, ctx.stream);
        const strides = contiguousStrides(op.out.shape);
        let start = 0;
        for (const t of op.inputs) {
          const src = ctx.handles.getHandle(t);
          this.#copyInto(src, out, { shape: src.shape, strides, offset: start * (strides[op.axis] ?? 0) }, ctx.stream, "concat");
          start += t.shape[op.axis] ?? 0;
        }
        ctx.handles.registerHandle(op.out.id, out);
        for (const t of op.inputs) ctx.handles.free(t);
        return;
      }
      case "pad": {
        const out = this.#allocate(op.out, ctx.stream);
        this.#fill(out, op.value, ctx.stream);
        const src = ctx.handles.getHandle(op.input);
        const strides = contiguousStrides(op.out.shape);
        const offset = op.padding.reduce((acc, [before], d) => acc + before * (strides[d] ?? 0), 0);
        this.#copyInto(src, out, { shape: src.shape, strides, offset }, ctx.stream, "pad");
        ctx.handles.registerHandle(op.out.id, out);
        ctx.handles.free(op.input);
        return;
      }
      case "gather": {
        const input = ctx.handles.getHandle(op.input);
        const indices = ctx.handles.getHandle(op.indices);
        const out = this.#allocate(op.out, ctx.stream);
        if (numElements(op.out.shape) > 0) {
          const spec: GatherSpec = {
            input: { shape: input.shape, strides: input.strides, offset: input.offset },
            indices: { shape: indices.shape, strides: indices.strides, offset: indices.offset },
            dtype: op.out.dtype,
            axis: op.axis,
            outShape: op.out.shape,
          };
          const plan = launcher.plan(gatherKey(spec, this.profile), () => gatherKernel(spec, this.profile));
          launcher.launch(plan, [bindingOf(input, "read"), bindingOf(indices, "read"), bindingOf(out, "write")], ctx.stream);
        }
        ctx.handles.registerHandle(op.out.id, out);
        ctx.handles.free(op.input);
        ctx.handles.free(op.indices);
        return;
      }
      default:
        return op satisfies never;
    }
  }

  retainHandle(handle: WebGpuHandle): WebGpuHandle {
    handle.memory.retain();
    return { ...handle };
  }

  releaseHandle(handle: WebGpuHandle): void {
    releaseWebGpuHandle(handle);
  }

  canMut(handle: WebGpuHandle): boolean {
    return handle.memory.canMut();
  }

  upload(data: TensorData, stream: StreamId): WebGpuHandle {
    let bytes: Uint8Array;
    if (data.dtype === "bool") {
      const u = Uint32Array.from(data.data as Uint8Array, (v) => (v !== 0 ? 1 : 0));
      bytes = new Uint8Array(u.buffer);
    } else {
      bytes = new Uint8Array(data.data.buffer, data.data.byteOffset, data.data.byteLength);
    }
    const memory = bytes.byteLength === 0 ? this.server.empty(4, stream) : this.server.create(bytes, stream);
    return contiguousHandle(memory, data.shape, data.dtype);
  }

  async read(handle: WebGpuHandle, tensor: TensorIr, stream: StreamId): Promise<TypedArray> {
    const n = numElements(tensor.shape);
    if (n === 0) return fromBytes(new Uint8Array(0), tensor);
    const dense = handle.offset === 0 && isContiguous(handle) ? undefined : this.#contiguous(handle, stream);
    const source = dense ?? handle;
    try {
      const [bytes] = await this.server.read([source.memory.binding(0, bytesOf(tensor.shape, tensor.dtype))], stream);
      invariant(bytes !== undefined, "a read of one binding returns one array");
      return fromBytes(bytes, tensor);
    } finally {
      if (dense !== undefined) releaseWebGpuHandle(dense);
    }
  }

  readSync(_handle: WebGpuHandle, _tensor: TensorIr, _stream: StreamId): TypedArray | undefined {
    return undefined;
  }

  async sync(stream: StreamId): Promise<void> {
    this.server.flush(stream);
    await this.server.sync(stream);
  }

  memoryUsage(): MemoryUsage {
    return this.server.memoryUsage();
  }

  #allocate(t: TensorIr, stream: StreamId): WebGpuHandle {
    return contiguousHandle(this.#launcher.empty(bytesOf(t.shape, t.dtype), stream), t.shape, t.dtype);
  }

  #finishView(input: TensorIr, out: TensorIr, view: WebGpuHandle, ctx: ExecutionContext<WebGpuHandle>): void {
    ctx.handles.registerHandle(out.id, { ...view, dtype: out.dtype });
    ctx.handles.free(input);
  }

  /** A dense copy of `handle` (a new allocation). */
  #contiguous(handle: WebGpuHandle, stream: StreamId): WebGpuHandle {
    const out = contiguousHandle(this.#launcher.empty(bytesOf(handle.shape, handle.dtype), stream), handle.shape, handle.dtype);
    this.#copyInto(handle, out, undefined, stream, "copy");
    return out;
  }

  /** Copies `src` into `dst`'s memory at `layout` (default: dense). */
  #copyInto(src: WebGpuHandle, dst: WebGpuHandle, layout: ElementwiseSpec["outputs"][number]["layout"], stream: StreamId, label: string): void {
    if (numElements(src.shape) === 0) return;
    const graph = new ExprGraph();
    const node = graph.add({ kind: "input", slot: 0, dtype: src.dtype });
    const spec: ElementwiseSpec = {
      shape: src.shape,
      graph,
      label,
      inputs: [{ dtype: src.dtype, access: "read", layout: { shape: src.shape, strides: src.strides, offset: src.offset } }],
      outputs: [layout === undefined ? { node, dtype: dst.dtype } : { node, dtype: dst.dtype, layout }],
    };
    const key = elementwiseKey(spec, this.profile);
    const plan = this.#launcher.plan(key, () => elementwiseKernel(spec, this.profile, key));
    this.#launcher.launch(plan, [bindingOf(src, "read"), bindingOf(dst, "write")], stream);
  }

  /** Fills `dst` (dense) with `value`. */
  #fill(dst: WebGpuHandle, value: number, stream: StreamId): void {
    if (numElements(dst.shape) === 0) return;
    const graph = new ExprGraph();
    const node = graph.constant(value, dst.dtype);
    const spec: ElementwiseSpec = { shape: dst.shape, graph, label: "fill", inputs: [], outputs: [{ node, dtype: dst.dtype }] };
    const key = elementwiseKey(spec, this.profile);
    const plan = this.#launcher.plan(key, () => elementwiseKernel(spec, this.profile, key));
    this.#launcher.launch(plan, [bindingOf(dst, "write")], stream);
  }
}

/** Converts device bytes to the host array of `tensor.dtype` (bool: `u32` → `Uint8Array`). */
function fromBytes(bytes: Uint8Array, tensor: TensorIr): TypedArray {
  const n = numElements(tensor.shape);
  const buffer = bytes.slice().buffer;
  switch (tensor.dtype) {
    case "f32":
      return new Float32Array(buffer, 0, n);
    case "i32":
      return new Int32Array(buffer, 0, n);
    case "u32":
      return new Uint32Array(buffer, 0, n);
    case "f16":
      return new Uint16Array(buffer, 0, n);
    case "bool":
      return Uint8Array.from(new Uint32Array(buffer, 0, n), (v) => (v !== 0 ? 1 : 0));
    default:
      throw new UnsupportedError(`reading dtype ${String(tensor.dtype)}`);
  }
}
