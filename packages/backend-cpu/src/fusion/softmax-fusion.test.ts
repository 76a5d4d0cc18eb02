/**
 * The softmax fuser and its optimization: the five ops `Tensor.softmax` records (with the drops
 * of their intermediates) are one launch with the unfused oracle's exact bits, for every row
 * length (past the sum's f64 block of 2^16 and the WebAssembly threshold), NaN/±Inf rows, and
 * an offset input; an input that is not dense rows runs op by op with the same values.
 */
import { describe, expect, it } from "vitest";
import type { OperationIr, TensorIr } from "@weft/fusion";
import { CpuTestHarness } from "../testing/cpu-test-harness.js";

function seeded(n: number, seed: number, scale = 3): number[] {
  let s = seed >>> 0;
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s / 2 ** 32 - 0.5) * 2 * scale;
  });
}

/** The ops of `softmax(x)` over the last axis of `x` (shape `shape`), as the tensor API records them. */
function softmax(h: CpuTestHarness, x: TensorIr, shape: readonly number[]): { ops: OperationIr[]; out: TensorIr } {
  const kept = [...shape.slice(0, -1), 1];
  const axis = shape.length - 1;
  const [m, d, e, s, y] = [h.output(kept), h.output(shape), h.output(shape), h.output(kept), h.output(shape)];
  return {
    ops: [
      { kind: "reduce", op: "max", input: x, axes: [axis], keepDims: true, out: m },
      { kind: "binary", op: "sub", lhs: x, rhs: h.use(m, "ReadOnly"), out: d },
      { kind: "unary", op: "exp", input: h.use(d, "ReadOnly"), out: e },
      { kind: "reduce", op: "sum", input: h.use(e, "ReadOnly"), axes: [axis], keepDims: true, out: s },
      { kind: "binary", op: "div", lhs: h.use(e, "ReadOnly"), rhs: h.use(s, "ReadOnly"), out: y },
      { kind: "drop", tensor: h.use(m, "ReadWrite") },
      { kind: "drop", tensor: h.use(d, "ReadWrite") },
      { kind: "drop", tensor: h.use(e, "ReadWrite") },
      { kind: "drop", tensor: h.use(s, "ReadWrite") },
    ],
    out: h.use(y, "ReadOnly"),
  };
}

const launched = (h: CpuTestHarness): number => h.runtime.server.stats().launched;
const bits = (values: readonly number[]): number[] => Array.from(new Uint32Array(Float32Array.from(values).buffer));

describe("SoftmaxFuser", () => {
  it("is one launch with the unfused oracle's bits, for rows of 1, 10, 300, 4100 and 70,000 and special values", () => {
    const special = [1, 2, NaN, 3, 0, Infinity, 1, 2, -Infinity, -Infinity, -Infinity, -Infinity, 0, -0, 0, 0, -Infinity, 5, -Infinity, 5];
    const cases: [number[], number[]][] = [
      [seeded(8 * 10, 1), [8, 10]],
      [seeded(3, 2), [3, 1]],
      [seeded(2 * 300, 3, 40), [2, 300]],
      [seeded(4100, 4), [1, 4100]],
      [seeded(70_000, 5), [70_000]],
      [special, [5, 4]],
    ];
    for (const [values, shape] of cases) {
      const fused = new CpuTestHarness();
      const plain = new CpuTestHarness({ fusion: false });
      const f = softmax(fused, fused.tensor(values, shape), shape);
      const before = launched(fused);
      fused.runFused(f.ops, "softmax");
      expect(launched(fused) - before, `[${shape}]: one launch`).toBe(1);
      const p = softmax(plain, plain.tensor(values, shape), shape);
      for (const op of p.ops) plain.exec(op);
      expect(bits(fused.values(f.out)), `[${shape}]: the unfused bits`).toEqual(bits(plain.values(p.out)));
      expect(fused.handles.size, `[${shape}]: x and y only`).toBe(2);
    }
  });

  it("an offset input (a slice) is served, and an input whose last use is the block is freed by it", () => {
    const fused = new CpuTestHarness();
    const plain = new CpuTestHarness({ fusion: false });
    const values = seeded(6 * 10, 9);
    const run = (h: CpuTestHarness, fuse: boolean): number[] => {
      const whole = h.tensor(values, [6, 10]);
      const x = h.output([4, 10]);
      h.exec({ kind: "slice", input: whole, ranges: [{ start: 2, end: 6, step: 1 }, { start: 0, end: 10, step: 1 }], out: x });
      const { ops, out } = softmax(h, x, [4, 10]);
      ops[1] = { ...(ops[1] as Extract<OperationIr, { kind: "binary" }>), lhs: h.use(x, "ReadWrite") };
      if (fuse) h.runFused(ops, "softmax");
      else for (const op of ops) h.exec(op);
      return h.values(out);
    };
    expect(bits(run(fused, true))).toEqual(bits(run(plain, false)));
    expect(fused.handles.size, "the slice died in the block: the source and the result are left").toBe(2);
  });

  it("a launch hit by a one-shot fault falls back to the five ops with the same bits; the kept kernel serves the next execution", () => {
    const values = seeded(8 * 10, 21);
    const plain = new CpuTestHarness({ fusion: false });
    const p = softmax(plain, plain.tensor(values, [8, 10]), [8, 10]);
    for (const op of p.ops) plain.exec(op);
    const want = bits(plain.values(p.out));
    const h = new CpuTestHarness();
    const x = h.tensor(values, [8, 10]);
    const first = softmax(h, x, [8, 10]);
    const { optimization } = h.optimize(first.ops, "softmax");
    h.runtime.injectFault({ launch: 1 });
    optimization.execute({ handles: h.handles, stream: h.stream }, first.ops);
    expect(h.runtime.server.stats().fallbacks, "the fused launch's group fell back").toBe(1);
    expect(bits(h.values(first.out)), "the fallback's values").toEqual(want);
    const again = softmax(h, x, [8, 10]);
    const before = launched(h);
    optimization.execute({ handles: h.handles, stream: h.stream }, again.ops);
    expect(launched(h) - before, "the next execution is one launch again").toBe(1);
    expect(bits(h.values(again.out))).toEqual(want);
    h.handles.removeHandle(first.out.id);
    h.handles.removeHandle(again.out.id);
    expect(h.handles.size, "only x is left").toBe(1);
  });
});
