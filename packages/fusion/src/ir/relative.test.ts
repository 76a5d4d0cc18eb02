import { describe, expect, it } from "vitest";
import { OPERATIONS, forEachTensor, mapOperation, operationInputs, operationReferences, pushValues, tensorAt, valueCount } from "./operation-descriptor.js";
import type { OperationIr, OperationKind } from "./operation-ir.js";
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

/** The conversion as it was first written (eager, through `mapOperation`): the reference for the lazy form. */
function eager(ops: readonly OperationIr[]): OperationIr[] {
  const ids = new Map<number, number>();
  const shapes = new Map<number, number>([[1, 0]]);
  let scalars = 0;
  const tensor = (x: TensorIr): TensorIr => {
    let id = ids.get(x.id);
    if (id === undefined) ids.set(x.id, (id = ids.size));
    const shape = x.shape.map((d) => {
      let s = shapes.get(d);
      if (s === undefined) shapes.set(d, (s = shapes.size));
      return s;
    });
    return { id: id as TensorId, shape, dtype: x.dtype, status: x.status };
  };
  return ops.map((op) => mapOperation(op, tensor, () => scalars++));
}

/** One op of every kind whose values (not structure) are `v`, over tensors of size `n`, ids from `base`. */
function everyKind(base: number, n: number, v: number): OperationIr[] {
  const a = t(base, [n, 1]);
  const b = t(base + 1, [n, 4]);
  const out = (k: number, shape: number[], dtype: TensorIr["dtype"] = "f32"): TensorIr => ({ id: (base + 10 + k) as TensorId, shape, dtype, status: "NotInit" });
  return [
    { kind: "init", out: out(0, [n, 1]) },
    { kind: "full", out: out(1, [n, 4]), value: v },
    { kind: "arange", out: out(2, [n]), start: v, step: v + 1 },
    { kind: "random", out: out(3, [n, 4]), distribution: "normal", seed: v, a: v, b: v * 2 },
    { kind: "unary", op: "exp", input: a, out: out(4, [n, 1]) },
    { kind: "binary", op: "add", lhs: a, rhs: b, out: out(5, [n, 4]) },
    { kind: "binary-scalar", op: "mul", lhs: b, scalar: v, scalarFirst: true, out: out(6, [n, 4]) },
    { kind: "clamp", input: b, min: v, max: v + 3, out: out(7, [n, 4]) },
    { kind: "cast", input: b, out: out(8, [n, 4], "i32") },
    { kind: "where", condition: t(base + 2, [n, 4]), lhs: a, rhs: b, out: out(9, [n, 4]) },
    { kind: "reduce", op: "sum", input: b, axes: [1], keepDims: true, out: out(10, [n, 1]) },
    { kind: "matmul", lhs: b, rhs: t(base + 3, [4, n]), out: out(11, [n, n]) },
    { kind: "reshape", input: b, out: out(12, [4, n]) },
    { kind: "permute", input: b, axes: [1, 0], out: out(13, [4, n]) },
    { kind: "expand", input: a, out: out(14, [n, 4]) },
    { kind: "slice", input: b, ranges: [{ start: 0, end: n, step: 1 }, { start: v % 2, end: 4, step: 2 }], out: out(15, [n, 2]) },
    { kind: "concat", inputs: [a, a], axis: 1, out: out(16, [n, 2]) },
    { kind: "gather", input: b, indices: t(base + 4, [n, 4]), axis: 1, out: out(17, [n, 4]) },
    { kind: "pad", input: a, padding: [[v % 3, 1], [0, 2]], value: v, out: out(18, [n + 1 + (v % 3), 3]) },
    { kind: "sort", input: b, axis: 1, descending: true, output: "indices", out: out(19, [n, 3], "i32") },
    { kind: "scan", op: "prod", input: b, axis: 0, out: out(20, [n, 4]) },
    { kind: "scatter", op: "add", input: b, indices: t(base + 4, [n, 4]), src: b, axis: 1, out: out(21, [n, 4]) },
    { kind: "drop", tensor: t(base + 1, [n, 4], "ReadWrite") },
  ];
}

describe("OperationConverter keys and the lazy relative form", () => {
  it("for every op kind, ids, sizes and values are relativized away from the key", () => {
    const a = keys(everyKind(100, 6, 3));
    const b = keys(everyKind(9000, 17, 8));
    expect(a, "the same structure with other ids (100 vs 9000), sizes (6 vs 17) and values (3 vs 8) must give equal keys").toEqual(b);
    expect(new Set(a).size, "distinct operations of one segment have distinct keys").toBe(a.length);
  });

  it("structure is part of the key: op name, scalar side, axes, keepDims, distribution and dtype", () => {
    const [base] = keys([{ kind: "binary-scalar", op: "mul", lhs: t(1, [4]), scalar: 2, scalarFirst: false, out: t(2, [4], "NotInit") }]);
    const variants: OperationIr[] = [
      { kind: "binary-scalar", op: "add", lhs: t(1, [4]), scalar: 2, scalarFirst: false, out: t(2, [4], "NotInit") },
      { kind: "binary-scalar", op: "mul", lhs: t(1, [4]), scalar: 2, scalarFirst: true, out: t(2, [4], "NotInit") },
      { kind: "binary-scalar", op: "mul", lhs: { ...t(1, [4]), dtype: "i32" }, scalar: 2, scalarFirst: false, out: { ...t(2, [4], "NotInit"), dtype: "i32" } },
      { kind: "binary-scalar", op: "mul", lhs: t(1, [4, 4]), scalar: 2, scalarFirst: false, out: t(2, [4, 4], "NotInit") },
    ];
    for (const v of variants) expect(keys([v])[0], `${JSON.stringify(v)} differs in structure from the base op`).not.toEqual(base);
    const reduce = (axes: number[], keepDims: boolean): string | undefined =>
      keys([{ kind: "reduce", op: "sum", input: t(1, [3, 5]), axes, keepDims, out: t(2, [3, 1], "NotInit") }])[0];
    expect(reduce([1], true), "reduced axes are structure").not.toEqual(reduce([0], true));
    expect(reduce([1], true), "keepDims is structure").not.toEqual(reduce([1], false));
  });

  it("the lazily built relative operation equals the eager conversion, kind by kind", () => {
    const ops = everyKind(40, 5, 2);
    const converter = new OperationConverter();
    const lazy = ops.map((op) => converter.toRelative(op));
    expect(lazy.map((r) => r.op), "ids, shape ids and value placeholders must be what mapOperation gives").toEqual(eager(ops));
    expect(lazy[5]?.maxShapeId, "binary [5,1]+[5,4]: shape ids 0 (dim 1), 1 (5) and 2 (4)").toBe(2);
  });

  it("the lazy form reads multi-digit relative ids and shape ids, and rank-0 tensors, back from the key", () => {
    const ops: OperationIr[] = [];
    for (let i = 0; i < 40; i++) {
      const shape = [i + 2, 1, 1000 + i];
      ops.push({ kind: "binary", op: "add", lhs: t(10 * i + 1, shape), rhs: t(10 * i + 2, [1, 1, 1000 + i]), out: t(10 * i + 3, shape, "NotInit") });
      ops.push({ kind: "binary-scalar", op: "mul", lhs: t(10 * i + 4, []), scalar: i, scalarFirst: true, out: t(10 * i + 5, [], "NotInit") });
    }
    const converter = new OperationConverter();
    const lazy = ops.map((op) => converter.toRelative(op));
    expect(lazy.map((r) => r.op), "relative ids up to 199 and shape ids up to 80 must come back exactly").toEqual(eager(ops));
  });

  it("ids and dims past the trie's array children (slots from 1,024) key and read back like near ones", () => {
    // 120 tensors of distinct ids (tensor slots up to 16 × 120) and 1,100 distinct dims (shape ids past 1,024).
    const ops: OperationIr[] = [];
    for (let i = 0; i < 60; i++) {
      const shape = [2000 + 10 * i, 3000 + 10 * i];
      for (let k = 0; k < 8; k++) shape.push(5000 + 100 * i + k);
      ops.push({ kind: "binary", op: "add", lhs: t(2 * i + 1, shape), rhs: t(2 * i + 1, shape), out: t(2 * i + 2, shape, "NotInit") });
    }
    for (let d = 0; d < 600; d++) ops.push({ kind: "unary", op: "exp", input: t(1, [20000 + d]), out: t(1000 + d, [20000 + d], "NotInit") });
    const converter = new OperationConverter();
    const lazy = ops.map((op) => converter.toRelative(op));
    expect(converter.shapesAssigned, "1,200 distinct dims and dim 1").toBe(1201);
    expect(lazy.map((r) => r.op), "far children must give the same relative ids and shape ids").toEqual(eager(ops));
    const again = new OperationConverter();
    expect(ops.map((op) => again.toRelative(op).key), "the same keys from a second walk (the trie's far children are found, not re-made)").toEqual(lazy.map((r) => r.key));
    expect(new Set(lazy.map((r) => r.key)).size, "distinct ops, distinct keys").toBe(lazy.length);
  });

  it("the last id and dim remembered across ops never leak into the next segment", () => {
    const converter = new OperationConverter();
    const seg = (a: number, n: number): OperationIr[] => [
      { kind: "unary", op: "exp", input: t(a, [n]), out: t(a + 1, [n], "NotInit") },
      { kind: "unary", op: "exp", input: t(a + 1, [n]), out: t(a + 2, [n], "NotInit") },
    ];
    const first = seg(1, 9).map((op) => converter.toRelative(op).key);
    converter.reset();
    // The first op's input is the previous segment's last output id and dim: it must still get relative id 0 and shape id 1.
    const second = seg(3, 9).map((op) => converter.toRelative(op).key);
    expect(second).toEqual(first);
  });

  it("the relative form survives a reset of the converter that produced it", () => {
    const converter = new OperationConverter();
    const ops = chain([3, 4, 5], 9, 1);
    const before = ops.map((op) => converter.toRelative(op));
    converter.reset();
    converter.toRelative(chain([70, 71, 72], 2, 5)[1] as OperationIr);
    expect(before.map((r) => r.op), "an op built after the reset still describes the old segment").toEqual(eager(ops));
  });
});

describe("the operation descriptor table", () => {
  const ops = [...everyKind(10, 4, 1), { kind: "drop", tensor: { id: 99 as TensorId, shape: [4], dtype: "f32", status: "ReadWrite" } } as OperationIr];

  it("has a sample of every kind here, so every row below is exercised", () => {
    expect(new Set(ops.map((op) => op.kind)), "one sample per row of OPERATIONS").toEqual(new Set(Object.keys(OPERATIONS) as OperationKind[]));
  });

  it("maps tensors and values in the order the walks visit them", () => {
    for (const op of ops) {
      const visited: TensorIr[] = [];
      forEachTensor(op, (t) => visited.push(t));
      let values = 0;
      const mapped = mapOperation(op, (t) => ({ ...t, id: (t.id + 1000) as TensorId }), (v) => {
        values++;
        return v + 0.5;
      });
      const remapped: TensorIr[] = [];
      forEachTensor(mapped, (t) => remapped.push(t));
      expect(remapped.map((t) => t.id), `'${op.kind}': every tensor mapped, in walk order`).toEqual(visited.map((t) => t.id + 1000));
      expect(values, `'${op.kind}': every value visited once`).toBe(valueCount(op));
      const seen: number[] = [];
      pushValues(op, seen);
      const placeholders: number[] = [];
      mapOperation(op, (x) => x, (v) => (placeholders.push(v), v));
      expect(seen, `'${op.kind}': pushValues lists the values mapOperation maps, in order`).toEqual(placeholders);
      expect(visited.map((_, pos) => tensorAt(op, pos)), `'${op.kind}': tensorAt follows the walk`).toEqual(visited);
      expect(tensorAt(op, visited.length), `'${op.kind}': nothing past the last tensor`).toBeUndefined();
      for (const t of visited) expect(operationReferences(op, t.id), `'${op.kind}' references #${t.id}`).toBe(true);
      expect(operationReferences(op, 12345 as TensorId), `'${op.kind}' references no other tensor`).toBe(false);
      expect(operationInputs(op).length + (op.kind === "drop" ? 0 : 1), `'${op.kind}': inputs then the output`).toBe(visited.length);
    }
  });
});
