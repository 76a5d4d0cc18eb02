import type { ExecutionContext, OperationIr, TensorId, TensorIr } from "@weft/fusion";
import type { BindingAccess } from "@weft/server";
import { BlockFallback, broadcastShapes, denseLayout, isElementwise, numElements, producedAt, sameShape } from "@weft/fusion";
import { invariant } from "@weft/environment";
import { hostBytesPerElement, isDense, withLayout, type CpuHandle } from "../handle/cpu-handle.js";
import { BindingSet, type CpuKernel } from "../kernels/cpu-kernel.js";
import { ElementwiseProgramBuilder, type Register } from "../kernels/elementwise-kernel.js";
import { appendElementwise } from "../kernels/elementwise-ops.js";
import { scanBlock } from "./block-scan.js";
import {
  ReplayedOptimization,
  bindingSources,
  blockStructure,
  replayBindings,
  replayUniforms,
  type BindingSource,
  type BlockStructure,
} from "./launch-replay.js";
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
 * **Launch replay.** What an execution decided (the kernel with its loop plan and key, which
 * outputs are written in place into which input, the binding pattern, which ops were evaluated)
 * is remembered under its layout signature (`launch-replay.ts`: output shapes, and per external
 * input its dtype, layout and `canMut`); a later execution with the same signature replays it —
 * no scan, builder, loop plan, key or closures — and binds, allocates, registers, frees and counts
 * exactly what the full path would. Scalars are read from each execution's ops into uniforms, so
 * a new scalar replays the same entry. Never replayed: two inputs on one memory, an input without
 * a handle. Bounded by `MAX_LAUNCH_ENTRIES` signatures per optimization.
 */
export class ElementwiseOptimization extends ReplayedOptimization<ElementwiseLaunch> {
  readonly name = "elementwise";

  /** Replays `entry` for this execution (see "Launch replay" in the type doc). */
  protected replay(ctx: ExecutionContext<CpuHandle>, operations: readonly OperationIr[], structure: BlockStructure, entry: ElementwiseLaunch, inputs: readonly CpuHandle[]): void {
    const runtime = this.runtime;
    const written = structure.written;
    const outputs = this.launches.scratch.outputs;
    let made = 0;
    try {
      for (let j = 0; j < written.length; j++) {
        const out = producedAt(operations, written[j] as number);
        const slot = entry.outputs[j] as number;
        const reused = slot >= 0 ? inputs[slot] : undefined;
        if (reused !== undefined) {
          reused.memory.retain();
          outputs[j] = withLayout(reused, denseLayout(out.shape, reused.offset), out.dtype);
        } else {
          outputs[j] = runtime.allocate(out.shape, out.dtype, ctx.stream);
        }
        made++;
      }
      const kernel = entry.kernel;
      if (kernel !== undefined) {
        const bindings = replayBindings(entry.sources, entry.access, inputs, outputs, undefined);
        const uniforms = replayUniforms(operations, entry.evaluated, entry.uniforms);
        const fallback = this.fallback.arm(ctx, operations, written, outputs);
        runtime.client.group(fallback, () => runtime.launch(kernel, bindings, ctx.stream, uniforms), ctx.stream);
        fallback.settled();
        runtime.stats.fusedLaunches++;
        runtime.stats.replayedLaunches++;
      }
    } catch (error) {
      this.fallback.discard(); // disarmed whether or not the server got to it
      for (let j = 0; j < made; j++) runtime.releaseHandle(outputs[j] as CpuHandle);
      throw error;
    }
    runtime.stats.inPlaceWrites += entry.inPlace;
    this.finishReplay(ctx, operations, structure, outputs);
  }

  /** The full path (see `ReplayedOptimization.decide`). */
  protected decide(ctx: ExecutionContext<CpuHandle>, operations: readonly OperationIr[], inputs: readonly CpuHandle[] | undefined): ElementwiseLaunch | undefined {
    const runtime = this.runtime;
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

    const set = new BindingSet();
    const builder = new ElementwiseProgramBuilder(ref, set);
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
    const appended: number[] = [];
    for (let i = 0; i < operations.length; i++) {
      const op = operations[i] as OperationIr;
      if (op.kind === "drop" || !isElementwise(op) || !evaluated(op)) continue;
      registers.set(op.out.id, appendElementwise(builder, op, load));
      appended.push(i);
    }

    // In-place candidates: external inputs dying in the block whose memory nothing else holds
    // (with their slot: their index among the external inputs).
    const candidates: { readonly handle: CpuHandle; readonly slot: number }[] = [];
    let slot = 0;
    for (const t of external.values()) {
      const k = slot++;
      if (last.get(t.id) !== "ReadWrite") continue;
      const handle = ctx.handles.getHandleRef(t.id);
      if (handle !== undefined && runtime.canMut(handle) && isDense(handle) && sameShape(handle.shape, ref)) candidates.push({ handle, slot: k });
    }

    const outputs: [TensorIr, CpuHandle][] = [];
    const outputSlots: number[] = [];
    let kernel: CpuKernel | undefined;
    let uniforms = 0;
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
          outputSlots.push(-1);
          continue;
        }
        let handle: CpuHandle;
        const at = sameShape(out.shape, ref) ? candidates.findIndex((c) => hostBytesPerElement(c.handle.dtype) === hostBytesPerElement(out.dtype)) : -1;
        const reused = candidates[at];
        if (reused !== undefined) {
          candidates.splice(at, 1);
          reused.handle.memory.retain();
          handle = withLayout(reused.handle, denseLayout(out.shape, reused.handle.offset), out.dtype);
          outputSlots.push(reused.slot);
          inPlace++;
        } else {
          handle = runtime.allocate(out.shape, out.dtype, ctx.stream);
          outputSlots.push(-1);
        }
        outputs.push([out, handle]);
        builder.output(register, handle.memory, handle.dtype, handle);
        stored++;
      }
      if (stored > 0) {
        const built = builder.build(runtime.runner);
        kernel = built.kernel;
        uniforms = built.uniforms.byteLength / 8;
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
    // What a replay needs, taken before the registrations and frees below change the container.
    const decided: ElementwiseLaunch | undefined =
      inputs === undefined
        ? undefined
        : {
            kernel,
            sources: bindingSources(set.memories(), inputs, outputs.map(([, h]) => h), undefined),
            access: set.accesses().slice(),
            outputs: outputSlots,
            evaluated: appended,
            uniforms,
            inPlace,
          };
    for (const [out, handle] of outputs) ctx.handles.registerHandle(out.id, handle);
    for (const id of external.keys()) if (last.get(id) === "ReadWrite") ctx.handles.removeHandle(id);
    if (this.structure === undefined) this.structure = blockStructure(operations, last, produced, external);
    return decided;
  }
}

/** One replayable execution of an {@link ElementwiseOptimization}, stored under its layout signature. */
interface ElementwiseLaunch {
  /** The built kernel (loop plan, key, compiled or interpreted body); `undefined` when nothing is stored (no launch). */
  readonly kernel: CpuKernel | undefined;
  /** Where each binding's memory comes from, in binding order. */
  readonly sources: readonly BindingSource[];
  /** Each binding's access, in binding order. */
  readonly access: readonly BindingAccess[];
  /** Per written output (structure order): the input slot it is written in place into, or -1 (a fresh allocation). */
  readonly outputs: readonly number[];
  /** Indices of the ops whose steps (and uniforms) the program holds, in order. */
  readonly evaluated: readonly number[];
  /** Number of uniforms the program reads. */
  readonly uniforms: number;
  /** Outputs written in place (the `inPlaceWrites` counter). */
  readonly inPlace: number;
}
