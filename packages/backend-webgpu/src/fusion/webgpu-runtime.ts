/// <reference types="@webgpu/types" preserve="true" />
import { UnsupportedError, invariant, type StreamId } from "@weft/environment";
import {
  BaseFusionRuntime,
  contiguousStrides,
  deviceBytesPerElement,
  isContiguous,
  type BlockFallbackPort,
  numElements,
  type ExecutionContext,
  type OperationFuser,
  type OperationIr,
  type RuntimeCapabilities,
  type TensorData,
  type TensorIr,
  type TypedArray,
  type RuntimeStats,
} from "@weft/fusion";
import { Client, TuneCache, Tuner, type TuneProgress, type TuneStore, type TunableSet } from "@weft/runtime";
import type { ComputeServer, MemoryUsage } from "@weft/server";
import type { CacheStats } from "@weft/environment";
import { WebGpuServer } from "../server/webgpu-server.js";
import { matmulTunableSet, type MatmulTuneInputs, type MatmulTuneOutput, type MatmulValues } from "../autotune/matmul-tunable.js";
import { configName, MATMUL_CONFIGS, splitApplies, type MatmulConfig } from "../kernels/matmul.js";
import { ExprGraph } from "../codegen/wgsl/expr.js";
import { deviceProfile, type DeviceProfile, type ProfileLimits } from "../codegen/wgsl/types.js";
import {
  contiguousHandle,
  expandView,
  permuteView,
  releaseWebGpuHandle,
  reshapeView,
  sliceView,
  type WebGpuHandle,
} from "../handle/webgpu-handle.js";
import type { WgslKernel } from "../kernel.js";
import { elementwiseKernel, elementwiseKey, elementwiseUniforms, type ElementwiseSpec } from "../kernels/elementwise.js";
import { newCounters, resetCounters, type RuntimeCounters } from "./counters.js";
import { ElementwiseFuser, MatmulChainFuser, MatmulFuser, MatmulSoftmaxFuser, ReduceFuser, SoftmaxFuser, type FuserKit } from "./fusers.js";
import { copyInto, copyIntoSlot, denseCopy } from "./distinct-bindings.js";
import { MAX_LAUNCH_ENTRIES } from "./elementwise-launch-cache.js";
import { Launcher } from "./launcher.js";
import { bindingOf, bytesOf, runElementwiseBlock } from "./run-elementwise.js";
import { chooseMatmulConfig, runMatmulBlock, type MatmulChoice, type MatmulChooser } from "./run-matmul.js";
import { runGather } from "./run-gather.js";
import { runScan, runScatter } from "./run-scan.js";
import { runSort } from "./run-sort.js";
import { runReduceBlock } from "./run-reduce.js";
import type { WebGpuOptimization } from "./optimization.js";

/** How the runtime autotunes (matmul tile configurations); every field has a default. */
export interface WebGpuAutotuneOptions {
  /** Where results live; default a {@link TuneCache} for the runtime's adapter over `store`. */
  readonly cache?: TuneCache;
  /** The persistent store of the default cache; default `defaultTuneStore()` (a file in Node). */
  readonly store?: TuneStore;
  /** Untimed runs per candidate (default: the `Tuner`'s, 2). */
  readonly warmups?: number;
  /** Timed runs per candidate (default: the `Tuner`'s, 5). */
  readonly samples?: number;
  /** Progress of every tuning (start, each candidate, done, failed). */
  readonly onProgress?: (progress: TuneProgress) => void;
  /**
   * Products with fewer multiply-adds than this run the heuristic's configuration without tuning:
   * their launch overhead dwarfs any tiling difference. Default 2^15.
   */
  readonly minWork?: number;
}

/** What {@link WebGpuRuntime} needs: a server that runs WGSL kernels, and the device's limits. */
export interface WebGpuRuntimeOptions {
  readonly server: ComputeServer<WgslKernel>;
  readonly limits: ProfileLimits;
  readonly features: { has(name: string): boolean };
  /** Whether `fusers()` offers fusers (default true); false runs every op unfused. */
  readonly fusion?: boolean;
  /** The client every call goes through; default `new Client(server)` (unbound, shared service). */
  readonly client?: Client<WgslKernel>;
  /**
   * The adapter tuning results are recorded for (description and backend, e.g.
   * `"NVIDIA H200 (vulkan)"`): part of every autotune cache key. Default `server.name`.
   */
  readonly adapter?: string;
  /** Autotune options, or `false` to always use the heuristic configuration (no tuning). */
  readonly autotune?: false | WebGpuAutotuneOptions;
  /**
   * The 1-D workgroup size of elementwise, reduce and gather kernels (a power of two, capped by
   * the device): default `PREFERRED_WORKGROUP_SIZE`. Tests pass a small one so few elements cross
   * the thresholds that large sizes cross otherwise (a second reduction pass, more workgroups than
   * one dispatch dimension holds).
   */
  readonly workgroupSize?: number;
  /** Called once by {@link WebGpuRuntime.dispose} after the server was destroyed (e.g. `device.destroy()`). */
  readonly onDispose?: () => void;
}

/**
 * How long the device must go without request work before a background tuning runs its next
 * candidate (see `Tuner`, "Background tunings"): long enough to see the next request of a stream
 * of them, short enough that tuning finishes soon after the load stops.
 */
const IDLE_QUIET_MS = 10;

/** Default {@link WebGpuAutotuneOptions.minWork}. */
const AUTOTUNE_MIN_WORK = 1 << 15;

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
  /** `f16` only with `shader-f16`; reads always wait for the device. */
  readonly capabilities: RuntimeCapabilities;
  readonly server: ComputeServer<WgslKernel>;
  readonly profile: DeviceProfile;
  /** Launch, fusion, elision, in-place and cache counters (see {@link RuntimeCounters}). */
  readonly counters: RuntimeCounters = newCounters();
  readonly fusion: boolean;
  /**
   * The client every launch, allocation, read and sync goes through: process modes
   * (`withProcessMode('compile-and-autotune', …)`) and `StreamModeOverride`s on it apply.
   */
  readonly client: Client<WgslKernel>;
  /** The matmul tuner; `undefined` with `autotune: false`. */
  readonly tuner: Tuner<WgslKernel> | undefined;
  readonly #launcher: Launcher;
  /** `read` calls not settled yet (a request's tail); never more than the reads in flight. */
  #readsInFlight = 0;
  readonly #minWork: number;
  /**
   * The matmul tunable sets by fallback configuration name: one per configuration the heuristic can
   * pick (so `choose` falls back to the heuristic's pick), all under one set name, so they share
   * results. Bounded by `MATMUL_CONFIGS.length`.
   */
  readonly #matmulSets = new Map<string, TunableSet<MatmulTuneInputs, MatmulTuneOutput, MatmulValues, WgslKernel>>();
  readonly #chooseMatmul: MatmulChooser;
  readonly #onDispose: (() => void) | undefined;
  #disposed = false;

  constructor(options: WebGpuRuntimeOptions) {
    super();
    this.server = options.server;
    this.profile = options.workgroupSize === undefined ? deviceProfile(options.limits, options.features) : deviceProfile(options.limits, options.features, options.workgroupSize);
    this.capabilities = { dtypes: this.profile.f16 ? ["f32", "i32", "u32", "bool", "f16"] : ["f32", "i32", "u32", "bool"], reads: "async" };
    this.fusion = options.fusion ?? true;
    this.client = options.client ?? new Client(this.server);
    this.#launcher = new Launcher(this.client, this.profile, this.counters);
    const autotune = options.autotune ?? {};
    this.#minWork = autotune === false ? Number.POSITIVE_INFINITY : (autotune.minWork ?? AUTOTUNE_MIN_WORK);
    if (autotune === false) {
      this.tuner = undefined;
    } else {
      const cache =
        autotune.cache ??
        new TuneCache({ adapter: options.adapter ?? this.server.name, ...(autotune.store === undefined ? {} : { store: autotune.store }) });
      this.tuner = new Tuner(this.client, {
        cache,
        ...(autotune.warmups === undefined ? {} : { warmups: autotune.warmups }),
        ...(autotune.samples === undefined ? {} : { samples: autotune.samples }),
        ...(autotune.onProgress === undefined ? {} : { onProgress: autotune.onProgress }),
        // Background tunings measure only while no request runs (docs/performance.md, "Autotuning").
        idle: () => this.#whenIdle(),
      });
      // Persisted results become visible to the synchronous `choose` once loaded.
      void cache.load();
    }
    const tuner = this.tuner;
    this.#chooseMatmul = {
      choose: (lhs, rhs, dtype, outShape) => this.#matmulConfig(lhs, rhs, dtype, outShape),
      get generation() {
        return tuner?.generation ?? 0;
      },
    };
    this.#onDispose = options.onDispose;
  }

  /**
   * The matmul {@link TunableSet} whose fallback is `fallback` (see `#matmulSets`): what the runtime
   * hands to `Tuner.choose`, and what tests and `weft.warmup` tune directly.
   */
  matmulTunableSet(fallback: MatmulConfig = chooseMatmulConfig(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, this.profile)) {
    const name = configName(fallback);
    let set = this.#matmulSets.get(name);
    if (set === undefined) {
      set = matmulTunableSet({
        profile: this.profile,
        plan: (key, build) => this.#launcher.plan(key, build),
        fallback,
        ...(this.tuner === undefined ? {} : { prepareWith: this.tuner.measurementClient }),
      });
      this.#matmulSets.set(name, set);
    }
    return set;
  }

  /**
   * Resolves once the device has had no request work for {@link IDLE_QUIET_MS}: no read in flight
   * and no launch of a request's operation (tuning measurements launch through their own client
   * and do not count). What background tunings wait for before each candidate.
   */
  async #whenIdle(): Promise<void> {
    for (;;) {
      const launches = this.counters.launches;
      await new Promise((resolve) => setTimeout(resolve, IDLE_QUIET_MS));
      if (this.#readsInFlight === 0 && this.counters.launches === launches) return;
    }
  }

  /** Resolves once every background tuning started so far has settled (tests, warmup). */
  async autotuneIdle(): Promise<void> {
    await this.tuner?.idle();
  }

  /**
   * The tile configuration of an `lhs · rhs` product: the tuner's cached winner for its key, else
   * the heuristic's pick while tuning runs in the background (`Tuner.choose`); small products and
   * `autotune: false` use the heuristic only.
   */
  #matmulConfig(lhs: WebGpuHandle, rhs: WebGpuHandle, dtype: TensorIr["dtype"], outShape: readonly number[]): MatmulChoice {
    const rank = outShape.length;
    const m = outShape[rank - 2] ?? 1;
    const n = outShape[rank - 1] ?? 1;
    const k = lhs.shape[lhs.shape.length - 1] ?? 1;
    let batches = 1;
    for (let d = 0; d < rank - 2; d++) batches *= outShape[d] ?? 1;
    const heuristic = chooseMatmulConfig(m, n, this.profile, batches, dtype);
    const tuner = this.tuner;
    if (tuner === undefined || m * n * k < this.#minWork) return { config: heuristic };
    const set = this.matmulTunableSet(heuristic);
    const chosen = tuner.choose(set, {
      lhs: { memory: lhs.memory, layout: { shape: lhs.shape, strides: lhs.strides, offset: lhs.offset } },
      rhs: { memory: rhs.memory, layout: { shape: rhs.shape, strides: rhs.strides, offset: rhs.offset } },
      dtype,
      outShape,
    });
    // A winner tuned for this key's anchor may split K more ways than this product's K has steps.
    const config = MATMUL_CONFIGS.find((c) => configName(c) === chosen.name);
    // The heuristic's kernels stand in while the winner's compile (runMatmulBlock, "A winner never stalls").
    return config !== undefined && splitApplies(config, k) && config !== heuristic ? { config, standIn: heuristic } : { config: heuristic };
  }

  /**
   * What the backend holds and did (`weft.stats()`): pipelines held by the server now, kernels
   * generated, launches, submits and every bounded cache (pipelines, bind groups, generated
   * plans, autotune results).
   */
  resourceStats(): RuntimeStats {
    const caches: Record<string, CacheStats> = { kernelPlans: this.#launcher.planStats() };
    let pipelines = 0;
    let submits = 0;
    const server = this.server;
    if (server instanceof WebGpuServer) {
      const st = server.stats();
      pipelines = st.pipelinesHeld;
      submits = st.submits;
      caches["pipelines"] = server.pipelineStats();
      caches["bindGroups"] = server.bindGroupStats();
    }
    const tune = this.tuner?.cache.stats();
    if (tune !== undefined) caches["autotune"] = tune;
    caches["launchSignatures"] = {
      size: 0,
      capacity: MAX_LAUNCH_ENTRIES,
      hits: 0,
      misses: 0,
      evictions: this.counters.launchCacheEvictions,
    };
    return { pipelines, kernelsGenerated: this.counters.kernelsGenerated, launches: this.counters.launches, submits, caches };
  }

  /** Gives every free page, retained buffer and kept staging buffer back (`weft.releaseUnused()`). */
  releaseUnused(): void {
    if (this.server instanceof WebGpuServer) this.server.releaseUnused();
  }

  /**
   * Destroys the server (every page, pipeline and bind group; later calls throw
   * `DeviceLostError`), then runs `onDispose` (the owner destroys the `GPUDevice`). Idempotent.
   */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    if (this.server instanceof WebGpuServer) this.server.destroy();
    this.#onDispose?.();
  }

  /** Zeroes {@link WebGpuRuntime.counters}. */
  resetCounters(): void {
    resetCounters(this.counters);
  }

  fusers(): OperationFuser<WebGpuOptimization>[] {
    if (!this.fusion) return [];
    const kit: FuserKit = { launcher: this.#launcher, chooseMatmul: this.#chooseMatmul, maxBindings: this.profile.maxStorageBuffers - 1, fallback: this.fallbackPort };
    // Appended, never inserted: a saved plan names its fusers by index.
    return [new ElementwiseFuser(kit), new ReduceFuser(kit), new MatmulFuser(kit), new SoftmaxFuser(kit), new MatmulSoftmaxFuser(kit), new MatmulChainFuser(kit)];
  }

  /**
   * What a fused block's `BlockFallback` runs its ops and copies its outputs with (see
   * `WebGpuOptimization`): a block whose kernel the device rejects re-runs op by op.
   */
  readonly fallbackPort: BlockFallbackPort<WebGpuHandle> = {
    runtime: this,
    retain: (handle) => this.retainHandle(handle),
    // Holds, not references: a group waiting for its pipelines must not take in-place writes
    // away from the blocks recorded after it (see `BlockFallback`).
    hold: (handle) => handle.memory.hold(),
    // A packed output (a dense view inside its block's pack, see `planPacks`) is copied into, and
    // named by, its own bytes only: its pack-mates are other tensors.
    copy: (src, dst, stream) =>
      ownsAllocation(dst) ? copyInto(this.#launcher, src, dst, undefined, stream, "fallback copy") : copyIntoSlot(this.#launcher, src, dst, stream, "fallback copy"),
    binding: (dst) =>
      ownsAllocation(dst) ? bindingOf(dst, "write").binding : dst.memory.binding(dst.offset * deviceBytesPerElement(dst.dtype), bytesOf(dst.shape, dst.dtype)),
  };

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
        return runMatmulBlock(launcher, ctx, [op], false, this.#chooseMatmul);
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
      case "gather":
        return runGather(launcher, ctx, op);
      case "sort":
        return runSort(launcher, ctx, op);
      case "scan":
        return runScan(launcher, ctx, op);
      case "scatter":
        return runScatter(launcher, ctx, op);
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

  /**
   * The device-side failure claiming `handle`'s memory, if any (the engine's
   * `FusionRuntime.handleError` hook): `Client.failureOf` over the binding every launch makes of
   * the handle (`bindingOf`: its whole allocation), so it answers exactly "would a launch reading
   * this handle be skipped". Synchronous, records nothing; `undefined` while the server does not
   * implement `ComputeServer.failureOf` (the engine then keeps fusing such blocks whole).
   */
  handleError(handle: WebGpuHandle): Error | undefined {
    return this.client.failureOf([bindingOf(handle, "read").binding]);
  }

  /**
   * Whether a deferred check not settled yet (a `gather`'s index check) claims `handle`'s bytes
   * (the `FusionRuntime.handlePending` hook): `Client.pendingOf` over the binding a launch makes.
   */
  handlePending(handle: WebGpuHandle): boolean {
    return this.client.pendingOf([bindingOf(handle, "read").binding]);
  }

  /** Whether a failure or a check may claim some bytes (the `FusionRuntime.deviceClaims` hook: `Client.hasClaims`). */
  deviceClaims(): boolean {
    return this.client.hasClaims();
  }

  upload(data: TensorData, stream: StreamId): WebGpuHandle {
    let bytes: Uint8Array;
    if (data.dtype === "bool") {
      const u = Uint32Array.from(data.data as Uint8Array, (v) => (v !== 0 ? 1 : 0));
      bytes = new Uint8Array(u.buffer);
    } else {
      bytes = new Uint8Array(data.data.buffer, data.data.byteOffset, data.data.byteLength);
    }
    const memory = bytes.byteLength === 0 ? this.client.empty(4, stream) : this.client.create(bytes, stream);
    return contiguousHandle(memory, data.shape, data.dtype);
  }

  // One async function (not a counting wrapper around another): under promise hooks (an
  // `AsyncLocalStorage` in the process, as `Stream.spawn` uses) every async call and every await
  // allocates a promise, and a served request reads once.
  async read(handle: WebGpuHandle, tensor: TensorIr, stream: StreamId, into?: TypedArray): Promise<TypedArray> {
    this.#readsInFlight++;
    let dense: WebGpuHandle | undefined;
    try {
      const n = numElements(tensor.shape);
      if (n === 0) {
        // No element, but the read still settles with the failure claiming the memory, if any
        // (as on the CPU, whose reads read the whole allocation): an empty tensor computed from a
        // failed op rejects like any other.
        await this.client.read([handle.memory.binding()], stream);
        return fromBytes(new Uint8Array(0), tensor);
      }
      // A dense handle at an offset (a packed output, a leading slice) is read in place when its
      // bytes start on a word (4-byte elements); otherwise from a dense copy.
      const inPlace = isContiguous(handle) && (handle.offset === 0 || deviceBytesPerElement(handle.dtype) === 4);
      dense = inPlace ? undefined : this.#contiguous(handle, stream);
      const source = dense ?? handle;
      const start = dense === undefined ? handle.offset * deviceBytesPerElement(handle.dtype) : 0;
      const size = bytesOf(tensor.shape, tensor.dtype);
      // Caller-owned memory: the server copies the mapped bytes straight into it (bool is stored
      // as u32 words and is narrowed by fromBytes instead).
      const dest = into !== undefined && tensor.dtype !== "bool" && into.byteLength >= size ? new Uint8Array(into.buffer, into.byteOffset, size) : undefined;
      // `Array.of`, not literals: the server keeps them with the pending read (docs/performance.md#allocation-sites).
      const [bytes] = await this.client.read(Array.of(source.memory.binding(start, size)), stream, dest === undefined ? undefined : Array.of(dest));
      invariant(bytes !== undefined, "a read of one binding returns one array");
      return dest !== undefined && bytes === dest ? (into as TypedArray) : fromBytes(bytes, tensor);
    } finally {
      if (dense !== undefined) releaseWebGpuHandle(dense);
      this.#readsInFlight--;
    }
  }

  readSync(_handle: WebGpuHandle, _tensor: TensorIr, _stream: StreamId): TypedArray | undefined {
    return undefined;
  }

  async sync(stream: StreamId): Promise<void> {
    // The server's sync submits (shared with every sync of the turn: docs/performance.md#shared-submits).
    await this.client.sync(stream);
  }

  memoryUsage(): MemoryUsage {
    return this.client.memoryUsage();
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
    return denseCopy(this.#launcher, handle, stream);
  }

  /** Copies `src` into `dst`'s memory at `layout` (default: dense). */
  #copyInto(src: WebGpuHandle, dst: WebGpuHandle, layout: ElementwiseSpec["outputs"][number]["layout"], stream: StreamId, label: string): void {
    copyInto(this.#launcher, src, dst, layout, stream, label);
  }

  /** Fills `dst` (dense) with `value`. */
  #fill(dst: WebGpuHandle, value: number, stream: StreamId): void {
    if (numElements(dst.shape) === 0) return;
    const graph = new ExprGraph();
    const node = graph.param(value, dst.dtype);
    const spec: ElementwiseSpec = { shape: dst.shape, graph, label: "fill", inputs: [], outputs: [{ node, dtype: dst.dtype }] };
    const key = elementwiseKey(spec, this.profile);
    const plan = this.#launcher.plan(key, () => elementwiseKernel(spec, this.profile, key));
    this.#launcher.launch(plan, [bindingOf(dst, "write")], stream, elementwiseUniforms(spec));
  }
}

/**
 * Converts device bytes to the host array of `tensor.dtype` (bool: `u32` → `Uint8Array`).
 *
 * @remarks
 * **No second copy.** The server hands back a fresh array per binding (its one copy out of the
 * mapped staging buffer), so the typed array is a view of those bytes when they are 4-byte aligned;
 * only a misaligned array is copied. For a 64 MB readback this saves a 64 MB host copy.
 */
/** Whether `handle` is dense at offset 0 over an allocation of exactly its bytes (not a packed output or a view). */
function ownsAllocation(handle: WebGpuHandle): boolean {
  return handle.offset === 0 && isContiguous(handle) && handle.memory.size === bytesOf(handle.shape, handle.dtype);
}

function fromBytes(bytes: Uint8Array, tensor: TensorIr): TypedArray {
  const n = numElements(tensor.shape);
  const aligned = bytes.byteOffset % 4 === 0;
  const buffer = aligned ? bytes.buffer : bytes.slice().buffer;
  const at = aligned ? bytes.byteOffset : 0;
  switch (tensor.dtype) {
    case "f32":
      return new Float32Array(buffer, at, n);
    case "i32":
      return new Int32Array(buffer, at, n);
    case "u32":
      return new Uint32Array(buffer, at, n);
    case "f16":
      return new Uint16Array(buffer, at, n);
    case "bool":
      return Uint8Array.from(new Uint32Array(buffer, at, n), (v) => (v !== 0 ? 1 : 0));
    default:
      throw new UnsupportedError(`reading dtype ${String(tensor.dtype)}`);
  }
}
