import { invariant, type StreamId } from "@weft/environment";
import { HostComputeServer, type FaultSpec, type MemoryUsage } from "@weft/server";
import { Client } from "@weft/runtime";
import {
  BaseFusionRuntime,
  type BlockFallbackPort,
  isElementwise,
  numElements,
  operationInputs,
  operationNodes,
  type DType,
  type ExecutionContext,
  type OperationFuser,
  type OperationIr,
  type Optimization,
  type RuntimeCapabilities,
  type RuntimeStats,
  type TensorData,
  type TensorIr,
  type TypedArray,
  denseLayout,
  expandLayout,
  isContiguous,
  permuteLayout,
  sliceLayout,
} from "@weft/fusion";
import { allocationBytes, denseHandle, isDense, withLayout, type CpuHandle } from "../handle/cpu-handle.js";
import { forEachRun, planLoop } from "../kernels/strided-loop.js";
import { BindingSet, KernelMemory, allocateTyped, encodeUniforms, type CpuKernel } from "../kernels/cpu-kernel.js";
import { ElementwiseProgramBuilder, type ElementwiseRunner } from "../kernels/elementwise-kernel.js";
import { ElementwiseCache } from "../kernels/elementwise-codegen.js";
import { resolveKernelPath, type KernelPath, type KernelPathChoice } from "../kernels/kernel-path.js";
import { appendElementwise } from "../kernels/elementwise-ops.js";
import { arangeKernel, fullKernel, randomKernel } from "../kernels/creation-kernels.js";
import { scanKernel, scatterKernel, sortKernel } from "../kernels/axis-kernels.js";
import { concatKernel, gatherKernel, matmulKernel, padKernel, type KernelOperand } from "../kernels/tensor-kernels.js";
import { ReduceKernelCache } from "../kernels/reduce-kernel-cache.js";
import { rejectF16 } from "../numerics/scalar-ops.js";
import { InvalidOperationError } from "../errors/cpu-errors.js";
import { ElementwiseFuser } from "../fusion/elementwise-fuser.js";
import { MatmulFuser } from "../fusion/matmul-fuser.js";
import { SoftmaxFuser } from "../fusion/softmax-optimization.js";
import { CpuFusionStats } from "./cpu-stats.js";

/** How to create a {@link CpuRuntime} (see {@link createCpuRuntime}). */
export interface CpuRuntimeOptions {
  /** `false`: no fusers — every operation runs alone (the unfused oracle mode). Default `true`. */
  readonly fusion?: boolean;
  /**
   * Host bytes the device's pages may take (`weft.init({ memoryLimit })`); beyond it, once every
   * free page was reclaimed, an allocation fails with a typed, transient `OutOfMemoryError`.
   * Ignored when `server` is given. Default: unlimited.
   */
  readonly memoryLimit?: number;
  /** The host server to run on; default a fresh `HostComputeServer({ name: "cpu" })`. */
  readonly server?: HostComputeServer;
  /**
   * How elementwise programs run (see `KernelPath`): `auto` (default) generates JavaScript where
   * `new Function` is allowed and interprets elsewhere; `interpreted` forces the interpreter (the
   * conformance kit runs both); `generated` throws `UnsupportedError` where code generation is
   * refused.
   */
  readonly kernels?: KernelPathChoice;
}

/**
 * Creates the CPU backend's runtime: a fresh {@link CpuRuntime} over a new (or the given)
 * `HostComputeServer`. Hand it to `new FusionDevice(runtime)`.
 */
export function createCpuRuntime(options: CpuRuntimeOptions = {}): CpuRuntime {
  return new CpuRuntime(
    options.server ?? new HostComputeServer({ name: "cpu", ...(options.memoryLimit === undefined ? {} : { capacity: options.memoryLimit }) }),
    options,
  );
}

/**
 * The CPU backend's `FusionRuntime`: every `OperationIr` kind as a host kernel, plus the
 * elementwise fuser. The oracle every conformance test compares against.
 *
 * @remarks
 * **Why through a server.** Every kernel is launched through `Client.launch` on a host compute
 * server, so process/stream modes (`weft.warmup` discards CPU launches too), byte-range taint and
 * fault injection apply exactly as on a GPU. Views (reshape of dense data, permute, expand,
 * slice) launch nothing: they are new {@link CpuHandle}s over the same memory.
 * **Ownership.** Each handle holds one memory reference (`retainHandle`/`releaseHandle`); unfused
 * operations free their `ReadWrite` inputs after launching (the engine's own `freeHandle` then
 * finds nothing to do).
 * **Invariants.** `f16` anywhere throws `UnsupportedError('f16 on the CPU backend')`. Outputs are
 * dense, freshly allocated (or, in a fused block, an input's memory reused in place when
 * `canMut`). Counters in {@link CpuRuntime.stats} only grow.
 */
export class CpuRuntime extends BaseFusionRuntime<CpuHandle> {
  readonly name = "cpu";
  /** No `f16`; host memory, so reads can be synchronous. */
  readonly capabilities: RuntimeCapabilities = { dtypes: ["f32", "i32", "u32", "bool"], reads: "async-and-sync" };
  /** The client every launch, allocation and read goes through. */
  readonly client: Client<CpuKernel>;
  /** What fusion did (fused launches, in-place and elided writes). */
  readonly stats = new CpuFusionStats();
  /** The host server the client forwards to (fault injection, stats). */
  readonly server: HostComputeServer;
  readonly #fusion: boolean;
  /** Unfused reduce kernels by layout; at most `MAX_REDUCE_KERNELS`. */
  readonly #reduces = new ReduceKernelCache();
  /** Kernel launches requested (`resourceStats().launches`). */
  #launches = 0;

  /** Which way elementwise programs run in this runtime (fixed at creation). */
  readonly kernelPath: KernelPath;
  /** Compiled elementwise functions (generated path), bounded LRU; its counters are readable. */
  readonly elementwiseCache = new ElementwiseCache();
  /** What elementwise kernels are built with: the path and the cache. */
  readonly runner: ElementwiseRunner;

  constructor(server: HostComputeServer, options: Pick<CpuRuntimeOptions, "fusion" | "kernels"> = {}) {
    super();
    this.server = server;
    this.client = new Client<CpuKernel>(server);
    this.#fusion = options.fusion ?? true;
    this.kernelPath = resolveKernelPath(options.kernels ?? "auto");
    this.runner = { path: this.kernelPath, cache: this.elementwiseCache };
  }

  /**
   * What the CPU backend holds and did (`weft.stats()`): `pipelines` is the number of kernel keys
   * the host server holds as compiled (bounded, LRU), `launches` every kernel launch requested,
   * `submits` 0 (host kernels run when launched).
   */
  resourceStats(): RuntimeStats {
    const server = this.server.stats();
    return {
      pipelines: server.compiled,
      kernelsGenerated: server.compilations,
      launches: this.#launches,
      submits: 0,
      caches: {
        compiledKernels: {
          size: server.compiled,
          capacity: server.compiledCapacity,
          hits: server.compiledHits,
          misses: server.compilations,
          evictions: server.compiledEvictions,
        },
        elementwisePrograms: {
          size: this.elementwiseCache.size,
          capacity: this.elementwiseCache.capacity,
          hits: this.elementwiseCache.hits,
          misses: this.elementwiseCache.compiled,
          evictions: this.elementwiseCache.evictions,
        },
      },
    };
  }

  /** Gives every free page of every stream back to the host (`weft.releaseUnused()`). */
  releaseUnused(): void {
    this.server.releaseUnused();
  }

  /** Gives every free page back; the pages of live tensors go with their last reference. */
  dispose(): void {
    this.server.releaseUnused();
  }

  /** `[ElementwiseFuser, MatmulFuser]`, or none in the unfused oracle mode. */
  fusers(): OperationFuser<Optimization<CpuHandle>>[] {
    return this.#fusion ? [new ElementwiseFuser(this), new MatmulFuser(this), new SoftmaxFuser(this)] : [];
  }

  /**
   * Fails a later launch (`{ launch: n }`, 1 = the next one that runs), allocation
   * (`{ allocation: n }`) or every launch of a kernel key (`{ kernelKey }`) — the test hook.
   * Forwards to `HostComputeServer.injectFault`; a failed launch taints exactly its outputs.
   */
  injectFault(fault: FaultSpec): void {
    this.server.injectFault(fault);
  }

  /** A new handle object over the same memory and layout, holding its own reference. */
  retainHandle(handle: CpuHandle): CpuHandle {
    handle.memory.retain();
    return withLayout(handle, handle);
  }

  /** Gives back `handle`'s memory reference (the memory is reused once none is left). */
  releaseHandle(handle: CpuHandle): void {
    handle.memory.release();
  }

  /** True when `handle` is the only reference on its memory (no view, alias or pin). */
  canMut(handle: CpuHandle): boolean {
    return handle.memory.canMut();
  }

  /** Copies `data` into a fresh dense allocation on `stream`. */
  upload(data: TensorData, stream: StreamId): CpuHandle {
    if (data.dtype === "f16") rejectF16("upload");
    const size = allocationBytes(numElements(data.shape), data.dtype);
    const view = new Uint8Array(data.data.buffer, data.data.byteOffset, data.data.byteLength);
    // `create` copies into the allocation; only a size that needs padding (fewer than 4 bytes,
    // or a bool tail) goes through a padded copy first.
    let bytes = view;
    if (view.byteLength !== size) {
      bytes = new Uint8Array(size);
      bytes.set(view);
    }
    const memory = this.client.create(bytes, stream);
    return denseHandle(memory, data.shape, data.dtype);
  }

  /** The view's values as a dense row-major array; rejects with the taint error of a failed producer. */
  async read(handle: CpuHandle, tensor: TensorIr, stream: StreamId): Promise<TypedArray> {
    const binding = handle.memory.binding();
    const layout = { shape: [...handle.shape], strides: [...handle.strides], offset: handle.offset };
    const dtype = handle.dtype;
    const [bytes] = await this.client.read([binding], stream);
    invariant(bytes !== undefined, "a read of one binding returns one buffer");
    return gatherDense(bytes, dtype, layout, tensor.dtype);
  }

  /** As {@link CpuRuntime.read}, synchronously (throws instead of rejecting). */
  readSync(handle: CpuHandle, tensor: TensorIr, stream: StreamId): TypedArray | undefined {
    const bytes = this.client.readSync([handle.memory.binding()], stream);
    const first = bytes?.[0];
    return first === undefined ? undefined : gatherDense(first, handle.dtype, handle, tensor.dtype);
  }

  /**
   * The device-side failure claiming `handle`'s memory, if any (the engine's
   * `FusionRuntime.handleError` hook): `Client.failureOf` over the handle's whole allocation, so
   * the answer is the `TaintedReadError` a read of it would reject with, and `undefined` when the
   * memory is clean. Synchronous, records nothing.
   *
   * @remarks
   * **Why.** The host server skips a launch whose read set holds a tainted byte and taints all its
   * writes. A fused block binds every input whole, so one failed input would taint the outputs
   * the block computes independently of it; told of the failure, the engine runs the block op by
   * op and only the launches that read the failure are skipped.
   * **Whole allocation, not the view's elements.** Every launch binds an input's allocation whole
   * (`BindingSet`), and a read reads it whole, so a claim anywhere in it skips the launch and fails
   * the read: asking about the whole allocation answers exactly "would a launch reading this
   * handle be skipped". (CPU kernels write whole allocations, so a view never sees a partial claim
   * in practice.)
   */
  handleError(handle: CpuHandle): Error | undefined {
    return this.client.failureOf([handle.memory.binding()]);
  }

  /**
   * Whether a failure may claim some byte now (the `FusionRuntime.deviceClaims` hook:
   * `Client.hasClaims`). While it answers `false` the engine skips {@link CpuRuntime.handleError}
   * for every input of every fused block: one O(1) question per block instead of a failure lookup
   * per input (the serving workload asked ~60 per request, each allocating its binding).
   */
  deviceClaims(): boolean {
    return this.client.hasClaims();
  }

  /** Resolves once `stream`'s work has run (at once on the synchronous host server). */
  sync(stream: StreamId): Promise<void> {
    return this.client.sync(stream);
  }

  /** The host server's memory report. */
  memoryUsage(): MemoryUsage {
    return this.client.memoryUsage();
  }

  /** What a fused block's `BlockFallback` runs its ops and copies its outputs with. */
  readonly fallbackPort: BlockFallbackPort<CpuHandle> = {
    runtime: this,
    retain: (handle) => this.retainHandle(handle),
    copy: (src, dst, stream) => this.copyInto(src, dst, stream),
    binding: (dst) => dst.memory.binding(),
  };

  /** Records a launch on `stream` copying `src` (any layout) into `dst`'s layout (same shape). */
  copyInto(src: CpuHandle, dst: CpuHandle, stream: StreamId): void {
    const builder = new ElementwiseProgramBuilder(dst.shape);
    builder.output(builder.input(src.memory, src.dtype, src), dst.memory, dst.dtype, dst);
    const built = builder.build(this.runner);
    this.launch(built.kernel, built.bindings, stream, built.uniforms);
  }

  /** A dense, freshly allocated handle of `shape` on `stream` (one reference, owned by the caller). */
  allocate(shape: readonly number[], dtype: DType, stream: StreamId): CpuHandle {
    return denseHandle(this.client.empty(allocationBytes(numElements(shape), dtype), stream), shape, dtype);
  }

  /** Launches one CPU kernel on `stream` (the executing block's: passed, never ambient). */
  launch(kernel: CpuKernel, bindings: BindingSet | ReturnType<BindingSet["bindings"]>, stream: StreamId, uniforms?: Uint8Array): void {
    this.#launches++;
    const list = bindings instanceof BindingSet ? bindings.bindings() : bindings;
    this.client.launch(kernel, [1, 1, 1], list, uniforms, stream);
  }

  /** Runs one operation unfused (see the type doc); throws typed errors for what cannot run. */
  executeOperation(op: OperationIr, ctx: ExecutionContext<CpuHandle>): void {
    if (op.kind === "drop") {
      // The most frequent operation (every disposed tensor): no array of its one tensor.
      if (op.tensor.dtype === "f16") rejectF16(op.kind);
      this.stats.unfusedOperations++;
      ctx.handles.removeHandle(op.tensor.id);
      return;
    }
    for (const node of operationNodes(op)) if (node.dtype === "f16") rejectF16(op.kind);
    this.stats.unfusedOperations++;
    if (op.kind !== "init") {
      const out = this.#execute(op, ctx);
      ctx.handles.registerHandle(op.out.id, out);
    }
    for (const input of operationInputs(op)) ctx.handles.free(input);
  }

  /** Runs one operation; returns its output's handle (one reference, for the container). */
  #execute(op: Exclude<OperationIr, { kind: "init" | "drop" }>, ctx: ExecutionContext<CpuHandle>): CpuHandle {
    const get = (t: TensorIr): CpuHandle => ctx.handles.getHandle(t);
    if (isElementwise(op)) {
      const builder = new ElementwiseProgramBuilder(op.out.shape);
      const out = this.allocate(op.out.shape, op.out.dtype, ctx.stream);
      const reg = appendElementwise(builder, op, (t) => {
        const h = get(t);
        return builder.input(h.memory, h.dtype, h);
      });
      builder.output(reg, out.memory, out.dtype, out);
      const built = builder.build(this.runner);
      this.launch(built.kernel, built.bindings, ctx.stream, built.uniforms);
      return out;
    }
    switch (op.kind) {
      case "full": {
        const out = this.allocate(op.out.shape, op.out.dtype, ctx.stream);
        this.launch(fullKernel(op.out.shape, op.out.dtype), [{ binding: out.memory.binding(), access: "write" }], ctx.stream, encodeUniforms([op.value]));
        return out;
      }
      case "arange": {
        const out = this.allocate(op.out.shape, op.out.dtype, ctx.stream);
        this.launch(arangeKernel(op.out.shape, op.out.dtype), [{ binding: out.memory.binding(), access: "write" }], ctx.stream, encodeUniforms([op.start, op.step]));
        return out;
      }
      case "random": {
        const out = this.allocate(op.out.shape, op.out.dtype, ctx.stream);
        this.launch(randomKernel(op.out.shape, op.out.dtype, op.distribution), [{ binding: out.memory.binding(), access: "write" }], ctx.stream, encodeUniforms([op.seed, op.a, op.b]));
        return out;
      }
      case "reduce": {
        const input = get(op.input);
        const extent = op.axes.reduce((n, a) => n * (op.input.shape[a] ?? 1), 1);
        const noIdentity = op.op === "max" || op.op === "min" || op.op === "argmax" || op.op === "argmin";
        if (extent === 0 && noIdentity) {
          throw new InvalidOperationError(`reduce ${op.op}`, `axes [${op.axes.join(", ")}] of shape [${op.input.shape.join(", ")}] are empty and ${op.op} has no identity; reduce a non-empty axis`);
        }
        // A kernel per layout, kept (bounded): the same reduce launched again reuses it.
        const out = this.allocate(op.out.shape, op.out.dtype, ctx.stream);
        const kernel = this.#reduces.kernel(op.op, op.axes, input, op.out.shape, op.out.dtype);
        this.launch(kernel, [{ binding: input.memory.binding(), access: "read" }, { binding: out.memory.binding(), access: "write" }], ctx.stream);
        return out;
      }
      case "matmul":
        return this.#kernel(ctx.stream, op.out, [get(op.lhs), get(op.rhs)], (o, out, w) => matmulKernel(o[0]!, o[1]!, out, w));
      case "concat":
        return this.#kernel(ctx.stream, op.out, op.inputs.map(get), (o, out, w) => concatKernel(o, op.axis, out, w));
      case "gather":
        return this.#kernel(ctx.stream, op.out, [get(op.input), get(op.indices)], (o, out, w) => gatherKernel(o[0]!, o[1]!, op.axis, out, w));
      case "sort":
        return this.#kernel(ctx.stream, op.out, [get(op.input)], (o, out, w) => sortKernel(o[0]!, op.axis, op.descending, op.output, out, w));
      case "scan":
        return this.#kernel(ctx.stream, op.out, [get(op.input)], (o, out, w) => scanKernel(op.op, o[0]!, op.axis, out, w));
      case "scatter":
        return this.#kernel(ctx.stream, op.out, [get(op.input), get(op.indices), get(op.src)], (o, out, w) => scatterKernel(op.op, o[0]!, o[1]!, o[2]!, op.axis, out, w));
      case "pad": {
        if (op.padding.some(([before, after]) => before < 0 || after < 0)) {
          throw new InvalidOperationError("pad", `padding [${op.padding.map((p) => `[${p.join(", ")}]`).join(", ")}] has a negative amount; use slice to remove elements`);
        }
        const input = get(op.input);
        return this.#kernel(ctx.stream, op.out, [input], (o, out, w) => padKernel(o[0]!, op.padding, out, w), [op.value]);
      }
      case "reshape": {
        const input = get(op.input);
        if (isDense(input)) {
          input.memory.retain();
          return withLayout(input, denseLayout(op.out.shape, input.offset));
        }
        const copy = this.#copyDense(input, ctx.stream);
        return withLayout(copy, denseLayout(op.out.shape, copy.offset));
      }
      case "permute": {
        const input = get(op.input);
        input.memory.retain();
        return withLayout(input, permuteLayout(input, op.axes));
      }
      case "expand": {
        const input = get(op.input);
        input.memory.retain();
        return withLayout(input, expandLayout(input, op.out.shape));
      }
      case "slice": {
        const input = get(op.input);
        input.memory.retain();
        return withLayout(input, sliceLayout(input, op.ranges));
      }
      default:
        return op satisfies never;
    }
  }

  /** A dense copy of `input` (a zero-step elementwise program). */
  #copyDense(input: CpuHandle, stream: StreamId): CpuHandle {
    const out = this.allocate(input.shape, input.dtype, stream);
    this.copyInto(input, out, stream);
    return out;
  }

  /** Binds `inputs` (read) and a fresh dense output (write), builds the kernel, launches it. */
  #kernel(
    stream: StreamId,
    outIr: TensorIr,
    inputs: readonly CpuHandle[],
    make: (operands: KernelOperand[], out: KernelOperand, writable: boolean[]) => CpuKernel,
    scalars?: readonly number[],
  ): CpuHandle {
    const out = this.allocate(outIr.shape, outIr.dtype, stream);
    const set = new BindingSet();
    const operands = inputs.map((h) => ({ binding: set.bind(h.memory, "read"), dtype: h.dtype, layout: h }));
    const outOperand = { binding: set.bind(out.memory, "write"), dtype: out.dtype, layout: out };
    const kernel = make(operands, outOperand, set.writable());
    this.launch(kernel, set, stream, scalars === undefined ? undefined : encodeUniforms(scalars));
    return out;
  }
}

/**
 * Gathers a strided view out of `bytes` (a copy the server made for this read) into a dense
 * row-major array of `dtype`: the copy itself when the view is all of it, one `slice` when the
 * view is dense, else a strided gather run by run.
 */
function gatherDense(bytes: Uint8Array, stored: DType, layout: { shape: readonly number[]; strides: readonly number[]; offset: number }, dtype: DType): TypedArray {
  const src = new KernelMemory(Array.of(bytes), Array.of(false)).array(0, stored); // not literals: one per read
  const n = numElements(layout.shape);
  if (stored === dtype && isContiguous(layout)) {
    return layout.offset === 0 && n === src.length ? src : src.slice(layout.offset, layout.offset + n);
  }
  const out = allocateTyped(dtype, n);
  const plan = planLoop(layout.shape, [layout.strides]);
  const step = plan.strides[plan.rank - 1] as number;
  let o = 0;
  forEachRun(plan, [layout.offset], (start, count) => {
    const p = start[0] as number;
    for (let i = 0; i < count; i++) out[o++] = src[p + i * step] as number;
  });
  return out;
}
