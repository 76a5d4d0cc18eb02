import { describe, expect, it } from "vitest";
import { UnsupportedError } from "@weft/environment";
import type { BinaryOp, TensorIr, UnaryOp } from "@weft/fusion";
import { CpuTestHarness } from "../testing/cpu-test-harness.js";
import { IndexOutOfRangeError, InvalidOperationError } from "../errors/cpu-errors.js";

const f = (values: number[]): number[] => values.map(Math.fround);

describe("CpuRuntime: creation ops", () => {
  it("full, arange and random fill dense tensors of the output dtype", () => {
    const h = new CpuTestHarness();
    expect(h.values(h.run({ kind: "full", out: h.output([2, 2], "i32"), value: 7.9 })), "fill value cast to i32 truncates").toEqual([7, 7, 7, 7]);
    expect(h.values(h.run({ kind: "arange", out: h.output([4]), start: 1, step: 0.5 }))).toEqual([1, 1.5, 2, 2.5]);
    const u = h.values(h.run({ kind: "random", out: h.output([64]), distribution: "uniform", seed: 3, a: 2, b: 4 }));
    expect(u.every((v) => v >= 2 && v <= 4), "uniform values lie in [a, b]").toBe(true);
    const again = h.values(h.run({ kind: "random", out: h.output([64]), distribution: "uniform", seed: 3, a: 2, b: 4 }));
    expect(again, "same seed, same values").toEqual(u);
  });

  it("an empty tensor is created, read and computed on without error", () => {
    const h = new CpuTestHarness();
    const e = h.run({ kind: "full", out: h.output([0, 3]), value: 1 });
    expect(h.values(e)).toEqual([]);
    expect(h.values(h.run({ kind: "unary", op: "exp", input: e, out: h.output([0, 3]) }))).toEqual([]);
    expect(h.values(h.run({ kind: "reduce", op: "sum", input: e, axes: [0], keepDims: false, out: h.output([3]) })), "sum over an empty axis is 0").toEqual([0, 0, 0]);
  });
});

describe("CpuRuntime: elementwise ops", () => {
  it("every unary op on f32, including NaN and ±Inf", () => {
    const h = new CpuTestHarness();
    const x = h.tensor([-1.5, 0, 2.5, NaN, Infinity, -Infinity], [6]);
    const expected: Record<UnaryOp, (v: number) => number> = {
      neg: (v) => -v, abs: Math.abs, exp: Math.exp, log: Math.log, log2: Math.log2, log1p: Math.log1p, expm1: Math.expm1,
      sqrt: Math.sqrt, rsqrt: (v) => 1 / Math.sqrt(v), sin: Math.sin, cos: Math.cos, tan: Math.tan, tanh: Math.tanh,
      sigmoid: (v) => 1 / (1 + Math.exp(-v)), relu: (v) => (v > 0 ? v : v !== v ? v : 0),
      gelu: (v) => (v === -1.5 ? -0.100210801903287 : v === 2.5 ? 2.48447583668556 : v === 0 ? 0 : v === Infinity ? Infinity : v === -Infinity ? NaN : NaN),
      silu: (v) => v / (1 + Math.exp(-v)) , erf: (v) => (v === -1.5 ? -0.9661051464753108 : v === 2.5 ? 0.999593047982555 : v === 0 ? 0 : v === Infinity ? 1 : v === -Infinity ? -1 : NaN),
      floor: Math.floor, ceil: Math.ceil, round: (v) => (v === -1.5 ? -2 : v === 2.5 ? 2 : v), sign: (v) => (v > 0 ? 1 : v < 0 ? -1 : v),
      reciprocal: (v) => 1 / v, square: (v) => v * v, not: (v) => (v === 0 ? 1 : 0),
    };
    for (const op of Object.keys(expected) as UnaryOp[]) {
      const dtype = op === "not" ? "bool" : "f32";
      const got = h.values(h.run({ kind: "unary", op, input: x, out: h.output([6], dtype) }));
      const want = [-1.5, 0, 2.5, NaN, Infinity, -Infinity].map((v) => Math.fround(expected[op](v)));
      if (op === "silu") want[5] = NaN; // -inf · sigmoid(-inf) = -inf · 0
      for (let i = 0; i < 6; i++) {
        const [g, w] = [got[i]!, want[i]!];
        if (Number.isNaN(w)) expect(g, `${op}(${[-1.5, 0, 2.5, NaN, Infinity, -Infinity][i]}) is NaN`).toBeNaN();
        else expect(Math.abs(g - w) <= Math.abs(w) * 2 ** -23 || g === w, `${op}(${[-1.5, 0, 2.5, NaN, Infinity, -Infinity][i]}) = ${g}, want ${w} within 1 f32 ulp`).toBe(true);
      }
    }
  });

  it("binary ops broadcast [2,1] with [3] to [2,3], and compare/logical produce bool", () => {
    const h = new CpuTestHarness();
    const a = h.tensor([1, 4], [2, 1]);
    const b = h.tensor([1, 2, 4], [3]);
    const run = (op: BinaryOp, dtype: "f32" | "bool" = "f32") => h.values(h.run({ kind: "binary", op, lhs: a, rhs: b, out: h.output([2, 3], dtype) }));
    expect(run("add")).toEqual([2, 3, 5, 5, 6, 8]);
    expect(run("sub")).toEqual([0, -1, -3, 3, 2, 0]);
    expect(run("div")).toEqual(f([1, 0.5, 0.25, 4, 2, 1]));
    expect(run("pow")).toEqual([1, 1, 1, 4, 16, 256]);
    expect(run("maximum")).toEqual([1, 2, 4, 4, 4, 4]);
    expect(run("mod")).toEqual([0, 1, 1, 0, 0, 0]);
    expect(run("lt", "bool")).toEqual([0, 1, 1, 0, 0, 0]);
    expect(run("eq", "bool")).toEqual([1, 0, 0, 0, 0, 1]);
    expect(run("xor", "bool"), "non-zero is true").toEqual([0, 0, 0, 0, 0, 0]);
  });

  it("integer binary ops wrap, truncate and floor as documented", () => {
    const h = new CpuTestHarness();
    const a = h.tensor([7, -7, 2147483647], [3], "i32");
    const b = h.tensor([-2, 2, 1], [3], "i32");
    const run = (op: BinaryOp) => h.values(h.run({ kind: "binary", op, lhs: a, rhs: b, out: h.output([3], "i32") }));
    expect(run("div")).toEqual([-3, -3, 2147483647]);
    expect(run("mod")).toEqual([-1, 1, 0]);
    expect(run("add"), "i32 add wraps").toEqual([5, -5, -2147483648]);
  });

  it("binary-scalar honours scalarFirst, clamp keeps NaN, where broadcasts all three", () => {
    const h = new CpuTestHarness();
    const x = h.tensor([1, 2, NaN], [3]);
    expect(h.values(h.run({ kind: "binary-scalar", op: "sub", lhs: x, scalar: 10, scalarFirst: true, out: h.output([3]) }))).toEqual([9, 8, NaN]);
    expect(h.values(h.run({ kind: "binary-scalar", op: "sub", lhs: x, scalar: 10, scalarFirst: false, out: h.output([3]) }))).toEqual([-9, -8, NaN]);
    expect(h.values(h.run({ kind: "clamp", input: x, min: 1.5, max: 1.75, out: h.output([3]) }))).toEqual([1.5, 1.75, NaN]);
    const c = h.tensor([1, 0], [2, 1], "bool");
    const y = h.tensor([-1, -2, -3], [3]);
    expect(h.values(h.run({ kind: "where", condition: c, lhs: x, rhs: y, out: h.output([2, 3]) }))).toEqual([1, 2, NaN, -1, -2, -3]);
  });

  it("cast truncates toward zero, tests != 0 for bool and maps bool to 0/1", () => {
    const h = new CpuTestHarness();
    const x = h.tensor([-2.7, -0.5, 0, 2.7], [4]);
    expect(h.values(h.run({ kind: "cast", input: x, out: h.output([4], "i32") }))).toEqual([-2, 0, 0, 2]);
    const b = h.run({ kind: "cast", input: x, out: h.output([4], "bool") });
    expect(h.values(b)).toEqual([1, 1, 0, 1]);
    expect(h.values(h.run({ kind: "cast", input: b, out: h.output([4], "f32") }))).toEqual([1, 1, 0, 1]);
  });

  it("f16 is refused with UnsupportedError naming the capability", () => {
    const h = new CpuTestHarness();
    const x = h.tensor([1], [1]);
    expect(() => h.run({ kind: "cast", input: x, out: h.output([1], "f16") })).toThrow(UnsupportedError);
    expect(() => h.run({ kind: "cast", input: x, out: h.output([1], "f16") })).toThrow(/f16 on the CPU backend/);
  });
});

describe("CpuRuntime: reductions and matmul", () => {
  const h = new CpuTestHarness();
  const x = h.tensor([3, 1, 2, 6, 5, 4], [2, 3]);
  const reduce = (op: "sum" | "mean" | "max" | "min" | "prod" | "argmax" | "argmin" | "any" | "all", axes: number[], keepDims: boolean, shape: number[], input: TensorIr = x) => {
    const dtype = op === "argmax" || op === "argmin" ? "i32" : op === "any" || op === "all" ? "bool" : "f32";
    return h.values(h.run({ kind: "reduce", op, input, axes, keepDims, out: h.output(shape, dtype) }));
  };

  it("reduces any axes with and without keepDims", () => {
    expect(reduce("sum", [1], false, [2])).toEqual([6, 15]);
    expect(reduce("sum", [0], true, [1, 3])).toEqual([9, 6, 6]);
    expect(reduce("mean", [0, 1], false, [])).toEqual([3.5]);
    expect(reduce("prod", [1], false, [2])).toEqual([6, 120]);
    expect(reduce("max", [1], false, [2])).toEqual([3, 6]);
    expect(reduce("min", [0], false, [3])).toEqual([3, 1, 2]);
    expect(reduce("argmax", [1], false, [2])).toEqual([0, 0]);
    expect(reduce("argmin", [1], false, [2])).toEqual([1, 2]);
  });

  it("max and argmax see NaN as the extreme; argmax takes the first of ties; any/all test != 0", () => {
    const y = h.tensor([1, NaN, 5, 5, 0, 2], [2, 3]);
    expect(reduce("max", [1], false, [2], y)).toEqual([NaN, 5]);
    expect(reduce("argmax", [1], false, [2], y)).toEqual([1, 0]);
    expect(reduce("any", [1], false, [2], y)).toEqual([1, 1]);
    expect(reduce("all", [1], false, [2], y)).toEqual([1, 0]);
  });

  it("sum accumulates f32 in f64 (1 + 2^-24 repeated does not stall)", () => {
    const n = 4096;
    const y = h.tensor(Array.from({ length: n }, (_, i) => (i === 0 ? 1 : 2 ** -24)), [n]);
    expect(reduce("sum", [0], false, [], y)[0], "an f32 accumulator would stay at 1").toBe(Math.fround(1 + (n - 1) * 2 ** -24));
  });

  it("integer sums, products and matmuls wrap in the output dtype", () => {
    const big = h.tensor([2147483647, 1, 65536, 65536], [2, 2], "i32");
    expect(h.values(h.run({ kind: "reduce", op: "sum", input: big, axes: [1], keepDims: false, out: h.output([2], "i32") }))).toEqual([-2147483648, 131072]);
    expect(h.values(h.run({ kind: "reduce", op: "prod", input: big, axes: [1], keepDims: false, out: h.output([2], "i32") }))).toEqual([2147483647, 0]);
    const m = h.tensor([1, 2, 3, 4], [2, 2], "i32");
    expect(h.values(h.run({ kind: "matmul", lhs: m, rhs: m, out: h.output([2, 2], "i32") }))).toEqual([7, 10, 15, 22]);
  });

  it("max over an empty axis is an InvalidOperationError", () => {
    const e = h.run({ kind: "full", out: h.output([2, 0]), value: 0 });
    expect(() => reduce("max", [1], false, [2], e)).toThrow(InvalidOperationError);
  });

  it("matmul multiplies batched matrices with broadcast batch dims", () => {
    const a = h.tensor([1, 2, 3, 4, 5, 6, 7, 8], [2, 2, 2]);
    const eye = h.tensor([1, 1, 0, 1], [1, 2, 2]);
    expect(h.values(h.run({ kind: "matmul", lhs: a, rhs: eye, out: h.output([2, 2, 2]) }))).toEqual([1, 3, 3, 7, 5, 11, 7, 15]);
    const l = h.tensor([1, 2, 3, 4, 5, 6], [2, 3]);
    const r = h.tensor([1, 2, 3, 4, 5, 6], [3, 2]);
    expect(h.values(h.run({ kind: "matmul", lhs: l, rhs: r, out: h.output([2, 2]) }))).toEqual([22, 28, 49, 64]);
  });
});

describe("CpuRuntime: layout ops", () => {
  it("permute, slice with steps and expand are views; computing on them reads the strided elements", () => {
    const h = new CpuTestHarness();
    const x = h.tensor([0, 1, 2, 3, 4, 5], [2, 3]);
    const t = h.run({ kind: "permute", input: x, axes: [1, 0], out: h.output([3, 2]) });
    expect(h.values(t)).toEqual([0, 3, 1, 4, 2, 5]);
    expect(h.handles.getHandle(t).memory, "a view shares its input's memory").toBe(h.handles.getHandle(x).memory);
    const s = h.run({ kind: "slice", input: x, ranges: [{ start: 0, end: 2, step: 1 }, { start: 0, end: 3, step: 2 }], out: h.output([2, 2]) });
    expect(h.values(s)).toEqual([0, 2, 3, 5]);
    const col = h.tensor([7, 8], [2, 1]);
    const e = h.run({ kind: "expand", input: col, out: h.output([2, 3]) });
    expect(h.values(e)).toEqual([7, 7, 7, 8, 8, 8]);
    expect(h.values(h.run({ kind: "binary", op: "add", lhs: t, rhs: h.tensor([10, 20], [2]), out: h.output([3, 2]) }))).toEqual([10, 23, 11, 24, 12, 25]);
  });

  it("reshape of dense data is a view; reshape of a strided view copies", () => {
    const h = new CpuTestHarness();
    const x = h.tensor([0, 1, 2, 3, 4, 5], [2, 3]);
    const r = h.run({ kind: "reshape", input: x, out: h.output([3, 2]) });
    expect(h.handles.getHandle(r).memory).toBe(h.handles.getHandle(x).memory);
    const t = h.run({ kind: "permute", input: x, axes: [1, 0], out: h.output([3, 2]) });
    const flat = h.run({ kind: "reshape", input: t, out: h.output([6]) });
    expect(h.values(flat)).toEqual([0, 3, 1, 4, 2, 5]);
    expect(h.handles.getHandle(flat).memory, "a strided reshape materialises a copy").not.toBe(h.handles.getHandle(x).memory);
  });

  it("concat, pad and gather", () => {
    const h = new CpuTestHarness();
    const a = h.tensor([1, 2], [1, 2]);
    const b = h.tensor([3, 4, 5, 6], [2, 2]);
    expect(h.values(h.run({ kind: "concat", inputs: [a, b], axis: 0, out: h.output([3, 2]) }))).toEqual([1, 2, 3, 4, 5, 6]);
    expect(h.values(h.run({ kind: "concat", inputs: [b, b], axis: 1, out: h.output([2, 4]) }))).toEqual([3, 4, 3, 4, 5, 6, 5, 6]);
    expect(h.values(h.run({ kind: "pad", input: a, padding: [[1, 0], [0, 1]], value: 9, out: h.output([2, 3]) }))).toEqual([9, 9, 9, 1, 2, 9]);
    const idx = h.tensor([1, 0, 1, 1], [2, 2], "i32");
    expect(h.values(h.run({ kind: "gather", input: b, indices: idx, axis: 1, out: h.output([2, 2]) }))).toEqual([4, 3, 6, 6]);
  });

  it("an out-of-range gather index fails the launch: the read rejects with IndexOutOfRangeError", async () => {
    const h = new CpuTestHarness();
    const b = h.tensor([3, 4], [2]);
    const idx = h.tensor([0, 2], [2], "i32");
    const out = h.run({ kind: "gather", input: b, indices: idx, axis: 0, out: h.output([2]) });
    const error = await h.read(out).then(() => undefined, (e: unknown) => e);
    expect(error, "the failure is delivered at the read").toBeInstanceOf(Error);
    const chain: unknown[] = [];
    for (let e: unknown = error; e instanceof Error; e = e.cause) chain.push(e);
    expect(chain.some((e) => e instanceof IndexOutOfRangeError), "the root cause is the typed gather error").toBe(true);
  });

  it("gather indices in [-n, n) are valid and a negative one counts from the end; -n - 1 is out of range", async () => {
    const h = new CpuTestHarness();
    const b = h.tensor([3, 4, 5], [3]);
    const idx = h.tensor([-1, -3, 2, 0], [4], "i32");
    expect(h.values(h.run({ kind: "gather", input: b, indices: idx, axis: 0, out: h.output([4]) }))).toEqual([5, 3, 5, 3]);
    const bad = h.run({ kind: "gather", input: b, indices: h.tensor([-4], [1], "i32"), axis: 0, out: h.output([1]) });
    const error = await h.read(bad).then(() => undefined, (e: unknown) => e);
    const chain: unknown[] = [];
    for (let e: unknown = error; e instanceof Error; e = e.cause) chain.push(e);
    expect(chain.some((e) => e instanceof IndexOutOfRangeError && e.index === -4), "index -4 of an axis of 3 is out of range").toBe(true);
  });
});
