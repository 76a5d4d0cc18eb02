import { StreamId, invariant } from "@weft/environment";
import { OperationConverter } from "@weft/fusion/internal";
import { HandleContainer, numElements, type DType, type OperationIr, type Optimization, type TensorId, type TensorIr, type TensorStatus, type TypedArray } from "@weft/fusion";
import type { CpuHandle } from "../handle/cpu-handle.js";
import { createCpuRuntime, type CpuRuntime, type CpuRuntimeOptions } from "../runtime/cpu-runtime.js";
import { allocateTyped } from "../kernels/cpu-kernel.js";

/**
 * Drives a {@link CpuRuntime} directly — a handle container, IR builders, unfused and fused
 * execution, reads — without a `FusionDevice`, for the backend's own tests and for numerics
 * checks in other packages.
 *
 * **Invariant.** Tensor ids are fresh per harness (SSA); every op executes on `stream`.
 */
export class CpuTestHarness {
  readonly runtime: CpuRuntime;
  readonly handles: HandleContainer<CpuHandle>;
  readonly stream: StreamId = StreamId.DEFAULT;
  #nextId = 1;

  constructor(options: CpuRuntimeOptions = {}) {
    this.runtime = createCpuRuntime(options);
    this.handles = new HandleContainer<CpuHandle>((h) => this.runtime.releaseHandle(h));
  }

  /** Uploads `values` as a tensor of `shape`/`dtype`; returns its IR (status `ReadOnly`). */
  tensor(values: ArrayLike<number>, shape: readonly number[], dtype: DType = "f32"): TensorIr {
    invariant(values.length === numElements(shape), () => `${values.length} values for shape [${shape.join(", ")}]`);
    const data = allocateTyped(dtype, values.length);
    for (let i = 0; i < values.length; i++) data[i] = values[i] ?? 0;
    const ir = this.output(shape, dtype);
    this.handles.registerHandle(ir.id, this.runtime.upload({ data, shape, dtype }, this.stream));
    return { ...ir, status: "ReadOnly" };
  }

  /** A fresh output IR (`NotInit`). */
  output(shape: readonly number[], dtype: DType = "f32"): TensorIr {
    return { id: this.#nextId++ as TensorId, shape: [...shape], dtype, status: "NotInit" };
  }

  /** `tensor` as used with `status` (`ReadWrite` marks its last use). */
  use(tensor: TensorIr, status: TensorStatus): TensorIr {
    return { ...tensor, status };
  }

  /** Executes `op` unfused and returns its output as a `ReadOnly` use (`undefined` for `drop`). */
  run(op: OperationIr): TensorIr {
    this.runtime.executeOperation(op, { handles: this.handles, stream: this.stream });
    invariant(op.kind !== "drop", "run() of a drop has no output; use exec()");
    return { ...op.out, status: "ReadOnly" };
  }

  /** Executes `op` unfused (drops included). */
  exec(op: OperationIr): void {
    this.runtime.executeOperation(op, { handles: this.handles, stream: this.stream });
  }

  /**
   * Feeds `ops` (in relative form, as the engine does) to a fresh fuser of `kind` (the elementwise
   * fuser by default, or the matmul-epilogue fuser), checks it accepted all of them, and executes
   * the optimization with the global `ops`.
   * @returns the fuser's score.
   */
  runFused(ops: readonly OperationIr[], kind: "elementwise" | "matmul" | "softmax" = "elementwise"): number {
    const { optimization, score } = this.optimize(ops, kind);
    optimization.execute({ handles: this.handles, stream: this.stream }, ops);
    return score;
  }

  /**
   * The optimization (and score) a fresh fuser of `kind` makes of `ops`, not executed: what a
   * cached plan holds, so a test can execute it again and again with new global operations of the
   * same relative structure (`optimization.execute({ handles, stream }, ops)`).
   */
  optimize(ops: readonly OperationIr[], kind: "elementwise" | "matmul" | "softmax" = "elementwise"): { readonly optimization: Optimization<CpuHandle>; readonly score: number } {
    const fuser = this.runtime.fusers()[kind === "elementwise" ? 0 : kind === "matmul" ? 1 : 2];
    invariant(fuser !== undefined, "runFused needs a runtime created with fusion");
    const converter = new OperationConverter();
    for (const op of ops) fuser.fuse(converter.toRelative(op).op);
    invariant(fuser.len() === ops.length, () => `the fuser accepted ${fuser.len()} of ${ops.length} ops`);
    const { score } = fuser.properties();
    return { optimization: fuser.finish(), score };
  }

  /** The values of `tensor` (row-major). */
  read(tensor: TensorIr): Promise<TypedArray> {
    return this.runtime.read(this.handles.getHandle(tensor), tensor, this.stream);
  }

  /** The values of `tensor` now, as plain numbers. */
  values(tensor: TensorIr): number[] {
    const data = this.runtime.readSync(this.handles.getHandle(tensor), tensor, this.stream);
    invariant(data !== undefined, "the CPU backend reads synchronously");
    return Array.from(data);
  }
}
