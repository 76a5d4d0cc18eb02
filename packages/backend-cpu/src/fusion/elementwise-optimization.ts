import type { ExecutionContext, OperationIr, Optimization, TensorId, TensorIr } from "@weft/fusion";
import { BlockFallback, broadcastShapes, denseLayout, isElementwise, numElements, sameShape } from "@weft/fusion";
import { invariant } from "@weft/environment";
import { hostBytesPerElement, isDense, withLayout, type CpuHandle } from "../handle/cpu-handle.js";
import { ElementwiseProgramBuilder, type Register } from "../kernels/elementwise-kernel.js";
import { appendElementwise } from "../kernels/elementwise-ops.js";
import { scanBlock } from "./block-scan.js";
import type { CpuRuntime } from "../runtime/cpu-runtime.js";

/**
 * A fused elementwise block: the whole chain evaluated in ONE pass over the reference shape's
 * elements, as one kernel launch.
 *
 * @remarks
 * **Replayable.** It keeps only its length: everything else (reference shape, inputs, which
 * outputs to write, in-place reuse) is derived from the global operations it is executed with, so
 * one instance serves every replay of a cached plan.
 * **Write elision.** An output is written only when its latest status in the block is not
 * `ReadWrite` (it is still used after the block); an output consumed or dropped inside the block
 * lives only in registers and gets no handle.
 * **In place.** A written output whose shape is the reference shape reuses the memory of an
 * external input that dies in the block (`ReadWrite` or dropped) when that input is dense, has the
 * reference shape and the same bytes per element, and `canMut` (its memory has one reference: no
 * view, alias or other stream holds it). Never when shared or aliased.
 * **Empty outputs.** A block may mix outputs that hold elements with empty ones (`x.neg()` of a
 * size-1 `x` beside `e.neg()` of an empty `e`): the ops broadcast to an empty reference shape, and
 * one pass over it would never compute the non-empty outputs. Such a block iterates the reference
 * of its non-empty outputs instead and evaluates only their ops (an op with elements reads only
 * tensors with elements, since broadcasting with a size-0 dim gives size 0); its empty outputs
 * get (empty) handles and no step. The fuser cannot refuse such a block: plans are cached on
 * relative shapes, so the same plan serves a size-0 and a size-5 dim.
 * **Failure.** The launch is one launch group (`Client.group`) with a `BlockFallback`: when
 * the fused kernel cannot run, the server runs the block op by op instead, so a failure reaches
 * only the outputs computed from the op that fails (issue 9).
 * **Freeing.** External inputs that die in the block are removed from the container after the
 * launch; an in-place output keeps the memory alive through its own reference.
 */
export class ElementwiseOptimization implements Optimization<CpuHandle> {
  readonly name = "elementwise";
  readonly len: number;
  readonly #runtime: CpuRuntime;

  constructor(runtime: CpuRuntime, len: number) {
    this.#runtime = runtime;
    this.len = len;
  }

  execute(ctx: ExecutionContext<CpuHandle>, operations: readonly OperationIr[]): void {
    invariant(operations.length === this.len, () => `elementwise block of ${this.len} ops executed with ${operations.length}`);
    const runtime = this.#runtime;
    const { last, produced, external } = scanBlock(operations, "elementwise");
    let reference: number[] | undefined;
    // The reference of the ops whose outputs hold elements (see "Empty outputs" in the type doc).
    let live: number[] | undefined;
    for (const op of operations) {
      if (op.kind === "drop") continue;
      invariant(isElementwise(op), () => `elementwise block holds a ${op.kind} op`);
      reference = reference === undefined ? [...op.out.shape] : broadcastShapes(reference, op.out.shape);
      invariant(reference !== undefined, "fused ops broadcast to one reference shape (checked by the fuser)");
      if (numElements(op.out.shape) > 0) live = live === undefined ? [...op.out.shape] : broadcastShapes(live, op.out.shape);
    }
    invariant(reference !== undefined, "an elementwise block holds at least one elementwise op");
    // An empty reference iterates nothing: the ops with elements run over their own reference,
    // the empty ones are not evaluated (they have nothing to compute).
    const ref = numElements(reference) === 0 && live !== undefined ? live : reference;
    const evaluated = (op: Exclude<OperationIr, { kind: "drop" }>): boolean => ref === reference || numElements(op.out.shape) > 0;

    const builder = new ElementwiseProgramBuilder(ref);
    const registers = new Map<TensorId, Register>();
    const load = (t: TensorIr): Register => {
      const known = registers.get(t.id);
      if (known !== undefined) return known;
      invariant(!produced.has(t.id), () => `tensor ${t.id} is read before the block op producing it`);
      const handle = ctx.handles.getHandle(t);
      const r = builder.input(handle.memory, handle.dtype, handle);
      registers.set(t.id, r);
      return r;
    };
    for (const op of operations) {
      if (op.kind === "drop" || !isElementwise(op) || !evaluated(op)) continue;
      registers.set(op.out.id, appendElementwise(builder, op, load));
    }

    // In-place candidates: external inputs dying in the block whose memory nothing else holds.
    const candidates: CpuHandle[] = [];
    for (const t of external.values()) {
      if (last.get(t.id) !== "ReadWrite") continue;
      const handle = ctx.handles.getHandleRef(t.id);
      if (handle !== undefined && runtime.canMut(handle) && isDense(handle) && sameShape(handle.shape, ref)) candidates.push(handle);
    }

    const outputs: [TensorIr, CpuHandle][] = [];
    let inPlace = 0;
    let elided = 0;
    let stored = 0;
    try {
      for (const [id, out] of produced) {
        if (last.get(id) === "ReadWrite") {
          elided++;
          continue;
        }
        const register = registers.get(id);
        if (register === undefined) {
          // An empty output of a block whose other outputs hold elements: nothing to compute.
          invariant(numElements(out.shape) === 0, () => `block output ${id} has a register`);
          const empty = runtime.allocate(out.shape, out.dtype, ctx.stream);
          outputs.push([out, empty]);
          continue;
        }
        let handle: CpuHandle;
        const at = sameShape(out.shape, ref) ? candidates.findIndex((c) => hostBytesPerElement(c.dtype) === hostBytesPerElement(out.dtype)) : -1;
        const reused = candidates[at];
        if (reused !== undefined) {
          candidates.splice(at, 1);
          reused.memory.retain();
          handle = withLayout(reused, denseLayout(out.shape, reused.offset), out.dtype);
          inPlace++;
        } else {
          handle = runtime.allocate(out.shape, out.dtype, ctx.stream);
        }
        outputs.push([out, handle]);
        builder.output(register, handle.memory, handle.dtype, handle);
        stored++;
      }
      if (stored > 0) {
        const built = builder.build(runtime.runner);
        // One launch group: should the fused kernel not run (it fails to compile, a fault hits
        // it, an input turns out tainted), the block runs op by op in its place.
        const fallback = new BlockFallback(runtime.fallbackPort, ctx, operations);
        for (const [out, handle] of outputs) fallback.output(out, handle);
        runtime.client.group(fallback, () => runtime.launch(built.kernel, built.bindings, ctx.stream, built.uniforms), ctx.stream);
        runtime.stats.fusedLaunches++;
      }
    } catch (error) {
      for (const [, handle] of outputs) runtime.releaseHandle(handle);
      throw error;
    }
    runtime.stats.inPlaceWrites += inPlace;
    runtime.stats.elidedWrites += elided;
    for (const [out, handle] of outputs) ctx.handles.registerHandle(out.id, handle);
    for (const id of external.keys()) if (last.get(id) === "ReadWrite") ctx.handles.removeHandle(id);
  }
}
