/**
 * The reduce fuser and the reduce kernel agree (decided at fuse time): the fuser offers exactly the
 * blocks `planReduceBlock` can plan, so a fused reduce never falls back to running op by op.
 * Fusers see relative operations; these tests feed them through the engine's converter.
 */
import { describe, expect, it } from "vitest";
import type { OperationIr, TensorId, TensorIr, TensorStatus } from "@weft/fusion";
import { OperationConverter } from "@weft/fusion/internal";
import { ReduceFuser, type FuserKit } from "./fusers.js";
import { planReduceBlock } from "./run-reduce.js";

const t = (id: number, shape: number[], status: TensorStatus = "ReadOnly"): TensorIr => ({ id: id as TensorId, shape, dtype: "f32", status });

/** The kit is only used by `finish()`, which these tests never call. */
const kit = { maxBindings: 8 } as FuserKit;

/** Feeds `ops` (global form) to a fresh reduce fuser in relative form, as the engine does. */
function fuse(ops: OperationIr[]): ReduceFuser {
  const converter = new OperationConverter();
  const fuser = new ReduceFuser(kit);
  for (const op of ops) fuser.fuse(converter.toRelative(op).op);
  return fuser;
}

const x = t(1, [4, 8]);
const exp = (): OperationIr => ({ kind: "unary", op: "exp", input: x, out: t(2, [4, 8], "NotInit") });
const sum = (inputStatus: TensorStatus): OperationIr => ({ kind: "reduce", op: "sum", input: t(2, [4, 8], inputStatus), axes: [1], keepDims: true, out: t(3, [4, 1], "NotInit") });

describe("ReduceFuser decides at fuse time what the reduce kernel can run", () => {
  it("a prologue output consumed by the reduction: ready, and the kernel plans it", () => {
    const ops = [exp(), sum("ReadWrite")];
    expect(fuse(ops).properties().ready, "exp's output dies in the block").toBe(true);
    expect(planReduceBlock(ops), "the kernel plans the same block").toBeDefined();
  });

  it("a prologue output still used after the block: not ready (the kernel would refuse it)", () => {
    const ops = [exp(), sum("ReadOnly")];
    expect(fuse(ops).properties().ready, "exp's output would have to be written").toBe(false);
    expect(planReduceBlock(ops), "planReduceBlock refuses it too").toBeUndefined();
  });

  it("the same block with the prologue output dropped inside it: ready again", () => {
    const ops: OperationIr[] = [exp(), sum("ReadOnly"), { kind: "drop", tensor: t(2, [4, 8], "ReadWrite") }];
    const fuser = fuse(ops);
    expect(fuser.properties().ready, "the drop makes it die in the block").toBe(true);
    expect(fuser.len(), "the drop is part of the block").toBe(3);
    expect(planReduceBlock(ops)).toBeDefined();
  });

  it("an epilogue operation reading a prologue output closes the fuser before it", () => {
    const ops: OperationIr[] = [
      exp(),
      sum("ReadWrite"),
      { kind: "binary", op: "add", lhs: t(3, [4, 1]), rhs: t(2, [4, 1]), out: t(4, [4, 1], "NotInit") },
    ];
    const fuser = fuse(ops);
    expect(fuser.status(), "the reduce kernel cannot give the epilogue a prologue tensor").toBe("closed");
    expect(fuser.len(), "the block stops before that operation").toBe(2);
  });
});
