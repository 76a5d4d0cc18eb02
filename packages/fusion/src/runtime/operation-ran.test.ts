/**
 * `OperationRan` is exact for drops (docs/concepts.md#fusionruntime): the `ran` a runtime's `freeHandle` receives for a
 * dropped tensor is `"ran"` exactly when the runtime was handed that `drop` — inside a fused block
 * that executed, or alone through `executeOperation` — and `"not-ran"` otherwise. One test per path
 * a drop takes: on an empty segment, unfused in a segment, fused, in a fused block that failed, and
 * a drop whose execution throws. A remote runtime relies on it: it forwards the drops it is handed
 * and frees only the handles whose drop it never saw.
 */
import { InjectedFaultError } from "@weft/server";
import { StreamId } from "@weft/environment";
import { describe, expect, it } from "vitest";
import { FusionDevice } from "../device/fusion-device.js";
import type { OperationIr } from "../ir/operation-ir.js";
import type { TensorId, TensorIr } from "../ir/tensor-ir.js";
import { ElementwiseFuser, NeverReadyFuser, type TestHandle, TestRuntime, fromValues, scalar, unary } from "../testing/index.js";
import type { ExecutionContext, OperationRan } from "./fusion-runtime.js";
import type { HandleContainer } from "./handle-container.js";

/** A test runtime that records which drops it was handed and what each `freeHandle` was told. */
class RecordingRuntime extends TestRuntime {
  /** Tensor ids of the drops handed to `executeOperation`. */
  readonly handedDrops: TensorId[] = [];
  /** Every `freeHandle` call: the tensor and the `ran` it received. */
  readonly frees: { id: TensorId; ran: OperationRan }[] = [];
  /** When true, `executeOperation` throws for a drop (a runtime that fails to forward it). */
  failDrops = false;

  override executeOperation(op: OperationIr, ctx: ExecutionContext<TestHandle>): void {
    if (op.kind === "drop") {
      if (this.failDrops) throw new InjectedFaultError("drop");
      this.handedDrops.push(op.tensor.id);
    }
    super.executeOperation(op, ctx);
  }

  override freeHandle(handles: HandleContainer<TestHandle>, tensor: TensorIr, ran: OperationRan): void {
    this.frees.push({ id: tensor.id, ran });
    super.freeHandle(handles, tensor, ran);
  }

  ranFor(id: TensorId): OperationRan[] {
    return this.frees.filter((f) => f.id === id).map((f) => f.ran);
  }
}

function device(fusers: "none" | "never-ready" | "elementwise"): { device: FusionDevice<TestHandle>; runtime: RecordingRuntime } {
  const runtime = new RecordingRuntime({
    fusers: (rt) => (fusers === "elementwise" ? [new ElementwiseFuser(rt)] : fusers === "never-ready" ? [new NeverReadyFuser()] : []),
  });
  return { device: new FusionDevice<TestHandle>(runtime), runtime };
}

describe("OperationRan is exact for drops", () => {
  it("a drop on an empty segment is handed to the runtime, and freeHandle is told it ran", async () => {
    const { device: d, runtime } = device("none");
    const x = fromValues(d, [1, 2]);
    await d.sync();
    expect(d.streams.queueLength(StreamId.current()), "nothing pending: the drop takes the empty-segment path").toBe(0);
    x.dispose();
    expect(runtime.handedDrops, "the runtime saw the drop").toEqual([x.id]);
    expect(runtime.ranFor(x.id)).toEqual(["ran"]);
    expect(d.memory().liveHandles).toBe(0);
  });

  it("a drop run unfused inside a segment is handed to executeOperation, and freeHandle is told it ran", async () => {
    const { device: d, runtime } = device("never-ready");
    const x = fromValues(d, [1, 2]);
    const y = unary(d, "neg", x);
    x.dispose(); // pending: the never-ready fuser keeps the segment open until the read
    expect(runtime.handedDrops, "nothing ran yet").toEqual([]);
    expect(Array.from(await y.read())).toEqual([-1, -2]);
    expect(d.inspector.composition()).toContain("unfused drop[drop]");
    expect(runtime.handedDrops, "the unfused drop went through executeOperation").toEqual([x.id]);
    expect(runtime.ranFor(x.id)).toEqual(["ran"]);
    y.dispose();
    await d.syncAll();
    expect(d.memory().liveHandles).toBe(0);
  });

  it("a drop inside a fused block that ran was handed to the optimization: freeHandle is told it ran", async () => {
    const { device: d, runtime } = device("elementwise");
    const x = fromValues(d, [1, 2]);
    await d.sync();
    const y = scalar(d, "mul", x, 3);
    x.dispose(); // the pending use becomes the consuming one, inside the block
    expect(Array.from(await y.read())).toEqual([3, 6]);
    expect(d.inspector.composition().some((c) => c.startsWith("fused elementwise") && c.includes("drop")), "the drop is part of a fused block").toBe(true);
    expect(runtime.handedDrops, "a fused drop never goes through executeOperation").toEqual([]);
    expect(runtime.ranFor(x.id)).toEqual(["ran"]);
    y.dispose();
  });

  it("a drop inside a fused block that failed as a whole is re-run op by op: freeHandle is told ran", async () => {
    const { device: d, runtime } = device("elementwise");
    const x = fromValues(d, [1, 2]);
    await d.sync();
    runtime.failWhen = (op) => op.kind === "binary-scalar";
    const y = scalar(d, "mul", x, 3);
    x.dispose();
    await expect(y.read()).rejects.toThrow();
    // The block threw before changing anything, so the queue re-ran it op by op (docs/errors.md):
    // the mul fails again, alone, and the drop after it is carried out.
    expect(runtime.ranFor(x.id), "the re-run carried the drop out").toEqual(["ran"]);
    expect(d.memory().liveHandles, "x's handle went with its drop").toBe(1); // y's error entry
    y.dispose();
    await d.syncAll();
    expect(d.memory().liveHandles).toBe(0);
  });

  it("a drop whose execution throws was not carried out: freeHandle is told not-ran", async () => {
    const { device: d, runtime } = device("none");
    const x = fromValues(d, [1, 2]);
    await d.sync();
    runtime.failDrops = true;
    x.dispose();
    expect(runtime.ranFor(x.id)).toEqual(["not-ran"]);
    expect(d.inspector.composition()).toContain("unfused drop[drop] not-ran");
    expect(d.memory().liveHandles, "the default freeHandle still removes the entry").toBe(0);
  });

  it("a drop of a tensor that carries an error is still handed to the runtime", async () => {
    const { device: d, runtime } = device("none");
    runtime.failWhen = (op) => op.kind === "unary";
    const x = fromValues(d, [1, 2]);
    const y = unary(d, "neg", x);
    await expect(y.read()).rejects.toThrow();
    y.dispose();
    expect(runtime.handedDrops).toContain(y.id);
    expect(runtime.ranFor(y.id)).toEqual(["ran"]);
    x.dispose();
    expect(d.memory().liveHandles).toBe(0);
  });
});
