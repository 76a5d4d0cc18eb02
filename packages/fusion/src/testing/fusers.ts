import { invariant } from "@weft/environment";
import type { OperationIr } from "../ir/operation-ir.js";
import { operationInputs, operationOutputs } from "../ir/operation-descriptor.js";
import type { TensorId } from "../ir/tensor-ir.js";
import type {
  ExecutionContext,
  FuserProperties,
  FuserStatus,
  OperationFuser,
  Optimization,
} from "../runtime/fusion-runtime.js";
import { acceptedBy } from "../runtime/fusion-runtime.js";
import { evaluate } from "./host-math.js";
import type { TestHandle, TestRuntime } from "./test-runtime.js";

const ELEMENTWISE = new Set<OperationIr["kind"]>(["unary", "binary", "binary-scalar", "clamp", "cast"]);

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/**
 * The block {@link ElementwiseFuser} produces: runs a chain of same-shape elementwise operations
 * on the host as one "kernel", with write elision and in-place reuse.
 *
 * @remarks
 * **Write elision.** A tensor produced and dropped inside the block is never allocated.
 * **In place.** An output may take over the memory of an input read from outside the block that
 * is dropped inside it, only when the runtime says the handle is solely owned (`canMut`): never a
 * shared view's memory, never a tensor another reference still holds.
 */
export class ElementwiseOptimization implements Optimization<TestHandle> {
  readonly name = "elementwise";
  constructor(
    readonly len: number,
    private readonly runtime: TestRuntime,
  ) {}

  execute(ctx: ExecutionContext<TestHandle>, operations: readonly OperationIr[]): void {
    invariant(operations.length === this.len, () => `elementwise block of ${this.len} ops got ${operations.length}`);
    for (const op of operations) this.runtime.checkFault(op);
    const dropped = new Set<TensorId>();
    for (const op of operations) if (op.kind === "drop") dropped.add(op.tensor.id);
    const values = new Map<TensorId, Float64Array>();
    const external: { id: TensorId; handle: TestHandle }[] = [];
    const outputs: OperationIr[] = [];
    for (const op of operations) {
      if (op.kind === "drop") continue;
      const inputs = operationInputs(op).map((t) => {
        let v = values.get(t.id);
        if (v === undefined) {
          const handle = ctx.handles.getHandle(t);
          external.push({ id: t.id, handle });
          v = handle.memory.data;
          values.set(t.id, v);
        }
        return v;
      });
      for (const out of operationOutputs(op)) values.set(out.id, evaluate(op, inputs));
      this.runtime.executedOperations++;
      outputs.push(op);
    }
    const skipped = this.runtime.deviceFailureOf(external.map((e) => e.handle));
    if (skipped !== undefined) {
      // One launch: a server skips all of it when any input is tainted, tainting every output.
      for (const op of outputs) {
        for (const out of operationOutputs(op)) {
          if (dropped.has(out.id)) continue;
          const handle = this.runtime.allocate(new Float64Array(0));
          this.runtime.taintDeviceSide(handle, skipped);
          ctx.handles.registerHandle(out.id, handle);
        }
      }
      return;
    }
    const reusable = external.filter((e) => dropped.has(e.id) && this.runtime.canMut(e.handle));
    for (const op of outputs) {
      for (const out of operationOutputs(op)) {
        if (dropped.has(out.id)) continue; // write elision: its last use is inside the block
        const v = values.get(out.id);
        invariant(v !== undefined, "elementwise output not computed");
        this.runtime.allocatedFor.add(out.id);
        const donor = reusable.findIndex((e) => e.handle.memory.data.length === v.length);
        const reuse = reusable[donor];
        if (reuse !== undefined) {
          reusable.splice(donor, 1);
          reuse.handle.memory.data.set(v);
          this.runtime.inPlaceWrites++;
          ctx.handles.registerHandle(out.id, this.runtime.retainHandle(reuse.handle));
        } else {
          ctx.handles.registerHandle(out.id, this.runtime.allocate(v));
        }
      }
    }
  }
}

/**
 * Fuses chains of elementwise operations whose tensors all have the same relative shape, plus the
 * `drop`s among them. Closes at the first other operation. Score: the number of compute ops;
 * ready once it holds one.
 */
export class ElementwiseFuser implements OperationFuser<Optimization<TestHandle>> {
  #ops = 0;
  #compute = 0;
  #shape: readonly number[] | undefined;
  #status: FuserStatus = "open";

  constructor(private readonly runtime: TestRuntime) {}

  fuse(operation: OperationIr): void {
    if (this.#status === "closed") return;
    if (operation.kind === "drop") {
      if (this.#compute === 0) {
        this.#status = "closed";
        return;
      }
      this.#ops++;
      return;
    }
    const out = operationOutputs(operation)[0];
    const tensors = [...operationInputs(operation), ...operationOutputs(operation)];
    const shape = this.#shape ?? out?.shape;
    if (!ELEMENTWISE.has(operation.kind) || shape === undefined || !tensors.every((t) => sameShape(t.shape, shape))) {
      this.#status = "closed";
      return;
    }
    this.#shape = shape;
    this.#ops++;
    this.#compute++;
  }

  finish(): Optimization<TestHandle> {
    invariant(this.#compute > 0, "finish() of a fuser that is not ready");
    return new ElementwiseOptimization(this.#ops, this.runtime);
  }

  reset(): void {
    this.#ops = 0;
    this.#compute = 0;
    this.#shape = undefined;
    this.#status = "open";
  }

  status(): FuserStatus {
    return this.#status;
  }

  properties(): FuserProperties {
    return { score: this.#compute, ready: this.#compute > 0 };
  }

  len(): number {
    return this.#ops;
  }

  clone(): OperationFuser<Optimization<TestHandle>> {
    const copy = new ElementwiseFuser(this.runtime);
    copy.#ops = this.#ops;
    copy.#compute = this.#compute;
    copy.#shape = this.#shape;
    copy.#status = this.#status;
    return copy;
  }
}

/**
 * A fuser that stays open and is never ready: operations pile up until an explicit drain, a read
 * that needs them, or the queue limit. Burn's test `NeverReadyFuser`; what composition tests use
 * to keep a segment pending while foreign events land.
 */
export class NeverReadyFuser<O> implements OperationFuser<O> {
  #len = 0;

  fuse(_operation: OperationIr): void {
    this.#len++;
  }

  finish(): O {
    throw new Error("NeverReadyFuser is never ready; finish() must not be called");
  }

  reset(): void {
    this.#len = 0;
  }

  status(): FuserStatus {
    return "open";
  }

  properties(): FuserProperties {
    return { score: 0, ready: false };
  }

  len(): number {
    return this.#len;
  }

  clone(): OperationFuser<O> {
    const copy = new NeverReadyFuser<O>();
    copy.#len = this.#len;
    return copy;
  }
}

/** What a {@link TappedFuser} calls around its inner fuser. */
export interface FuserTaps<O> {
  /** Called with every operation fed to the fuser or any of its clones. */
  readonly fuse?: (operation: OperationIr) => void;
  /** Replaces what `finish()` returns. */
  readonly finish?: (optimization: O) => O;
  /**
   * The prefix the fuser offers of the `accepted` operations it took (`len()`; `accepted()` stays
   * the inner fuser's `len()`): a fuser that accepts more than it offers
   * (`OperationFuser.accepted`).
   */
  readonly offer?: (accepted: number) => number;
}

/**
 * A fuser that delegates to `inner` and calls {@link FuserTaps} around it — in its clones too
 * (the engine's search feeds clones of a stream's fusers, never the instances themselves).
 */
export class TappedFuser<O> implements OperationFuser<O> {
  constructor(
    private readonly inner: OperationFuser<O>,
    private readonly taps: FuserTaps<O>,
  ) {}

  fuse(operation: OperationIr): void {
    this.taps.fuse?.(operation);
    this.inner.fuse(operation);
  }

  finish(): O {
    const optimization = this.inner.finish();
    return this.taps.finish === undefined ? optimization : this.taps.finish(optimization);
  }

  reset(): void {
    this.inner.reset();
  }

  status(): FuserStatus {
    return this.inner.status();
  }

  properties(): FuserProperties {
    return this.inner.properties();
  }

  len(): number {
    return this.taps.offer === undefined ? this.inner.len() : this.taps.offer(this.accepted());
  }

  accepted(): number {
    return acceptedBy(this.inner);
  }

  clone(): OperationFuser<O> {
    return new TappedFuser(this.inner.clone(), this.taps);
  }
}
