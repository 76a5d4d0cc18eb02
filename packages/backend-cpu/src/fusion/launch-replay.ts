/**
 * What the CPU launch caches of the fused optimizations share (`ElementwiseOptimization`,
 * `MatmulEpilogueOptimization`): their common base (`ReplayedOptimization`: look up, replay
 * or decide, and the end of a replay), where a block's tensors are in every execution's
 * operations, the layout signature an execution is looked up by, the bounded entries, and how a
 * replayed launch binds its memories. The CPU counterpart of `backend-webgpu`'s `launch-signature.ts`; see
 * docs/performance.md ("Launch replay on the CPU") for the design and figures.
 *
 * @module
 */
import { invariant } from "@weft/environment";
import type { BlockFallbackPort, DType, ExecutionContext, OperationIr, Optimization, TensorId, TensorIr, TensorLocator, TensorStatus } from "@weft/fusion";
import { BlockFallback, locatedTensor, locateTensor, producedAt, producerIndex, sameKinds } from "@weft/fusion";
import { kernelBinding, type BindingAccess, type FallbackGap, type KernelBinding, type LaunchFallback, type MemoryHandle, type ServerError } from "@weft/server";
import type { CpuHandle } from "../handle/cpu-handle.js";
import { writeUniforms } from "../kernels/elementwise-ops.js";
import type { CpuRuntime } from "../runtime/cpu-runtime.js";

/** Most layout signatures one optimization's launch cache keeps (oldest dropped first). */
export const MAX_LAUNCH_ENTRIES = 8;

/**
 * What never changes between executions of one optimization, derived from the first one's
 * {@link scanBlock}-style maps: the op kinds (the guard), the external inputs (where, and whether
 * each dies in the block), the written outputs (the producing op of each) and the elided count.
 */
export interface BlockStructure {
  readonly kinds: readonly OperationIr["kind"][];
  /** External inputs in first-use order (the order of `BlockScan.external`). */
  readonly inputs: readonly TensorLocator[];
  /** Per input, whether its latest status is `ReadWrite` (its handle is removed after the launch). */
  readonly dies: readonly boolean[];
  /** Op index of each written output (latest status not `ReadWrite`), in production order. */
  readonly written: readonly number[];
  /** Produced tensors never written (write elision). */
  readonly elided: number;
}

/** The {@link BlockStructure} of `ops` from their scan (`last`, `produced`, `external`). */
export function blockStructure(
  ops: readonly OperationIr[],
  last: ReadonlyMap<TensorId, TensorStatus>,
  produced: ReadonlyMap<TensorId, TensorIr>,
  external: ReadonlyMap<TensorId, TensorIr>,
): BlockStructure | undefined {
  const inputs: TensorLocator[] = [];
  const dies: boolean[] = [];
  for (const id of external.keys()) {
    const at = locateTensor(ops, id);
    if (at === undefined) return undefined;
    inputs.push(at);
    dies.push(last.get(id) === "ReadWrite");
  }
  const written: number[] = [];
  let elided = 0;
  for (const id of produced.keys()) {
    if (last.get(id) === "ReadWrite") {
      elided++;
      continue;
    }
    const index = producerIndex(ops, id);
    if (index < 0) return undefined;
    written.push(index);
  }
  return { kinds: ops.map((o) => o.kind), inputs, dies, written, elided };
}

/** Where {@link signatureOf} finds the inputs' handles (an execution's `HandleContainer`). */
export interface HandleLookup {
  getHandleRef(id: TensorId): CpuHandle | undefined;
}

const DTYPE_CODE: Record<DType, number> = { f32: 0, f16: 1, i32: 2, u32: 3, bool: 4 };

/**
 * Fills `scratch` with the external inputs' handles and the layout signature of one execution:
 * every producing op's output shape, then per input its dtype, shape, strides, offset and
 * `canMut()`. With the structure (fixed per plan) these are everything a full execution's
 * decisions depend on: the reference shape and the empty-output case, the loop plan, the kernel
 * key, the in-place choice (dying, `canMut`, dense, reference shape, bytes per element). Values
 * (scalars, clamp bounds) are not part of it: they travel as uniforms. Returns false — not
 * replayable, take the full path — when an input has no handle or two inputs bind one memory
 * (the full path merges their bindings).
 */
export function signatureOf(ops: readonly OperationIr[], structure: BlockStructure, container: HandleLookup, scratch: ReplayScratch): boolean {
  const out = scratch.signature;
  const handles = scratch.handles;
  scratch.size = 0;
  for (const op of ops) {
    if (op.kind === "drop") continue;
    pushDims(scratch, op.out.shape);
  }
  const inputs = structure.inputs;
  for (let k = 0; k < inputs.length; k++) {
    const h = container.getHandleRef(locatedTensor(ops, inputs[k] as TensorLocator).id);
    if (h === undefined) return false;
    for (let j = 0; j < k; j++) if ((handles[j] as CpuHandle).memory === h.memory) return false;
    handles[k] = h;
    out[scratch.size++] = DTYPE_CODE[h.dtype];
    pushDims(scratch, h.shape);
    const strides = h.strides;
    for (let d = 0; d < strides.length; d++) out[scratch.size++] = strides[d] as number;
    out[scratch.size++] = h.offset;
    out[scratch.size++] = h.memory.canMut() ? 1 : 0;
  }
  return true;
}

function pushDims(scratch: ReplayScratch, dims: readonly number[]): void {
  const out = scratch.signature;
  out[scratch.size++] = dims.length;
  for (let d = 0; d < dims.length; d++) out[scratch.size++] = dims[d] as number;
}

/** Whether `held` equals the first `size` values of `signature`. */
function sameSignature(held: readonly number[], signature: readonly number[], size: number): boolean {
  if (held.length !== size) return false;
  for (let i = 0; i < size; i++) if (held[i] !== signature[i]) return false;
  return true;
}

/**
 * What one execution fills to look itself up and replay, reused by every execution of one
 * optimization. Never truncated (`length = 0` would give V8's backing store back and the next
 * execution would grow it again): `size` says how much of `signature` is this execution's, and
 * `handles`/`outputs` are written by index. Bounded by the block's inputs and outputs; the handles
 * it still refers to after an execution are borrowed (they own no memory reference).
 */
export class ReplayScratch {
  /** The current execution's signature: its first `size` values. */
  readonly signature: number[] = [];
  size = 0;
  /** The current execution's external input handles, in structure order (borrowed). */
  readonly handles: CpuHandle[] = [];
  /** A replay's output handles, in structure order. */
  readonly outputs: CpuHandle[] = [];
  /** A replay's uniform values. */
  readonly uniforms: number[] = [];
}

/**
 * The replayable executions of one optimization, by layout signature: at most
 * {@link MAX_LAUNCH_ENTRIES}, the most recent last, the oldest dropped first; and the
 * {@link ReplayScratch} its executions share.
 */
export class LaunchEntries<E> {
  /** Entries, oldest first; at most {@link MAX_LAUNCH_ENTRIES}. */
  readonly #entries: { readonly signature: readonly number[]; readonly entry: E }[] = [];
  readonly scratch = new ReplayScratch();

  /** Number of signatures held. */
  get size(): number {
    return this.#entries.length;
  }

  /** The entry stored under the scratch's signature, newest first. */
  find(): E | undefined {
    const { signature, size } = this.scratch;
    for (let e = this.#entries.length - 1; e >= 0; e--) {
      const held = this.#entries[e];
      if (held !== undefined && sameSignature(held.signature, signature, size)) return held.entry;
    }
    return undefined;
  }

  /** Stores `entry` under a copy of the scratch's signature, dropping the oldest past the cap. */
  remember(entry: E): void {
    this.#entries.push({ signature: this.scratch.signature.slice(0, this.scratch.size), entry });
    if (this.#entries.length > MAX_LAUNCH_ENTRIES) this.#entries.shift();
  }
}

/**
 * Where binding `i` of a decided launch comes from: `>= 0` external input slot, `-1 - j` written
 * output `j`, {@link SCRATCH_SOURCE} the matmul block's scratch product.
 */
export type BindingSource = number;

/** The {@link BindingSource} of a matmul block's scratch product. */
export const SCRATCH_SOURCE = Number.MIN_SAFE_INTEGER;

/**
 * The binding pattern of a launch the full path bound (`memories`, `access` in binding order),
 * as sources: each memory is one of `inputs` (distinct memories), one of `outputs`, or `scratch`.
 */
export function bindingSources(memories: readonly MemoryHandle[], inputs: readonly CpuHandle[], outputs: readonly CpuHandle[], scratch: CpuHandle | undefined): BindingSource[] {
  return memories.map((m) => {
    const slot = inputs.findIndex((h) => h.memory === m);
    if (slot >= 0) return slot;
    const out = outputs.findIndex((h) => h.memory === m);
    if (out >= 0) return -1 - out;
    invariant(scratch !== undefined && scratch.memory === m, "launch cache: every bound memory is an input, an output or the scratch");
    return SCRATCH_SOURCE;
  });
}

/** This execution's bindings for a decided pattern (`sources`, `access`): what the full path would bind. */
export function replayBindings(sources: readonly BindingSource[], access: readonly BindingAccess[], inputs: readonly CpuHandle[], outputs: readonly CpuHandle[], scratch: CpuHandle | undefined): KernelBinding[] {
  // `Array.of` and `kernelBinding`, not `new Array` and literals: one per replay (docs/performance.md#allocation-sites).
  const bindings = Array.of<KernelBinding>();
  for (let i = 0; i < sources.length; i++) {
    const source = sources[i] as number;
    const handle = source >= 0 ? inputs[source] : source === SCRATCH_SOURCE ? scratch : outputs[-1 - source];
    invariant(handle !== undefined, () => `launch cache: binding ${i} has no memory`);
    bindings.push(kernelBinding(handle.memory.binding(), access[i] ?? "read"));
  }
  return bindings;
}

/**
 * This execution's uniforms: the scalars of ops `evaluated` (indices, in the order the full path
 * appended them), encoded as the builder encodes them: `appendElementwise` would have pushed the
 * same values ({@link pushUniforms}).
 */
export function replayUniforms(ops: readonly OperationIr[], evaluated: readonly number[], count: number): Uint8Array {
  const values = new Float64Array(count);
  let at = 0;
  for (let e = 0; e < evaluated.length; e++) at = writeUniforms(ops[evaluated[e] as number] as OperationIr, values, at);
  invariant(at === count, () => `launch cache: ${at} uniforms for a program of ${count}`);
  return new Uint8Array(values.buffer);
}

/**
 * A replayed launch's group fallback: the block's `BlockFallback`, built only when the server
 * runs it — so a launch that runs (every launch but a failing one) takes no reference on its
 * inputs and outputs and builds no fallback object. One per optimization, armed for each replayed
 * launch.
 *
 * @remarks
 * **Why it is safe.** The CPU backend's host server ends a group synchronously: `Client.group`
 * returns only after the fallback was run or discarded. Until then the block's external inputs
 * are still in the execution's container (a block removes them after its launch) and its outputs
 * still hold their references, so a `BlockFallback` built inside `run` takes exactly what one
 * built before the launch would have (the CPU port has no holds). {@link DeferredFallback.settled}
 * checks the assumption after every group: a fallback left armed throws an invariant error.
 */
export class DeferredFallback implements LaunchFallback {
  readonly #port: BlockFallbackPort<CpuHandle>;
  #ctx: ExecutionContext<CpuHandle> | undefined;
  #ops: readonly OperationIr[] | undefined;
  #written: readonly number[] | undefined;
  #outputs: readonly CpuHandle[] | undefined;

  constructor(port: BlockFallbackPort<CpuHandle>) {
    this.#port = port;
  }

  /** Arms it for one launch: the execution, its operations, its written outputs (producing op indices) and their handles. */
  arm(ctx: ExecutionContext<CpuHandle>, ops: readonly OperationIr[], written: readonly number[], outputs: readonly CpuHandle[]): this {
    invariant(this.#ctx === undefined, "a deferred fallback armed twice");
    this.#ctx = ctx;
    this.#ops = ops;
    this.#written = written;
    this.#outputs = outputs;
    return this;
  }

  /** Throws unless the server ran or discarded it (called after `Client.group` returned); disarms it either way. */
  settled(): void {
    const armed = this.#ctx !== undefined;
    this.#disarm();
    invariant(!armed, "a CPU launch group returned before its fallback was run or discarded (the host server ends groups synchronously)");
  }

  run(failure: ServerError): readonly FallbackGap[] {
    const ctx = this.#ctx;
    const ops = this.#ops;
    const written = this.#written;
    const outputs = this.#outputs;
    this.#disarm();
    invariant(ctx !== undefined && ops !== undefined && written !== undefined && outputs !== undefined, "a deferred fallback run while not armed");
    const fallback = new BlockFallback(this.#port, ctx, ops);
    for (let j = 0; j < written.length; j++) fallback.output(producedAt(ops, written[j] as number), outputs[j] as CpuHandle);
    return fallback.run(failure);
  }

  discard(): void {
    this.#disarm();
  }

  #disarm(): void {
    this.#ctx = undefined;
    this.#ops = undefined;
    this.#written = undefined;
    this.#outputs = undefined;
  }
}

/**
 * A fused block of the CPU backend whose launches replay: what `ElementwiseOptimization` and
 * `MatmulEpilogueOptimization` share.
 *
 * @remarks
 * **Execute.** Once the first execution located the block's tensors (`ReplayedOptimization.structure`),
 * an execution with the same op kinds is looked up by its layout signature: a hit replays the
 * remembered launch (`ReplayedOptimization.replay`), a miss takes the full path
 * (`ReplayedOptimization.decide`) and remembers what it decided. Without a structure, or
 * when the signature cannot be taken, the full path runs and nothing is remembered.
 * **Bounded.** At most `MAX_LAUNCH_ENTRIES` signatures per optimization (`LaunchEntries`).
 * **Why one base.** The two blocks differ in what they launch, not in how a launch is looked up
 * and finished: one home for that, so a fix to one replay is a fix to both.
 */
export abstract class ReplayedOptimization<E> implements Optimization<CpuHandle> {
  abstract readonly name: string;
  readonly len: number;
  protected readonly runtime: CpuRuntime;
  /** The block's structure, from its first execution (`undefined` before, or when it cannot be located). */
  protected structure: BlockStructure | undefined;
  /** Replayable executions by layout signature; at most `MAX_LAUNCH_ENTRIES`. */
  protected readonly launches = new LaunchEntries<E>();
  /** The fallback of every replayed launch (armed per launch). */
  protected readonly fallback: DeferredFallback;

  constructor(runtime: CpuRuntime, len: number) {
    this.runtime = runtime;
    this.len = len;
    this.fallback = new DeferredFallback(runtime.fallbackPort);
  }

  /** Number of layout signatures remembered (tests). */
  get launchEntries(): number {
    return this.launches.size;
  }

  execute(ctx: ExecutionContext<CpuHandle>, operations: readonly OperationIr[]): void {
    invariant(operations.length === this.len, () => `${this.name} block of ${this.len} ops executed with ${operations.length}`);
    const launches = this.launches;
    const structure = this.structure;
    if (structure !== undefined && sameKinds(structure.kinds, operations) && signatureOf(operations, structure, ctx.handles, launches.scratch)) {
      const entry = launches.find();
      if (entry !== undefined) {
        this.replay(ctx, operations, structure, entry, launches.scratch.handles);
        return;
      }
      const decided = this.decide(ctx, operations, launches.scratch.handles);
      if (decided !== undefined) launches.remember(decided);
      return;
    }
    this.decide(ctx, operations, undefined);
  }

  /** Replays `entry` for this execution, allocating, binding and counting exactly what `ReplayedOptimization.decide` would. */
  protected abstract replay(ctx: ExecutionContext<CpuHandle>, operations: readonly OperationIr[], structure: BlockStructure, entry: E, inputs: readonly CpuHandle[]): void;

  /**
   * The full path: derives everything from `operations` (and sets `ReplayedOptimization.structure`
   * on the first execution). With `inputs` (this execution's external input handles, in structure
   * order, when its signature allows a replay) returns what it decided for the launch cache.
   */
  protected abstract decide(ctx: ExecutionContext<CpuHandle>, operations: readonly OperationIr[], inputs: readonly CpuHandle[] | undefined): E | undefined;

  /**
   * The end of a replayed launch: counts the elided writes, registers the written outputs
   * (`outputs[j]` for `structure.written[j]`) and removes the external inputs that die in the block.
   */
  protected finishReplay(ctx: ExecutionContext<CpuHandle>, operations: readonly OperationIr[], structure: BlockStructure, outputs: readonly CpuHandle[]): void {
    this.runtime.stats.elidedWrites += structure.elided;
    const written = structure.written;
    for (let j = 0; j < written.length; j++) ctx.handles.registerHandle(producedAt(operations, written[j] as number).id, outputs[j] as CpuHandle);
    const dies = structure.dies;
    for (let k = 0; k < dies.length; k++) if (dies[k] === true) ctx.handles.removeHandle(locatedTensor(operations, structure.inputs[k]!).id);
  }
}
