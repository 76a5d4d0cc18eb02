import { describe, expect, it } from "vitest";
import type { OperationIr } from "./operation-ir.js";
import { OperationConverter } from "./relative.js";
import type { TensorId, TensorIr } from "./tensor-ir.js";

const t = (id: number, shape: number[], status: TensorIr["status"] = "ReadOnly"): TensorIr => ({
  id: id as TensorId,
  shape,
  dtype: "f32",
  status,
});

function chain(ids: [number, number, number], n: number, value: number): OperationIr[] {
  const [a, b, c] = ids;
  return [
    { kind: "binary-scalar", op: "mul", lhs: t(a, [n, 1]), scalar: value, scalarFirst: false, out: t(b, [n, 1], "NotInit") },
    { kind: "binary", op: "add", lhs: t(b, [n, 1]), rhs: t(a, [n, 1]), out: t(c, [n, 1], "NotInit") },
    { kind: "drop", tensor: t(b, [n, 1], "ReadWrite") },
  ];
}

function keys(ops: OperationIr[]): string[] {
  const converter = new OperationConverter();
  return ops.map((op) => converter.toRelative(op).key);
}

describe("OperationConverter", () => {
  it("graphs that differ only in ids, sizes and scalar values have identical relative forms", () => {
    expect(keys(chain([10, 11, 12], 64, 3)), "ids, the size 64 vs 1000 and the scalar 3 vs -7 must all be relativized away").toEqual(
      keys(chain([500, 7, 901], 1000, -7)),
    );
  });

  it("dim 1 is always shape id 0 and distinct dims get dense ids in order of appearance", () => {
    const converter = new OperationConverter();
    const rel = converter.toRelative({ kind: "binary", op: "add", lhs: t(1, [7, 1]), rhs: t(2, [1, 9]), out: t(3, [7, 9], "NotInit") });
    expect(rel.op.kind === "binary" && [rel.op.lhs.shape, rel.op.rhs.shape, rel.op.out.shape]).toEqual([[1, 0], [0, 2], [1, 2]]);
    expect(rel.maxShapeId).toBe(2);
    expect(converter.shapesAssigned, "ids 0 (dim 1), 1 (dim 7), 2 (dim 9)").toBe(3);
  });

  it("statuses, dtypes and the dim-equality pattern are part of the key", () => {
    const base = keys(chain([1, 2, 3], 8, 1));
    const readWrite = keys([{ ...(chain([1, 2, 3], 8, 1)[0] as OperationIr & { kind: "binary-scalar" }), lhs: t(1, [8, 1], "ReadWrite") }]);
    expect(readWrite[0], "a consuming use is a different graph").not.toEqual(base[0]);
    const otherPattern = keys([{ kind: "binary", op: "add", lhs: t(1, [8, 1]), rhs: t(2, [8, 8]), out: t(3, [8, 8], "NotInit") }]);
    const samePattern = keys([{ kind: "binary", op: "add", lhs: t(1, [8, 1]), rhs: t(2, [8, 5]), out: t(3, [8, 5], "NotInit") }]);
    expect(otherPattern[0], "[8,8] vs [8,5] differ in which dims are equal").not.toEqual(samePattern[0]);
  });

  it("reset starts a new segment: the same op converts to the same key again", () => {
    const converter = new OperationConverter();
    const op = chain([4, 5, 6], 3, 2)[0] as OperationIr;
    const first = converter.toRelative(op).key;
    converter.toRelative(chain([7, 8, 9], 5, 2)[1] as OperationIr);
    converter.reset();
    expect(converter.toRelative(op).key).toBe(first);
  });
});
