import { InvariantError, StreamId, invariant } from "@weft/environment";
import { LaunchError, ServerError, type BufferBinding, type FallbackGap, type LaunchFallback } from "@weft/server";
import { describeOperation } from "../errors/tensor-errors.js";
import type { OperationIr } from "../ir/operation-ir.js";
import { forEachInput, operationInputs, operationOutputs } from "../ir/operation-descriptor.js";
import type { TensorId, TensorIr } from "../ir/tensor-ir.js";
import { HandleContainer } from "./handle-container.js";
import type { ExecutionContext, FusionRuntime } from "./fusion-runtime.js";

/** What {@link BlockFallback} needs from a backend besides its `FusionRuntime`. */
export interface BlockFallbackPort<H> {
  /** The backend: `executeOperation` runs each op, `releaseHandle` gives references back. */
  readonly runtime: FusionRuntime<H>;
  /** A new reference on `handle`'s memory (`retainHandle`). */
  retain(handle: H): H;
  /**
   * Holds `handle`'s memory (`MemoryHandle.hold`) until the returned function is called: usable
   * by {@link BlockFallbackPort.retain} later, not counted by `canMut`. A port with `hold` is
   * asked for holds instead of references while the group waits (see {@link BlockFallback}).
   */
  hold?(handle: H): () => void;
  /** Records a launch on `stream` copying `src` (any layout) into `dst` (dense, same shape and dtype). */
  copy(src: H, dst: H, stream: StreamId): void;
  /** The bytes of `dst` the block's launches write: what a gap names. */
  binding(dst: H): BufferBinding;
}

/**
 * A fused block's {@link LaunchFallback}: the block's operations run one by one through the
 * backend's unfused path (`FusionRuntime.executeOperation`), and each output the block writes is
 * copied into the memory the fused launch was to write. Issue 9: a fused kernel that cannot run
 * (a compile or validation failure, an injected fault, an input tainted before the engine knew)
 * must not take down the outputs that do not depend on the op that fails.
 *
 * @remarks
 * **Lifetime.** Built before the block's launches: it takes a reference on every tensor the block
 * reads from outside (the block itself may free them) and, through {@link BlockFallback.output},
 * on every output the block writes. The server calls `run` or `discard` exactly once; either
 * gives every reference back. A port with `hold` (WebGPU, whose groups wait for their pipelines'
 * validation) gets holds instead, turned into references only when `run` comes: a reference would
 * make `canMut` false, so every block recorded while a group waits would lose its in-place writes
 * (and compile a second, out-of-place kernel). The group runs — or falls back — before any later
 * launch, so a later block writing in place into a held tensor never changes what the fallback
 * reads or writes.
 * **Run.** In a private {@link HandleContainer} seeded with the inputs, on the block's stream:
 * an op whose input failed is not run, an op that throws fails its outputs, everything else
 * runs exactly as the unfused path would (the backend skips launches that read tainted bytes and
 * taints their writes, device-side). Each written output is then copied into its fused memory;
 * an output that failed host-side is returned as a gap, with the error of the op that failed.
 * **Cost.** A reference taken and given back per input and output of a fused block; the
 * recomputation happens only when the group fails.
 */
export class BlockFallback<H> implements LaunchFallback {
  readonly #port: BlockFallbackPort<H>;
  readonly #ops: readonly OperationIr[];
  readonly #stream: StreamId;
  /** External inputs, one reference (or hold) each; emptied when run or discarded. */
  readonly #inputs = Array.of<Held<H>>();
  /** Written outputs, one reference (or hold) each; emptied when run or discarded. */
  readonly #outputs = Array.of<Held<H>>();
  #settled = false;

  /**
   * Takes a reference (or, when the port can, a hold) on every tensor `ops` read from outside the
   * block (from `ctx.handles`). Without `hold`, build it after the block chose its in-place writes
   * (a reference held here makes `canMut` false).
   */
  constructor(port: BlockFallbackPort<H>, ctx: ExecutionContext<H>, ops: readonly OperationIr[]) {
    this.#port = port;
    this.#ops = ops;
    this.#stream = ctx.stream;
    // A tensor produced inside the block has no handle yet (SSA ids, registered only after the
    // block's launches), so the handles present are exactly the external inputs. Walked without
    // a temporary array per op; a repeated input is recognised by a scan of the few taken so far.
    const handles = ctx.handles;
    const visit = (input: TensorIr): void => {
      if (input.status === "NotInit" || this.#holds(input.id)) return;
      const handle = handles.getHandleRef(input.id);
      if (handle !== undefined) this.#take(input.id, handle);
    };
    for (const op of ops) forEachInput(op, visit);
  }

  /** Ids of the taken inputs, once there are too many to scan (`undefined` before). */
  #inputIds: Set<TensorId> | undefined;

  /** Whether the external input `id` was taken already. */
  #holds(id: TensorId): boolean {
    if (this.#inputIds !== undefined) return this.#inputIds.has(id);
    for (const held of this.#inputs) if (held.id === id) return true;
    return false;
  }

  /** Takes a reference on `handle` of the external input `id`, or a hold when the port can hold. */
  #take(id: TensorId, handle: H): void {
    this.#inputs.push(this.#held(id, handle, undefined));
    if (this.#inputIds !== undefined) this.#inputIds.add(id);
    else if (this.#inputs.length > SCANNED_INPUTS) this.#inputIds = new Set(this.#inputs.map((h) => h.id));
  }

  /** A reference on `handle` of tensor `id` (an output's: `tensor`), or a hold when the port can hold. */
  #held(id: TensorId, handle: H, tensor: TensorIr | undefined): Held<H> {
    const hold = this.#port.hold;
    return hold === undefined ? new Held(id, this.#port.retain(handle), undefined, tensor) : new Held(id, handle, hold(handle), tensor);
  }

  /** `held` as a reference the fallback owns (a held handle gets a reference, the hold goes). */
  #own(held: Held<H>): H {
    if (held.release === undefined) return held.handle;
    const handle = this.#port.retain(held.handle);
    held.release();
    return handle;
  }

  /** Gives `held` back: its reference, or its hold. */
  #drop(held: Held<H>): void {
    if (held.release === undefined) this.#port.runtime.releaseHandle(held.handle);
    else held.release();
  }

  /** Records that the block writes `tensor` into `handle` (takes a reference, or a hold, on it). */
  output(tensor: TensorIr, handle: H): void {
    invariant(!this.#settled, "BlockFallback.output after the fallback settled");
    this.#outputs.push(this.#held(tensor.id, handle, tensor));
  }

  /** Records every output of the block that `handles` holds now (after the block registered them). */
  outputsFrom(handles: HandleContainer<H>): void {
    for (const op of this.#ops) {
      if (op.kind === "drop") continue;
      const handle = handles.getHandleRef(op.out.id);
      if (handle !== undefined) this.output(op.out, handle);
    }
  }

  run(failure: ServerError): readonly FallbackGap[] {
    void failure; // the server logs it; the block is recomputed whatever the reason
    this.#settle();
    const port = this.#port;
    const handles = new HandleContainer<H>((h) => port.runtime.releaseHandle(h));
    for (const held of this.#inputs) handles.registerHandle(held.id, this.#own(held));
    this.#inputs.length = 0;
    const outputs = this.#outputs.map((held) => [held.tensor as TensorIr, this.#own(held)] as const); // outputs carry their tensor
    this.#outputs.length = 0;
    const gaps: FallbackGap[] = [];
    try {
      StreamId.executes(this.#stream, () => {
        const ctx: ExecutionContext<H> = { handles, stream: this.#stream };
        const failed = new Map<TensorId, ServerError>();
        for (const op of this.#ops) {
          let cause: ServerError | undefined;
          for (const input of operationInputs(op)) cause ??= failed.get(input.id);
          if (cause === undefined) {
            try {
              port.runtime.executeOperation(op, ctx);
            } catch (error) {
              cause = asServerError(op, error);
            }
          }
          if (cause !== undefined) for (const out of operationOutputs(op)) failed.set(out.id, cause);
        }
        for (const [tensor, dst] of outputs) {
          const cause = failed.get(tensor.id);
          const src = handles.getHandleRef(tensor.id);
          if (cause !== undefined || src === undefined) {
            gaps.push({ binding: port.binding(dst), error: cause ?? new LaunchError(`the fallback of a fused block did not produce ${describeTensor(tensor)}`) });
            continue;
          }
          port.copy(src, dst, this.#stream);
        }
      });
    } finally {
      for (const id of handles.ids()) handles.removeHandle(id);
      for (const [, handle] of outputs) port.runtime.releaseHandle(handle);
    }
    return gaps;
  }

  discard(): void {
    this.#settle();
    for (const held of this.#inputs) this.#drop(held);
    for (const held of this.#outputs) this.#drop(held);
    this.#inputs.length = 0;
    this.#outputs.length = 0;
  }

  #settle(): void {
    invariant(!this.#settled, "a launch fallback was run or discarded twice");
    this.#settled = true;
  }
}

/** External inputs a fallback recognises by scanning the taken ones; past it, by a set. */
const SCANNED_INPUTS = 16;

/**
 * A tensor the fallback keeps — an external input or a written output: its handle and, for a hold,
 * the function that gives the hold back. A class, not a literal: a fused block builds several
 * (docs/performance.md#allocation-sites).
 */
class Held<H> {
  constructor(
    readonly id: TensorId,
    readonly handle: H,
    /** Gives the hold back; `undefined` when `handle` is a reference the fallback owns. */
    readonly release: (() => void) | undefined,
    /** An output's tensor; `undefined` for an input. */
    readonly tensor: TensorIr | undefined,
  ) {}
}

/** `error` as the `ServerError` a gap carries: server errors as they are, anything else wrapped. */
function asServerError(op: OperationIr, error: unknown): ServerError {
  if (error instanceof ServerError) return error;
  const what = error instanceof InvariantError ? "hit an internal error" : "failed";
  return new LaunchError(`${describeOperation(op)} ${what}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
}

function describeTensor(t: TensorIr): string {
  return `#${t.id}[${t.shape.join(",")}] ${t.dtype}`;
}
