import { InvariantError, ReentrancyError, StreamId, invariant } from "@weft/environment";
import { TensorComputationError } from "../../errors/tensor-errors.js";
import type { OperationIr } from "../../ir/operation-ir.js";
import { forEachInput, forEachTensor, operationInputs, operationOutputs, operationReferences } from "../../ir/operation-descriptor.js";
import type { RelativeOperation } from "../../ir/relative.js";
import { OperationConverter, relativeOperation } from "../../ir/relative.js";
import type { KeyNode } from "../../ir/relative-key.js";
import type { TensorId, TensorIr } from "../../ir/tensor-ir.js";
import type { HandleContainer } from "../../runtime/handle-container.js";
import type { ExecutionContext, FusionRuntime, OperationRan, Optimization } from "../../runtime/fusion-runtime.js";
import type { ExecutionPlan } from "../store/execution-plan-store.js";
import { truncateInPlace } from "../arrays.js";

/**
 * Slots of an {@link OperationQueue}'s reference index (a power of two): tensor ids are minted in
 * sequence, so the tensors of one segment (at most the queue limit's operations) rarely share a
 * slot; 1,024 × 12 bytes, allocated by a queue once its segment first reaches
 * {@link INDEX_FROM} operations.
 */
const REFERENCE_SLOTS = 1024;
/** A reference slot shared by several ids: only a scan of the segment answers for it. */
const MIXED = -1;
/**
 * The segment length from which a queue keeps its reference index: a shorter segment is scanned
 * (a few field reads per operation), so the many short-lived streams of a serving process (one per
 * request) never allocate one.
 */
const INDEX_FROM = 16;
/** Numbers an {@link OperationQueue} keeps per pending position (see its `#positions`). */
const POSITION_INTS = 3;

/** One block the engine executed, as the inspector logs it. */
export interface ExecutedBlock {
  /** The stream it ran on. */
  readonly stream: StreamId;
  /** True for a fused `Optimization`, false for one operation run unfused. */
  readonly fused: boolean;
  /** The optimization's name, or the operation's kind for an unfused one. */
  readonly name: string;
  /** The kinds of the operations it covered, in order. */
  readonly kinds: readonly OperationIr["kind"][];
  /** Whether it ran (`not-ran`: an input carried an error, or it threw). */
  readonly ran: OperationRan;
}

/**
 * What a queue needs to execute blocks: the runtime, the device's handles, and where to report.
 * @internal
 */
export interface ExecutionEnv<H> {
  readonly runtime: FusionRuntime<H, Optimization<H>>;
  readonly handles: HandleContainer<H>;
  /**
   * Called for every executed block (the inspector's log), with the block's fields as arguments:
   * an object per block was garbage a serving process promoted by the megabyte
   * (docs/performance.md#what-a-request-leaves-behind).
   */
  readonly onBlock: (stream: StreamId, fused: boolean, name: string, kinds: readonly OperationIr["kind"][], ran: OperationRan) => void;
  /** Called with an error that is a bug (invariant, re-entrancy), rethrown at the end of the call. */
  readonly onBug: (error: Error) => void;
}

function isBug(error: unknown): error is Error {
  return error instanceof InvariantError || error instanceof ReentrancyError;
}

/**
 * The pending segment of one stream: operations in global form (real ids, shapes, values) and in
 * relative form (for plan matching and fusers), plus the frees deferred to the next boundary.
 * Burn's `OperationQueue`.
 *
 * @remarks
 * **Invariants.**
 * - `global[i]` and `keys[i]` describe the same operation; `keys` is always the conversion of
 *   `global` from an empty converter (after every execution, only the operations left after the
 *   executed prefix are converted again; none when the whole segment ran). The relative
 *   operations themselves are built only when asked for ({@link OperationQueue.relativeOperations}:
 *   an explorer), from the key and two numbers kept per position.
 * - Executions cover a prefix `[0, n)` (in the plan's order, which may reorder independent
 *   blocks); the remaining operations keep their order.
 * - `shapesAssignedAt(i)` is the number of relative shape ids assigned after operation `i`.
 * **Bound.** Holds the pending segment (bounded by the device's queue limit) and the deferred
 * frees, which are flushed at every boundary, plus a fixed 12 KB reference index once a segment
 * reached `INDEX_FROM` (16) operations.
 */
export class OperationQueue {
  /** Pending operations, global form. */
  readonly global: OperationIr[] = [];
  /**
   * Pending operations' relative keys (what the policy matches plans with), position by position,
   * as nodes of the key trie (the string is `.key`; the node memoizes its interned id).
   */
  readonly keys: KeyNode[] = [];
  /**
   * Per position, {@link POSITION_INTS} numbers: the relative shape ids assigned after it (the
   * bound check of docs/pitfalls.md#p12), the largest relative shape id it names, and its first
   * placeholder. Packed, and valid for `[0, global.length)` only: emptying the queue writes nothing.
   */
  #positions = new Int32Array(POSITION_INTS * 64);
  /** The relative operations built so far (a prefix of the segment; see `relativeOperations`). */
  readonly #relative: RelativeOperation[] = [];
  /** Frees that must wait for the next boundary (a pending operation still references them). */
  readonly deferredFrees: TensorIr[] = [];
  readonly #converter = new OperationConverter();
  /**
   * The reference index, once the segment first reached {@link INDEX_FROM} operations (then kept
   * for the queue's life; a pooled queue keeps it too): for each slot `id & (REFERENCE_SLOTS - 1)`,
   * how many references the pending operations make to ids of that slot (every input and output,
   * as `forEachTensor` visits them), and which id they all are (`MIXED` once two ids share the
   * slot, until it empties). It answers `referencesTensor` without a scan unless two pending ids
   * share a slot: a `tidy` disposing its intermediates asks once per drop, and a scan of a long
   * segment per drop was a fifth of the recording loop's host time. **Invariant.** Once built,
   * equal to the count over `global` (built from it, incremented in `add`, decremented in
   * `drain`: the only places `global` changes).
   */
  #references: Uint32Array | undefined;
  /** The one id a slot's references name, or `MIXED` (ids are non-negative; f64: any id fits). */
  #referenced: Float64Array = new Float64Array(0);
  readonly #count = (t: TensorIr): void => {
    const references = this.#references as Uint32Array;
    const slot = t.id & (REFERENCE_SLOTS - 1);
    const n = references[slot] as number;
    if (n === 0) this.#referenced[slot] = t.id;
    else if (this.#referenced[slot] !== t.id) this.#referenced[slot] = MIXED;
    references[slot] = n + 1;
  };
  readonly #uncount = (t: TensorIr): void => {
    const references = this.#references as Uint32Array;
    const slot = t.id & (REFERENCE_SLOTS - 1);
    references[slot] = (references[slot] as number) - 1;
  };

  /** Number of pending operations. */
  get length(): number {
    return this.global.length;
  }

  /** Whether the queue holds nothing: no operation and no deferred free. */
  get isEmpty(): boolean {
    return this.global.length === 0 && this.deferredFrees.length === 0;
  }

  /**
   * The pending operations in relative form (for an explorer), built for the positions not built
   * yet; the same array every call until the next execution.
   */
  relativeOperations(): readonly RelativeOperation[] {
    const relative = this.#relative;
    for (let i = relative.length; i < this.global.length; i++) {
      const at = POSITION_INTS * i;
      relative.push(relativeOperation(this.global[i] as OperationIr, (this.keys[i] as KeyNode).key, this.#positions[at + 1] as number, this.#positions[at + 2] as number));
    }
    return relative;
  }

  /** Appends `op` (global form) and its relative key. */
  add(op: OperationIr): void {
    this.#convert(op);
    this.global.push(op);
    if (this.#references !== undefined) forEachTensor(op, this.#count);
    else if (this.global.length >= INDEX_FROM) {
      this.#references = new Uint32Array(REFERENCE_SLOTS);
      this.#referenced = new Float64Array(REFERENCE_SLOTS);
      for (const pending of this.global) forEachTensor(pending, this.#count);
    }
  }

  /** Converts `op` (the next position) and records its key, bounds and placeholder base. */
  #convert(op: OperationIr): void {
    const converter = this.#converter;
    const at = POSITION_INTS * this.keys.length;
    this.keys.push(converter.convert(op));
    if (at + POSITION_INTS > this.#positions.length) {
      const grown = new Int32Array(2 * this.#positions.length);
      grown.set(this.#positions);
      this.#positions = grown;
    }
    const positions = this.#positions;
    positions[at] = converter.shapesAssigned;
    positions[at + 1] = converter.lastMaxShapeId;
    positions[at + 2] = converter.lastValueBase;
  }

  /** The number of relative shape ids assigned after pending operation `i` (0 ≤ i < length). */
  shapesAssignedAt(i: number): number {
    return this.#positions[POSITION_INTS * i] as number;
  }

  /**
   * Whether a pending operation reads or writes `id`: from the reference index, or by a linear
   * scan of the segment when it has no index yet or ids share `id`'s slot; allocation-free.
   */
  referencesTensor(id: TensorId): boolean {
    const references = this.#references;
    if (references !== undefined) {
      const slot = id & (REFERENCE_SLOTS - 1);
      if (references[slot] === 0) return false;
      const owner = this.#referenced[slot];
      if (owner !== MIXED) return owner === id;
    }
    for (const op of this.global) if (operationReferences(op, id)) return true;
    return false;
  }

  /** Frees every deferred tensor no pending operation references any more. A boundary. */
  flushDeferred<H>(handles: HandleContainer<H>): void {
    const frees = this.deferredFrees;
    if (frees.length === 0) return;
    // Compacted in place: the ones still referenced keep their order.
    let kept = 0;
    for (let i = 0; i < frees.length; i++) {
      const ir = frees[i] as TensorIr;
      if (this.referencesTensor(ir.id)) frees[kept++] = ir;
      else handles.removeHandle(ir.id);
    }
    truncateInPlace(frees, kept);
  }

  /**
   * Executes `plan` on the prefix it covers, on `stream`, in the plan's execution order (its
   * steps over `plan.order`), then drains that prefix. Falls back to
   * running the prefix unfused in stream order when the plan names a relative shape id this stream
   * never assigned (docs/pitfalls.md#p12).
   */
  execute<H>(plan: ExecutionPlan<Optimization<H>>, stream: StreamId, env: ExecutionEnv<H>): number {
    const n = plan.operations.length;
    if (n > this.global.length) invariant(false, `plan of ${n} operations on a segment of ${this.global.length}`);
    const assigned = n > 0 ? this.shapesAssignedAt(n - 1) : 0;
    if (plan.maxRelativeShapeId >= assigned) {
      this.executeUnfused(n, stream, env);
      return n;
    }
    const ran = this.#ranFor(n);
    const ctx: ExecutionContext<H> = { handles: env.handles, stream };
    // The stream travels in `ctx`, explicitly: nothing below reads the ambient stream.
    const order = plan.order;
    let at = 0;
    for (const step of plan.strategy) {
      // The step's positions are `order[at, at + step.len)`, read in place (no slice per step).
      if (step.kind === "optimization") {
        // A plain loop: one closure per position (for an invariant's message) was most of a dead block's cost.
        const ops: OperationIr[] = new Array<OperationIr>(step.len);
        for (let i = 0; i < step.len; i++) ops[i] = this.#op(order[at + i] as number);
        runOptimization(step.optimization, ops, order, at, ran, ctx, env);
      } else {
        for (let i = at; i < at + step.len; i++) {
          const p = order[i] as number;
          ran[p] = runUnfused(this.global[p], ctx, env);
        }
      }
      at += step.len;
    }
    if (at !== n) invariant(false, `plan strategy covered ${at} of its ${n} operations`);
    this.drain(n, ran, env);
    return n;
  }

  /**
   * What each of an execution's first `n` operations did, all `ran` to start with: one list per
   * queue, reused by every execution (an execution never nests in another on its queue; `drain`
   * reads only its first `n`). **Bound.** The longest segment executed.
   */
  readonly #ran: OperationRan[] = [];

  #ranFor(n: number): OperationRan[] {
    const ran = this.#ran;
    for (let i = 0; i < n; i++) ran[i] = "ran";
    return ran;
  }

  #op(position: number): OperationIr {
    const op = this.global[position];
    if (op === undefined) invariant(false, `plan position ${position} past the segment of ${this.global.length}`);
    return op;
  }

  /** Runs the first `n` operations unfused, in stream order, then drains them. */
  executeUnfused<H>(n: number, stream: StreamId, env: ExecutionEnv<H>): void {
    const ran = this.#ranFor(n);
    const ctx: ExecutionContext<H> = { handles: env.handles, stream };
    for (let i = 0; i < n; i++) ran[i] = runUnfused(this.global[i], ctx, env);
    this.drain(n, ran, env);
  }

  /**
   * Frees every `ReadWrite` node of the first `n` operations (`freeHandle`), removes them,
   * re-relativizes the rest and flushes the deferred frees (a boundary). Burn's `drain_queue`.
   */
  drain<H>(n: number, ran: readonly OperationRan[], env: ExecutionEnv<H>): void {
    let outcome: OperationRan = "ran";
    const free = (node: TensorIr): void => {
      if (node.status === "ReadWrite") env.runtime.freeHandle(env.handles, node, outcome);
    };
    for (let i = 0; i < n; i++) {
      const op = this.global[i];
      invariant(op !== undefined, "drain past the segment");
      outcome = ran[i] ?? "ran";
      // A drop frees its one tensor (most of a `tidy`'s segment): no visit of the descriptor.
      if (op.kind === "drop") free(op.tensor);
      else forEachTensor(op, free);
    }
    // Uncounted only once every free is done, right before the prefix leaves `global`: a free
    // that throws leaves the segment and its counts as they were (never a count below the truth).
    if (this.#references !== undefined) for (let i = 0; i < n; i++) forEachTensor(this.global[i] as OperationIr, this.#uncount);
    this.#converter.reset();
    // Emptied in place (`truncateInPlace`): the lists keep their stores for the next segment.
    const global = this.global;
    const rest = global.length - n;
    // The rest moves to the front, and must be relativized again from an empty converter (Burn's
    // `reset_relative`): its ids and shape ids are relative to the new segment start. Only the
    // operations left after the executed prefix (a plan's trigger, or what a fuser had not taken)
    // are converted.
    for (let i = 0; i < rest; i++) global[i] = global[n + i] as OperationIr;
    truncateInPlace(global, rest);
    truncateInPlace(this.keys, 0);
    truncateInPlace(this.#relative, 0);
    for (let i = 0; i < rest; i++) this.#convert(global[i] as OperationIr);
    this.flushDeferred(env.handles);
  }
}

/**
 * The error the first errored input of `ops` (read from outside the block) carries: an error in
 * the container, or a device-side failure claiming the input's handle (`runtime.handleError`).
 * Tensors produced inside the block have neither yet (SSA ids, not executed), so every input can
 * be checked the same way. Free when no error exists anywhere (the common case): no container
 * error, and the runtime says no device-side claim is live (`deviceClaims`).
 */
function externalInputError<H>(ops: readonly OperationIr[], env: ExecutionEnv<H>, claims: boolean): Error | undefined {
  const { handles, runtime } = env;
  const deviceSide = claims ? runtime.handleError : undefined;
  if (handles.errorCount === 0 && deviceSide === undefined) return undefined;
  let found: Error | undefined;
  const check = (t: TensorIr): void => {
    if (found !== undefined || t.status === "NotInit") return;
    found = handles.getError(t.id);
    if (found !== undefined || deviceSide === undefined) return;
    const handle = handles.getHandleRef(t.id);
    if (handle !== undefined) found = deviceSide.call(runtime, handle);
  };
  for (const op of ops) {
    forEachTensor(op, check);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Whether an external input of the block `ops` is claimed by a pending deferred check
 * (`FusionRuntime.handlePending`) while some operation of the block does not depend on any such
 * input (within the block): fused, that operation's output would inherit a check it has nothing
 * to do with. One lookup per external input; nothing when the runtime has no deferred checks.
 */
function pendingSplitsBlock<H>(ops: readonly OperationIr[], env: ExecutionEnv<H>, claims: boolean): boolean {
  const { handles, runtime } = env;
  const pending = runtime.handlePending;
  if (pending === undefined || !claims) return false;
  // The common case first, without allocating: no input the block reads from outside is claimed.
  // (A tensor produced inside the block has no handle before the block runs.)
  let claimed = false;
  const check = (input: TensorIr): void => {
    if (claimed) return;
    const handle = handles.getHandleRef(input.id);
    if (handle !== undefined && pending.call(runtime, handle)) claimed = true;
  };
  for (const op of ops) {
    if (op.kind !== "drop") forEachInput(op, check);
    if (claimed) break;
  }
  if (!claimed) return false;
  const produced = new Set<TensorId>();
  const tainted = new Set<TensorId>();
  let any = false;
  let clean = false;
  for (const op of ops) {
    if (op.kind === "drop") continue;
    let depends = false;
    for (const input of operationInputs(op)) {
      if (produced.has(input.id)) {
        if (tainted.has(input.id)) depends = true;
        continue;
      }
      const handle = handles.getHandleRef(input.id);
      if (handle !== undefined && pending.call(runtime, handle)) {
        depends = true;
        any = true;
      }
    }
    for (const out of operationOutputs(op)) {
      produced.add(out.id);
      if (depends) tainted.add(out.id);
    }
    if (!depends) clean = true;
  }
  return any && clean;
}

/**
 * Puts the error caused by `cause` on every output of `ops` that has no handle: the error is
 * delivered by the read of those tensors, never reported by the drain. Burn's `set_output_errors`.
 */
export function setOutputErrors<H>(ops: readonly OperationIr[], cause: unknown, handles: HandleContainer<H>): void {
  for (const op of ops) {
    for (const out of operationOutputs(op)) {
      if (!handles.hasHandle(out.id)) handles.setError(out.id, TensorComputationError.from(op, cause));
    }
  }
}

/**
 * The kinds of a fused block's operations as the inspector logs them, shared by the executions of
 * one optimization (a cached plan's step covers the same operations every time): compared, not
 * rebuilt, so a repeated block allocates no array. Weakly held: goes with its optimization.
 */
const fusedKinds = new WeakMap<object, readonly OperationIr["kind"][]>();

function blockKinds<H>(optimization: Optimization<H>, ops: readonly OperationIr[]): readonly OperationIr["kind"][] {
  const cached = fusedKinds.get(optimization);
  if (cached !== undefined && cached.length === ops.length) {
    let same = true;
    for (let i = 0; same && i < ops.length; i++) same = cached[i] === (ops[i] as OperationIr).kind;
    if (same) return cached;
  }
  const kinds = ops.map((o) => o.kind);
  fusedKinds.set(optimization, kinds);
  return kinds;
}

/** One-kind arrays of unfused blocks, one per operation kind (bounded by the kinds). */
const singleKinds = new Map<OperationIr["kind"], readonly OperationIr["kind"][]>();

function singleKind(kind: OperationIr["kind"]): readonly OperationIr["kind"][] {
  let kinds = singleKinds.get(kind);
  if (kinds === undefined) singleKinds.set(kind, (kinds = [kind]));
  return kinds;
}

/**
 * Runs `optimization` on `ops`, whose positions in the segment are `order[at, at + ops.length)`;
 * records each position's outcome in `ran`.
 */
function runOptimization<H>(
  optimization: Optimization<H>,
  ops: readonly OperationIr[],
  order: readonly number[],
  at: number,
  ran: OperationRan[],
  ctx: ExecutionContext<H>,
  env: ExecutionEnv<H>,
): void {
  // Asked once per block, for both checks below (an earlier block of the plan may have failed).
  const claims = env.runtime.deviceClaims?.() !== false;
  // An op whose input carries an error (in the container, or device-side: `handleError`) must not
  // run fused: run the block op by op, so the error travels to exactly the outputs that depend on
  // it (the backend skips only the launches that read tainted bytes) and the rest still computes.
  // Likewise when a pending deferred check claims an input that some op of the block does not
  // depend on (`handlePending`): one launch would make that op's output inherit the check.
  if (externalInputError(ops, env, claims) !== undefined || pendingSplitsBlock(ops, env, claims)) {
    for (let i = 0; i < ops.length; i++) ran[order[at + i] ?? 0] = runUnfused(ops[i], ctx, env);
    return;
  }
  const kinds = blockKinds(optimization, ops);
  try {
    optimization.execute(ctx, ops);
    env.onBlock(ctx.stream, true, optimization.name, kinds, "ran");
  } catch (error) {
    env.onBlock(ctx.stream, true, optimization.name, kinds, "not-ran");
    if (isBug(error)) env.onBug(error);
    else if (untouched(ops, env.handles)) {
      // The block failed as a whole (its kernel could not be built, an allocation failed) before
      // it changed anything: run it op by op, so only what is computed from the op that fails
      // carries an error and every other output of the block still computes.
      for (let i = 0; i < ops.length; i++) ran[order[at + i] ?? 0] = runUnfused(ops[i], ctx, env);
      return;
    }
    setOutputErrors(ops, error, env.handles);
    for (let i = 0; i < ops.length; i++) ran[order[at + i] ?? 0] = "not-ran";
  }
}

/**
 * Whether a failed block left the container as it found it: none of its outputs has a handle or
 * an error, and every tensor it reads from outside still has its handle (or error). The
 * `Optimization` contract asks `execute` to throw only in that state; a block that broke it
 * cannot be re-run (its inputs may be gone), so its outputs get the error instead.
 */
function untouched<H>(ops: readonly OperationIr[], handles: HandleContainer<H>): boolean {
  const produced = new Set<TensorId>();
  for (const op of ops) {
    for (const input of operationInputs(op)) {
      if (produced.has(input.id) || input.status === "NotInit") continue;
      if (!handles.hasHandle(input.id) && handles.getError(input.id) === undefined) return false;
    }
    for (const out of operationOutputs(op)) {
      if (handles.hasHandle(out.id) || handles.getError(out.id) !== undefined) return false;
      produced.add(out.id);
    }
  }
  return true;
}

function runUnfused<H>(op: OperationIr | undefined, ctx: ExecutionContext<H>, env: ExecutionEnv<H>): OperationRan {
  invariant(op !== undefined, "unfused execution past the segment");
  // `init` handles are registered out of band: there is nothing to run.
  if (op.kind === "init") {
    env.onBlock(ctx.stream, false, op.kind, singleKind(op.kind), "ran");
    return "ran";
  }
  // A `drop` is handed to the runtime like any operation, even when its tensor carries an error:
  // `ran` then tells the drain's `freeHandle` that the runtime saw it (docs/concepts.md#fusionruntime, `OperationRan`).
  if (op.kind === "drop") return runDrop(op, ctx, env);
  for (const input of operationInputs(op)) {
    const error = env.handles.getError(input.id);
    if (error !== undefined) {
      setOutputErrors([op], error, env.handles);
      env.onBlock(ctx.stream, false, op.kind, singleKind(op.kind), "not-ran");
      return "not-ran";
    }
  }
  try {
    env.runtime.executeOperation(op, ctx);
    env.onBlock(ctx.stream, false, op.kind, singleKind(op.kind), "ran");
    return "ran";
  } catch (error) {
    if (isBug(error)) env.onBug(error);
    setOutputErrors([op], error, env.handles);
    env.onBlock(ctx.stream, false, op.kind, singleKind(op.kind), "not-ran");
    return "not-ran";
  }
}

/**
 * Hands a lone `drop` to the runtime (`executeOperation`), logs it as a one-op block, and says
 * whether the runtime was handed it: `"ran"` exactly when `executeOperation` returned. The engine's
 * `freeHandle` of the dropped tensor receives that answer (docs/concepts.md#fusionruntime: a remote runtime that forwarded
 * the drop must not register a second one; one that never saw it must free the handle itself).
 * @internal
 */
export function runDrop<H>(op: Extract<OperationIr, { kind: "drop" }>, ctx: ExecutionContext<H>, env: ExecutionEnv<H>): OperationRan {
  let ran: OperationRan = "ran";
  try {
    env.runtime.executeOperation(op, ctx);
  } catch (error) {
    if (isBug(error)) env.onBug(error);
    ran = "not-ran";
  }
  env.onBlock(ctx.stream, false, "drop", DROP_KINDS, ran);
  return ran;
}

/** The `kinds` of a lone `drop` block (shared: logged blocks are never mutated). */
const DROP_KINDS: readonly OperationIr["kind"][] = ["drop"];
