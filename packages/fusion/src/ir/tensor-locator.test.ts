import { describe, expect, it } from "vitest";
import type { OperationIr } from "./operation-ir.js";
import type { TensorId, TensorIr } from "./tensor-ir.js";
import { locatedTensor, locateTensor, producedAt, producerIndex, sameKinds } from "./tensor-locator.js";

const t = (id: number, shape: number[] = [4], status: TensorIr["status"] = "ReadOnly"): TensorIr => ({ id: id as TensorId, shape, dtype: "f32", status });

/** `b = a·2; c = b + a; drop b` with the given ids. */
function block(a: number, b: number, c: number): OperationIr[] {
  return [
    { kind: "binary-scalar", op: "mul", lhs: t(a), scalar: 2, scalarFirst: false, out: t(b, [4], "NotInit") },
    { kind: "binary", op: "add", lhs: t(b), rhs: t(a, [4], "ReadWrite"), out: t(c, [4], "NotInit") },
    { kind: "drop", tensor: t(b, [4], "ReadWrite") },
  ];
}

describe("TensorLocator helpers", () => {
  it("a locator found in one execution names the same role in another with other ids", () => {
    const first = block(1, 2, 3);
    const at = locateTensor(first, 1 as TensorId);
    expect(at, "the first use of `a`: op 0, position 0 (its lhs)").toEqual({ op: 0, pos: 0 });
    const rhs = locateTensor(first, 3 as TensorId);
    expect(rhs, "`c` is op 1's output, after its two inputs").toEqual({ op: 1, pos: 2 });
    const later = block(70, 71, 72);
    expect(locatedTensor(later, at!).id).toBe(70);
    expect(locatedTensor(later, rhs!).id).toBe(72);
  });

  it("a tensor the block does not hold has no locator, and a bad locator is an invariant error", () => {
    const ops = block(1, 2, 3);
    expect(locateTensor(ops, 9 as TensorId)).toBeUndefined();
    expect(() => locatedTensor(ops, { op: 2, pos: 1 })).toThrow(/no tensor at op 2 position 1/);
    expect(() => locatedTensor(ops, { op: 5, pos: 0 })).toThrow(/no tensor at op 5/);
  });

  it("finds producers and their outputs; a drop produces nothing", () => {
    const ops = block(1, 2, 3);
    expect(producerIndex(ops, 3 as TensorId)).toBe(1);
    expect(producerIndex(ops, 1 as TensorId), "an input is produced by no op of the block").toBe(-1);
    expect(producedAt(ops, 0).id).toBe(2);
    expect(() => producedAt(ops, 2)).toThrow(/op 2 produces nothing/);
  });

  it("sameKinds compares the kinds in order and the length", () => {
    const ops = block(1, 2, 3);
    expect(sameKinds(["binary-scalar", "binary", "drop"], ops)).toBe(true);
    expect(sameKinds(["binary", "binary-scalar", "drop"], ops)).toBe(false);
    expect(sameKinds(["binary-scalar", "binary"], ops)).toBe(false);
  });
});
