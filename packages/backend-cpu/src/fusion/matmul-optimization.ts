import type { ExecutionContext, OperationIr, TensorId, TensorIr } from "@weft/fusion";
import type { BindingAccess } from "@weft/server";
import { BlockFallback, isElementwise, producedAt } from "@weft/fusion";
import { invariant } from "@weft/environment";
import type { CpuHandle } from "../handle/cpu-handle.js";
import { BindingSet, type CpuKernel } from "../kernels/cpu-kernel.js";
import { ElementwiseProgramBuilder, type Register } from "../kernels/elementwise-kernel.js";
import { appendElementwise } from "../kernels/elementwise-ops.js";
import { linearForm, linearKernel } from "../kernels/linear-epilogue.js";
import { matmulKernel } from "../kernels/tensor-kernels.js";
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
 * A `matmul` and its elementwise epilogue (see `MatmulFuser`) as ONE launch: the product
 * is computed by the matmul kernel, then the epilogue's elementwise program runs over it while it
 * is still in cache.
 *
 * @remarks
 * **Same bits.** The product is rounded to its dtype as it is stored (as unfused), and the
 * epilogue is the same elementwise program the unfused ops would run, reading it back: fused and
 * unfused results are identical by construction.
 * **Where the product goes.** Into its own, fresh output when it is still used after the block;
 * else into the first written epilogue output of the same dtype, which the epilogue then
 * overwrites in place (each element is loaded before it is stored, in the generated code and in
 * the interpreter, and both operands are the same dense layout); else (every output of another
 * dtype) into a scratch allocation given back after the launch. So a serving layer
 * `relu(x @ w + b)` allocates one tensor, not three.
 * **Replayable.** Keeps only its length; everything else is derived from the global operations it
 * executes, so one instance serves every replay of a cached plan.
 * **Failure.** One launch group with a `BlockFallback`: when the fused kernel cannot run, the
 * block runs op by op instead, so a failure reaches only what depends on it.
 * **Freeing.** External inputs whose last use is in the block are removed from the container
 * after the launch.
 * **Launch replay.** As `ElementwiseOptimization`'s: the combined kernel (matmul with its operand
 * layouts, the epilogue's program), where the product goes (an output or a scratch) and the
 * binding pattern are remembered under the execution's layout signature (`launch-replay.ts`) and
 * replayed for the same layouts, allocating, binding, registering and freeing exactly what the
 * full path would; scalars flow through uniforms. Bounded by `MAX_LAUNCH_ENTRIES` signatures.
 */
export class MatmulEpilogueOptimization extends ReplayedOptimization<MatmulLaunch> {
  readonly name = "matmul";

  /** Replays `entry` for this execution (see "Launch replay" in the type doc). */
  protected replay(ctx: ExecutionContext<CpuHandle>, operations: readonly OperationIr[], structure: BlockStructure, entry: MatmulLaunch, inputs: readonly CpuHandle[]): void {
    const runtime = this.runtime;
    const written = structure.written;
    const outputs = this.launches.scratch.outputs;
    let made = 0;
    let scratch: CpuHandle | undefined;
    try {
      for (let j = 0; j < written.length; j++) {
        const out = producedAt(operations, written[j] as number);
        outputs[j] = runtime.allocate(out.shape, out.dtype, ctx.stream);
        made++;
      }
      if (entry.scratch) {
        const product = producedAt(operations, 0);
        scratch = runtime.allocate(product.shape, product.dtype, ctx.stream);
      }
      const bindings = replayBindings(entry.sources, entry.access, inputs, outputs, scratch);
      const uniforms = replayUniforms(operations, entry.evaluated, entry.uniforms);
      const fallback = this.fallback.arm(ctx, operations, written, outputs);
      const kernel = entry.kernel;
      runtime.client.group(fallback, () => runtime.launch(kernel, bindings, ctx.stream, uniforms), ctx.stream);
      fallback.settled();
      runtime.stats.fusedLaunches++;
      runtime.stats.replayedLaunches++;
    } catch (error) {
      this.fallback.discard(); // disarmed whether or not the server got to it
      for (let j = 0; j < made; j++) runtime.releaseHandle(outputs[j] as CpuHandle);
      if (scratch !== undefined) runtime.releaseHandle(scratch);
      throw error;
    }
    if (scratch !== undefined) runtime.releaseHandle(scratch);
    this.finishReplay(ctx, operations, structure, outputs);
  }

  /** The full path (see `ReplayedOptimization.decide`). */
  protected decide(ctx: ExecutionContext<CpuHandle>, operations: readonly OperationIr[], inputs: readonly CpuHandle[] | undefined): MatmulLaunch | undefined {
    const matmul = operations[0];
    invariant(matmul?.kind === "matmul", "a matmul block starts with its matmul");
    const runtime = this.runtime;
    const { last, produced, external } = scanBlock(operations, "matmul");
    const product = matmul.out;
    const written = (t: TensorIr): boolean => last.get(t.id) !== "ReadWrite";

    const allocated: CpuHandle[] = [];
    const outputs: [TensorIr, CpuHandle][] = [];
    let scratch: CpuHandle | undefined;
    let decided: MatmulLaunch | undefined;
    try {
      // Outputs first: the product may be stored into one of them.
      let target: CpuHandle | undefined;
      for (const [, out] of produced) {
        if (!written(out)) continue;
        const handle = runtime.allocate(out.shape, out.dtype, ctx.stream);
        allocated.push(handle);
        outputs.push([out, handle]);
        if (out.id === product.id) target = handle;
      }
      if (target === undefined) target = outputs.find(([out]) => out.dtype === product.dtype)?.[1];
      if (target === undefined) {
        scratch = runtime.allocate(product.shape, product.dtype, ctx.stream);
        target = scratch;
      }

      const set = new BindingSet();
      const lhs = ctx.handles.getHandle(matmul.lhs);
      const rhs = ctx.handles.getHandle(matmul.rhs);
      const lhsOperand = { binding: set.bind(lhs.memory, "read"), dtype: lhs.dtype, layout: lhs };
      const rhsOperand = { binding: set.bind(rhs.memory, "read"), dtype: rhs.dtype, layout: rhs };
      const productOperand = { binding: set.bind(target.memory, "write"), dtype: target.dtype, layout: target };

      const builder = new ElementwiseProgramBuilder(product.shape, set);
      const registers = new Map<TensorId, Register>();
      const productTarget = target;
      const load = (t: TensorIr): Register => {
        const known = registers.get(t.id);
        if (known !== undefined) return known;
        invariant(!produced.has(t.id) || t.id === product.id, () => `tensor ${t.id} is read before the block op producing it`);
        const handle = t.id === product.id ? productTarget : ctx.handles.getHandle(t);
        const r = builder.input(handle.memory, handle.dtype, handle);
        registers.set(t.id, r);
        return r;
      };
      // An epilogue whose every output dies in the block (`relu(x @ w)` disposed, the product
      // read) computes nothing anyone reads: the launch is the product alone (random program
      // 1208634823 of `npm run fuzz -- --seed 515151` built an epilogue without outputs).
      const epilogueWrites = outputs.some(([out]) => out.id !== product.id);
      const appended: number[] = [];
      if (epilogueWrites) {
        for (let i = 1; i < operations.length; i++) {
          const op = operations[i] as OperationIr;
          if (op.kind === "drop") continue;
          invariant(isElementwise(op), () => `matmul block epilogue holds a ${op.kind} op`);
          registers.set(op.out.id, appendElementwise(builder, op, load));
          appended.push(i);
        }
      }
      for (const [out, handle] of outputs) {
        if (out.id === product.id) continue; // the matmul kernel stores it
        const register = registers.get(out.id);
        invariant(register !== undefined, () => `block output ${out.id} has a register`);
        builder.output(register, handle.memory, handle.dtype, handle);
      }
      const epilogue = epilogueWrites ? builder.build(runtime.runner) : undefined;
      const product_ = matmulKernel(lhsOperand, rhsOperand, productOperand, set.writable());
      // A linear layer's epilogue (`+ bias`, `gelu`) runs on the WebAssembly core with the product,
      // the same bits (`kernels/linear-epilogue.ts`); when the core does not run, the general path.
      // The product is stored through it only when it is an output of the block (else its target
      // is an epilogue output that is overwritten, or a scratch).
      const form = epilogue === undefined ? undefined : linearForm(builder.program(), registers.get(product.id), product.shape[0] ?? 0, product.shape[1] ?? 0);
      const productIsOutput = outputs.some(([out]) => out.id === product.id);
      const linear = form === undefined ? undefined : linearKernel(lhsOperand, rhsOperand, productIsOutput ? productOperand : undefined, form, set.writable());
      const kernel: CpuKernel =
        epilogue === undefined
          ? product_
          : {
              key: `${product_.key}>${epilogue.kernel.key}`,
              get label(): string {
                return `matmul+${epilogue.kernel.label ?? "elementwise"}`;
              },
              run(buffers, uniforms) {
                if (linear !== undefined && linear(buffers)) return;
                product_.run(buffers);
                epilogue.kernel.run(buffers, uniforms);
              },
            };
      const fallback = new BlockFallback(runtime.fallbackPort, ctx, operations);
      for (const [out, handle] of outputs) fallback.output(out, handle);
      runtime.client.group(fallback, () => runtime.launch(kernel, set, ctx.stream, epilogue?.uniforms), ctx.stream);
      runtime.stats.fusedLaunches++;
      // What a replay needs, taken before the frees below change the container.
      if (inputs !== undefined) {
        decided = {
          kernel,
          sources: bindingSources(set.memories(), inputs, allocated, scratch),
          access: set.accesses().slice(),
          scratch: scratch !== undefined,
          evaluated: appended,
          uniforms: (epilogue?.uniforms.byteLength ?? 0) / 8,
        };
      }
    } catch (error) {
      for (const handle of allocated) runtime.releaseHandle(handle);
      if (scratch !== undefined) runtime.releaseHandle(scratch);
      throw error;
    }
    if (scratch !== undefined) runtime.releaseHandle(scratch);
    runtime.stats.elidedWrites += produced.size - outputs.length;
    for (const [out, handle] of outputs) ctx.handles.registerHandle(out.id, handle);
    for (const [id] of external) if (last.get(id) === "ReadWrite") ctx.handles.removeHandle(id);
    if (this.structure === undefined) this.structure = blockStructure(operations, last, produced, external);
    return decided;
  }
}

/** One replayable execution of a {@link MatmulEpilogueOptimization}, stored under its layout signature. */
interface MatmulLaunch {
  /** The combined kernel: the matmul (operand layouts and bindings baked in), then the epilogue program. */
  readonly kernel: CpuKernel;
  /** Where each binding's memory comes from, in binding order. */
  readonly sources: readonly BindingSource[];
  /** Each binding's access, in binding order. */
  readonly access: readonly BindingAccess[];
  /** Whether the product goes to a scratch allocation (no written output of its dtype). */
  readonly scratch: boolean;
  /** Indices of the epilogue ops whose steps (and uniforms) the program holds, in order. */
  readonly evaluated: readonly number[];
  /** Number of uniforms the program reads. */
  readonly uniforms: number;
}
