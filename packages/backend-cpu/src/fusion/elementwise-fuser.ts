import type { FuserProperties, FuserStatus, OperationFuser, OperationIr, Optimization, TensorId, TensorStatus } from "@weft/fusion";
import { isElementwise, operationInputs, broadcastShapes, sameShape } from "@weft/fusion";
import type { CpuHandle } from "../handle/cpu-handle.js";
import type { CpuRuntime } from "../runtime/cpu-runtime.js";
import { ElementwiseOptimization } from "./elementwise-optimization.js";

/** In relative shapes, shape id 0 always stands for a dim of size 1 (`OperationConverter`). */
const RELATIVE_ONE = 0;

/** Most operations one elementwise block covers (Burn's `TryTraceFuser` limit). */
export const MAX_FUSED_OPERATIONS = 64;

/**
 * Fuses chains of elementwise operations (unary, binary, binary-scalar, clamp, cast, where) and
 * the `drop`s among them into one {@link ElementwiseOptimization}. Burn's elementwise fuser.
 *
 * @remarks
 * **Relative shapes.** Fusers see relative operations: dims are relative shape ids, equal ids
 * mean equal sizes and id 0 means size 1, so broadcasting is decided on ids (0 broadcasts). The
 * {@link ElementwiseOptimization} re-derives everything from the global operations it executes.
 * **Acceptance.** An elementwise op is accepted while its output shape and the chain's reference
 * shape broadcast to one of the two (the op broadcasts into the reference, or the reference grows
 * into the op's output); anything else — another op kind, an incompatible shape, the 64-op limit —
 * closes the fuser. A `drop` closes it when nothing is fused yet, else it is accepted: it marks
 * the dropped tensor as dying inside the block (write elision, in-place reuse).
 * **Score** (docs/concepts.md#names): `(unfusedIo − fusedIo)·100 + (ops − 1)·10`, saturating at 0,
 * where `unfusedIo` counts every op's inputs and output and `fusedIo` counts the block's distinct
 * external inputs plus the outputs still used after it.
 * **Cut at a clean prefix** (as the WebGPU elementwise fuser does). Once closed, the block offered
 * is the longest accepted prefix that writes nothing, when there is one shorter than the accepted
 * run: every tensor it produced died in it (consumed by a `ReadWrite` use or dropped), so it is
 * dead code and launches no kernel; the operations after the cut start the next block. A `tidy`
 * loop whose steps drop their results runs no kernel at all, where a block cut by the 64-operation
 * limit in the middle of a step launched one for the half step's still-live results (the
 * recording loop of `profile-host.mjs record cpu` launched one kernel per 64 operations).
 * **Invariants.** Once `closed` it ignores everything until `reset()`; `len()` counts the offered
 * prefix (drops included): the clean prefix when the block is cut, else the accepted run; it keeps
 * no tensor ids past `reset()`.
 */
export class ElementwiseFuser implements OperationFuser<Optimization<CpuHandle>> {
  readonly #runtime: CpuRuntime;
  /** The accepted prefix; cleared by `reset`, at most {@link MAX_FUSED_OPERATIONS} long. */
  #operations: OperationIr[] = [];
  #status: FuserStatus = "open";
  #reference: number[] | undefined;
  /** Tensors produced in the accepted prefix that have not died in it yet (no consuming use, no drop). */
  #live = new Set<TensorId>();
  /** Compute operations accepted so far. */
  #computeOps = 0;
  /** The longest accepted prefix that writes nothing (its length, drops included), 0 when none. */
  #clean = 0;

  constructor(runtime: CpuRuntime) {
    this.#runtime = runtime;
  }

  fuse(operation: OperationIr): void {
    if (this.#status === "closed") return;
    if (this.#operations.length >= MAX_FUSED_OPERATIONS) {
      this.#status = "closed";
      return;
    }
    if (operation.kind === "drop") {
      if (this.#computeOps === 0) this.#status = "closed";
      else {
        this.#operations.push(operation);
        this.#live.delete(operation.tensor.id);
        if (this.#live.size === 0) this.#clean = this.#operations.length;
      }
      return;
    }
    if (!isElementwise(operation)) {
      this.#status = "closed";
      return;
    }
    const shape = operation.out.shape;
    if (this.#reference === undefined) {
      this.#reference = [...shape];
    } else {
      const merged = broadcastShapes(this.#reference, shape, RELATIVE_ONE);
      if (merged === undefined || !(sameShape(merged, this.#reference) || sameShape(merged, shape))) {
        this.#status = "closed";
        return;
      }
      this.#reference = merged;
    }
    this.#operations.push(operation);
    this.#computeOps++;
    for (const input of operationInputs(operation)) if (input.status === "ReadWrite") this.#live.delete(input.id);
    this.#live.add(operation.out.id);
  }

  /** Whether the block is cut at its clean prefix (closed, with a clean prefix shorter than the run). */
  #cut(): boolean {
    return this.#status === "closed" && this.#clean > 0 && this.#clean < this.#operations.length;
  }

  finish(): Optimization<CpuHandle> {
    return new ElementwiseOptimization(this.#runtime, this.len());
  }

  reset(): void {
    this.#operations = [];
    this.#status = "open";
    this.#reference = undefined;
    this.#live.clear();
    this.#computeOps = 0;
    this.#clean = 0;
  }

  status(): FuserStatus {
    return this.#status;
  }

  properties(): FuserProperties {
    const length = this.len();
    let numOps = 0;
    for (let i = 0; i < length; i++) if ((this.#operations[i] as OperationIr).kind !== "drop") numOps++;
    if (numOps === 0) return { score: 0, ready: false };
    const produced = new Set<TensorId>();
    const last = new Map<TensorId, TensorStatus>();
    const external = new Set<TensorId>();
    let unfusedIo = 0;
    for (let i = 0; i < length; i++) {
      const op = this.#operations[i] as OperationIr;
      for (const input of operationInputs(op)) {
        if (!produced.has(input.id) && op.kind !== "drop") external.add(input.id);
        last.set(input.id, op.kind === "drop" ? "ReadWrite" : input.status);
      }
      if (op.kind !== "drop") {
        unfusedIo += operationInputs(op).length + 1;
        produced.add(op.out.id);
        last.set(op.out.id, "NotInit");
      }
    }
    let written = 0;
    for (const id of produced) if (last.get(id) !== "ReadWrite") written++;
    const fusedIo = external.size + written;
    return { score: Math.max(0, (unfusedIo - fusedIo) * 100 + (numOps - 1) * 10), ready: true };
  }

  len(): number {
    return this.#cut() ? this.#clean : this.#operations.length;
  }

  clone(): OperationFuser<Optimization<CpuHandle>> {
    const copy = new ElementwiseFuser(this.#runtime);
    copy.#operations = [...this.#operations];
    copy.#status = this.#status;
    copy.#reference = this.#reference === undefined ? undefined : [...this.#reference];
    copy.#live = new Set(this.#live);
    copy.#computeOps = this.#computeOps;
    copy.#clean = this.#clean;
    return copy;
  }
}
