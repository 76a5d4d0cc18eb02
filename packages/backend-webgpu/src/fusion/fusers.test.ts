/**
 * The reduce fuser and the reduce kernel agree (decided at fuse time): the fuser offers exactly the
 * blocks `planReduceBlock` can plan, so a fused reduce never falls back to running op by op.
 * Fusers see relative operations; these tests feed them through the engine's converter.
 */
import { describe, expect, it } from "vitest";
import type { OperationIr, TensorId, TensorIr, TensorStatus } from "@weft/fusion";
import { OperationConverter } from "@weft/fusion/internal";
import { ElementwiseFuser, ReduceFuser, type FuserKit } from "./fusers.js";
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

describe("the trace fusers count the bindings a block's kernel needs, not every tensor it touched", () => {
  const v = (id: number, status: TensorStatus = "ReadOnly"): TensorIr => t(id, [16], status);
  const add = (input: TensorIr, out: number): OperationIr => ({ kind: "binary-scalar", op: "add", lhs: input, scalar: 1, scalarFirst: false, out: v(out, "NotInit") });
  const drop = (id: number): OperationIr => ({ kind: "drop", tensor: v(id, "ReadWrite") });
  /** One `tidy` step: `x + 1 + 1 …` (`adds` adds, every result alive), then the drops of its results. */
  const step = (x: number, first: number, adds: number): OperationIr[] => {
    const ops: OperationIr[] = [];
    for (let k = 0; k < adds; k++) ops.push(add(v(k === 0 ? x : first + k - 1), first + k));
    for (let k = 0; k < adds; k++) ops.push(drop(first + k));
    return ops;
  };
  function feed(ops: OperationIr[]): ElementwiseFuser {
    const converter = new OperationConverter();
    const fuser = new ElementwiseFuser(kit);
    for (const op of ops) fuser.fuse(converter.toRelative(op).op);
    return fuser;
  }

  it("results dropped inside the block take no binding: steps of a tidy loop fuse past the limit", () => {
    // Each step touches 1 + 5 tensors; four steps touch 21 distinct tensors, never more than 6 live.
    const ops = [...step(1, 10, 5), ...step(1, 20, 5), ...step(1, 30, 5), ...step(1, 40, 5)];
    const fuser = feed(ops);
    expect(fuser.status(), "never more than 6 bindings (limit 8)").toBe("open");
    expect(fuser.len()).toBe(ops.length);
  });

  it("results alive after the block take a binding each: a chain of live results offers the longest prefix that fits", () => {
    const ops: OperationIr[] = [];
    for (let k = 0; k < 12; k++) ops.push(add(v(k === 0 ? 1 : 100 + k - 1), 100 + k));
    const fuser = feed(ops);
    expect(fuser.status(), "past the limit the results may still die in the block").toBe("open");
    expect(fuser.len(), "1 input + 7 written outputs = 8 bindings").toBe(7);
    expect(fuser.properties(), "scored by the fitting prefix's compute ops").toEqual({ ready: true, score: 70 });
    const closed = feed([...ops, { kind: "reduce", op: "sum", input: v(111), axes: [0], keepDims: true, out: t(200, [1], "NotInit") }]);
    expect(closed.status()).toBe("closed");
    expect(closed.len(), "closed, with no clean prefix: the longest prefix that fits").toBe(7);
  });

  it("a step whose live results pass the limit and are dropped at its end is dead code: one block, no cut", () => {
    // Ten live results (11 bindings at the tenth add, limit 8), then their drops: the step writes nothing.
    const ops = [...step(1, 10, 10), ...step(1, 30, 10)];
    const fuser = feed(ops);
    expect(fuser.status()).toBe("open");
    expect(fuser.len(), "both steps, past the limit in each: they write nothing").toBe(ops.length);
    expect(fuser.properties()).toEqual({ ready: true, score: 200 });
  });

  it("past the limit, a clean prefix is offered before the longest fitting one", () => {
    // A dead step (clean at 6), then a chain of live results past the limit (fits up to 6 + 7).
    const ops: OperationIr[] = [...step(1, 10, 3)];
    for (let k = 0; k < 12; k++) ops.push(add(v(k === 0 ? 1 : 100 + k - 1), 100 + k));
    const fuser = feed(ops);
    expect(fuser.len(), "the dead step launches nothing; the chain starts the next block").toBe(6);
    expect(fuser.properties()).toEqual({ ready: true, score: 30 });
  });

  it("the limit still closes the reduce fuser (it cannot offer a shorter prefix)", () => {
    const converter = new OperationConverter();
    const fuser = new ReduceFuser(kit);
    const ops: OperationIr[] = [];
    for (let k = 0; k < 12; k++) ops.push(add(v(k === 0 ? 1 : 100 + k - 1), 100 + k));
    for (const op of ops) fuser.fuse(converter.toRelative(op).op);
    expect(fuser.status()).toBe("closed");
    expect(fuser.len()).toBe(7);
  });

  it("a consuming use frees its binding, and an op reading one tensor twice binds it once", () => {
    const ops: OperationIr[] = [
      { kind: "binary", op: "mul", lhs: v(1), rhs: v(1), out: v(2, "NotInit") },
      ...Array.from({ length: 20 }, (_, k): OperationIr => add(v(2 + k, "ReadWrite"), 3 + k)),
    ];
    const fuser = feed(ops);
    expect(fuser.status(), "1 input + 1 live output throughout").toBe("open");
    expect(fuser.len()).toBe(ops.length);
  });

  it("a closed fuser offers its longest prefix that writes nothing (dead code: no kernel)", () => {
    // Two whole steps (clean), then half a step whose results are still alive, then a reduction.
    const ops: OperationIr[] = [...step(1, 10, 3), ...step(1, 20, 3), add(v(1), 30), add(v(30), 31), { kind: "reduce", op: "sum", input: v(31), axes: [0], keepDims: true, out: t(32, [1], "NotInit") }];
    const fuser = feed(ops);
    expect(fuser.status(), "the reduction closes it").toBe("closed");
    expect(fuser.len(), "cut after the two steps; the half step goes to the next block").toBe(12);
    expect(fuser.properties(), "the cut block is ready, scored by its own compute ops").toEqual({ ready: true, score: 60 });
  });

  it("an open fuser is never cut (the segment may still end cleanly)", () => {
    const ops: OperationIr[] = [...step(1, 10, 3), add(v(1), 30)];
    expect(feed(ops).len()).toBe(ops.length);
  });
});

describe("the elementwise fuser packs one-element products: one binding per storage type", () => {
  const one = (id: number, status: TensorStatus = "ReadOnly", dtype: TensorIr["dtype"] = "f32"): TensorIr => ({ id: id as TensorId, shape: [1], dtype, status });
  /** `n` dependent `+ 1` on a one-element tensor of `dtype`, every result alive after the block. */
  const chain = (n: number, dtype: TensorIr["dtype"] = "f32"): OperationIr[] =>
    Array.from({ length: n }, (_, k): OperationIr => ({ kind: "binary-scalar", op: "add", lhs: one(k === 0 ? 1 : 100 + k - 1, "ReadOnly", dtype), scalar: 1, scalarFirst: false, out: one(100 + k, "NotInit", dtype) }));
  function feed(fuser: ElementwiseFuser, ops: OperationIr[]): ElementwiseFuser {
    const converter = new OperationConverter();
    for (const op of ops) fuser.fuse(converter.toRelative(op).op);
    return fuser;
  }

  it("a chain of live one-element f32 results fuses past the binding limit (input + one pack)", () => {
    const fuser = feed(new ElementwiseFuser(kit), chain(40));
    expect(fuser.status()).toBe("open");
    expect(fuser.len()).toBe(40);
  });

  it("f16 results do not pack: the chain offers the prefix that fits the limit", () => {
    const fuser = feed(new ElementwiseFuser(kit), chain(12, "f16"));
    expect(fuser.len(), "1 input + 7 written outputs = 8 bindings").toBe(7);
  });

  it("each storage type is one pack: f32 and i32 results of one block take two bindings", () => {
    const ops: OperationIr[] = [...chain(10)];
    for (let k = 0; k < 10; k++) ops.push({ kind: "cast", input: one(100 + k), out: one(200 + k, "NotInit", "i32") });
    const fuser = feed(new ElementwiseFuser(kit), ops);
    expect(fuser.status(), "1 input + an f32 pack + an i32 pack").toBe("open");
    expect(fuser.len()).toBe(20);
  });
});
