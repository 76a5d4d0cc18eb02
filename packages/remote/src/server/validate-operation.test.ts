/**
 * The server's operation validator: what the user API records passes; forged ids, shapes that do
 * not follow from the inputs, and malformed fields are refused with a `SessionViolation`.
 */
import { describe, expect, it } from "vitest";
import type { OperationIr } from "@weft/fusion";
import { type InputInfo, validateOperation } from "./validate-operation.js";
import { SessionViolation } from "./violation.js";

const bounds = { maxRank: 16, maxElements: 1 << 24 };
const tensors = new Map<number, InputInfo>([
  [1, { shape: [2, 3], dtype: "f32" }],
  [2, { shape: [3], dtype: "f32" }],
  [3, { shape: [3, 4], dtype: "f32" }],
  [4, { shape: [2, 3], dtype: "bool" }],
  [5, { shape: [2, 3], dtype: "i32" }],
]);
const lookup = (id: number): InputInfo => {
  const t = tensors.get(id);
  if (t === undefined) throw new SessionViolation("protocol", `tensor id ${id} is not a live tensor of this session`);
  return t;
};
const t = (id: number, status = "ReadOnly") => ({ id, ...lookup(id), status });
const out = (id: number, shape: number[], dtype = "f32") => ({ id, shape, dtype, status: "NotInit" });

function refused(op: unknown): string {
  try {
    validateOperation(op, lookup, bounds);
  } catch (error) {
    expect(error).toBeInstanceOf(SessionViolation);
    return (error as Error).message;
  }
  throw new Error("accepted");
}

describe("validateOperation", () => {
  it("accepts the operations the user API records, and rebuilds them with the session's input shapes", () => {
    const ops: unknown[] = [
      { kind: "binary", op: "add", lhs: t(1), rhs: t(2), out: out(10, [2, 3]) },
      { kind: "binary", op: "lt", lhs: t(1), rhs: t(2), out: out(10, [2, 3], "bool") },
      { kind: "binary-scalar", op: "mul", lhs: t(1), scalar: Number.NaN, scalarFirst: false, out: out(10, [2, 3]) },
      { kind: "unary", op: "exp", input: t(1), out: out(10, [2, 3]) },
      { kind: "matmul", lhs: t(1), rhs: t(3), out: out(10, [2, 4]) },
      { kind: "reduce", op: "sum", input: t(1), axes: [1], keepDims: true, out: out(10, [2, 1]) },
      { kind: "reduce", op: "argmax", input: t(1), axes: [0], keepDims: false, out: out(10, [3], "i32") },
      { kind: "reshape", input: t(1), out: out(10, [3, 2]) },
      { kind: "permute", input: t(1), axes: [1, 0], out: out(10, [3, 2]) },
      { kind: "slice", input: t(1), ranges: [{ start: 0, end: 2, step: 1 }, { start: 1, end: 3, step: 2 }], out: out(10, [2, 1]) },
      { kind: "concat", inputs: [t(1), t(1)], axis: 0, out: out(10, [4, 3]) },
      { kind: "gather", input: t(1), indices: t(5), axis: 1, out: out(10, [2, 3]) },
      { kind: "pad", input: t(1), padding: [[1, 0], [0, 2]], value: 0, out: out(10, [3, 5]) },
      { kind: "where", condition: t(4), lhs: t(1), rhs: t(2), out: out(10, [2, 3]) },
      { kind: "full", value: 1, out: out(10, [4]) },
      { kind: "random", distribution: "normal", seed: 7, a: 0, b: 1, out: out(10, [4]) },
      { kind: "sort", input: t(1), axis: 1, descending: true, output: "values", out: out(10, [2, 3]) },
      { kind: "sort", input: t(1), axis: 1, descending: false, output: "indices", out: out(10, [2, 2], "i32") },
      { kind: "scan", op: "prod", input: t(1), axis: 0, out: out(10, [2, 3]) },
      { kind: "scatter", op: "add", input: t(1), indices: t(5), src: t(1), axis: 1, out: out(10, [2, 3]) },
    ];
    for (const op of ops) {
      const valid = validateOperation(op, lookup, bounds) as OperationIr;
      expect(valid.kind).toBe((op as { kind: string }).kind);
    }
  });

  it("refuses an id the session does not hold (forged, dropped, another session's)", () => {
    expect(refused({ kind: "unary", op: "neg", input: { id: 99, shape: [1], dtype: "f32", status: "ReadOnly" }, out: out(10, [1]) })).toMatch(/not a live tensor/);
  });

  it("refuses an input described with another shape or dtype than the session's", () => {
    expect(refused({ kind: "unary", op: "neg", input: { ...t(1), shape: [6] }, out: out(10, [6]) })).toMatch(/tensor 1 is \[2, 3\] f32/);
  });

  it("refuses outputs that do not follow from the inputs", () => {
    expect(refused({ kind: "binary", op: "add", lhs: t(1), rhs: t(2), out: out(10, [1000]) })).toMatch(/the inputs give \[2, 3\]/);
    expect(refused({ kind: "binary", op: "add", lhs: t(1), rhs: t(3), out: out(10, [2, 3]) })).toMatch(/must broadcast/);
    expect(refused({ kind: "matmul", lhs: t(1), rhs: t(1), out: out(10, [2, 3]) })).toMatch(/inner dimensions/);
    expect(refused({ kind: "reshape", input: t(1), out: out(10, [7]) })).toMatch(/elements/);
    expect(refused({ kind: "slice", input: t(1), ranges: [{ start: 0, end: 9, step: 1 }, { start: 0, end: 3, step: 1 }], out: out(10, [9, 3]) })).toMatch(/end/);
    expect(refused({ kind: "gather", input: t(1), indices: t(1), axis: 0, out: out(10, [2, 3]) })).toMatch(/i32/);
    expect(refused({ kind: "sort", input: t(1), axis: 1, descending: false, output: "values", out: out(10, [2, 4]) })).toMatch(/keeps 4/);
    expect(refused({ kind: "sort", input: t(1), axis: 1, descending: false, output: "indices", out: out(10, [2, 3]) })).toMatch(/dtype/);
    expect(refused({ kind: "sort", input: t(1), axis: 2, descending: false, output: "values", out: out(10, [2, 3]) })).toMatch(/axis/);
    expect(refused({ kind: "scan", op: "sum", input: t(4), axis: 0, out: out(10, [2, 3], "bool") })).toMatch(/numeric/);
    expect(refused({ kind: "scatter", op: "assign", input: t(1), indices: t(1), src: t(1), axis: 1, out: out(10, [2, 3]) })).toMatch(/i32/);
    expect(refused({ kind: "scatter", op: "assign", input: t(1), indices: t(5), src: t(2), axis: 1, out: out(10, [2, 3]) })).toMatch(/indices' shape/);
  });

  it("refuses malformed fields, unknown kinds and ops, and shapes past the bounds", () => {
    expect(refused({ kind: "unary", op: "frobnicate", input: t(1), out: out(10, [2, 3]) })).toMatch(/not one of/);
    expect(refused({ kind: "sort", input: t(1), axis: 1, descending: false, output: "both", out: out(10, [2, 3]) })).toMatch(/not one of/);
    expect(refused({ kind: "scan", op: "max", input: t(1), axis: 1, out: out(10, [2, 3]) })).toMatch(/not one of/);
    expect(refused({ kind: "launch-missiles" })).toMatch(/unknown op kind/);
    expect(refused({ kind: "drop", tensor: t(1) })).toMatch(/never travels/);
    expect(refused({ kind: "full", value: "1", out: out(10, [2]) })).toMatch(/must be a number/);
    expect(refused({ kind: "full", value: 1, out: out(10, [-1]) })).toMatch(/non-negative/);
    expect(refused({ kind: "full", value: 1, out: out(10, [1 << 13, 1 << 13]) })).toMatch(/elements, more than/);
    expect(refused([1, 2, 3])).toMatch(/must be a map/);
  });
});
