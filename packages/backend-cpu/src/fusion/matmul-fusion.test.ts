/**
 * The matmul fuser and its optimization: a matmul with its elementwise epilogue is one launch,
 * with the unfused oracle's exact values, whichever memory the product is stored in; a lone
 * matmul stays unfused; a failure falls back op by op.
 */
import { describe, expect, it } from "vitest";
import type { DType, OperationIr, TensorIr } from "@weft/fusion";
import { OperationConverter } from "@weft/fusion/internal";
import { CpuTestHarness } from "../testing/cpu-test-harness.js";
import { MatmulFuser } from "./matmul-fuser.js";

function seeded(n: number, seed: number): number[] {
  let s = seed;
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s / 2 ** 32) * 4 - 2;
  });
}

/** `x[m,k] @ w[k,n] + b[n]`, then `gelu`, the product and the sum consumed in the block. */
function layer(h: CpuTestHarness, m: number, k: number, n: number, dtype: DType = "f32"): { ops: OperationIr[]; out: TensorIr } {
  const x = h.tensor(seeded(m * k, 1), [m, k], dtype);
  const w = h.tensor(seeded(k * n, 2), [k, n], dtype);
  const b = h.tensor(seeded(n, 3), [n], dtype);
  const p = h.output([m, n], dtype);
  const s = h.output([m, n], dtype);
  const y = h.output([m, n], dtype);
  return {
    ops: [
      { kind: "matmul", lhs: x, rhs: w, out: p },
      { kind: "binary", op: "add", lhs: h.use(p, "ReadWrite"), rhs: b, out: s },
      { kind: "unary", op: "gelu", input: h.use(s, "ReadWrite"), out: y },
    ],
    out: h.use(y, "ReadOnly"),
  };
}

function launched(h: CpuTestHarness): number {
  return h.runtime.server.stats().launched;
}

describe("MatmulFuser", () => {
  it("matmul + bias + gelu is one launch with the unfused values, for shapes off every kernel's boundaries", () => {
    for (const [m, k, n] of [[8, 64, 128], [1, 1, 1], [3, 5, 7], [17, 9, 33], [64, 3, 10], [0, 4, 4], [4, 0, 4]] as const) {
      const fused = new CpuTestHarness();
      const plain = new CpuTestHarness({ fusion: false });
      const f = layer(fused, m, k, n);
      const before = launched(fused);
      fused.runFused(f.ops, "matmul");
      expect(launched(fused) - before, `${m}×${k}×${n}: one launch`).toBe(1);
      const p = layer(plain, m, k, n);
      for (const op of p.ops) plain.exec(op);
      expect(fused.values(f.out), `${m}×${k}×${n}`).toEqual(plain.values(p.out));
      expect(fused.handles.size, `${m}×${k}×${n}: x, w, b and y only`).toBe(4);
    }
  });

  it("writes the product when it is still used after the block, and stores into another dtype's output from a scratch", () => {
    const fused = new CpuTestHarness();
    const plain = new CpuTestHarness({ fusion: false });
    const build = (h: CpuTestHarness): { ops: OperationIr[]; reads: TensorIr[] } => {
      const x = h.tensor(seeded(6, 4), [2, 3]);
      const w = h.tensor(seeded(12, 5), [3, 4]);
      const p = h.output([2, 4]);
      const gt = h.output([2, 4], "bool");
      const c = h.output([2, 4], "i32");
      return {
        ops: [
          { kind: "matmul", lhs: x, rhs: w, out: p },
          { kind: "binary-scalar", op: "gt", lhs: h.use(p, "ReadOnly"), scalar: 0, scalarFirst: false, out: gt },
          { kind: "cast", input: h.use(gt, "ReadOnly"), out: c },
        ],
        reads: [h.use(p, "ReadOnly"), h.use(gt, "ReadOnly"), h.use(c, "ReadOnly")],
      };
    };
    const f = build(fused);
    fused.runFused(f.ops, "matmul");
    const p = build(plain);
    for (const op of p.ops) plain.exec(op);
    for (let i = 0; i < 3; i++) expect(fused.values(f.reads[i]!)).toEqual(plain.values(p.reads[i]!));
    // Only the bool and i32 outputs after the product is consumed: the product goes to a scratch.
    const g = new CpuTestHarness();
    const x = g.tensor(seeded(6, 4), [2, 3]);
    const w = g.tensor(seeded(12, 5), [3, 4]);
    const q = g.output([2, 4]);
    const gt = g.output([2, 4], "bool");
    g.runFused([
      { kind: "matmul", lhs: x, rhs: w, out: q },
      { kind: "binary-scalar", op: "gt", lhs: g.use(q, "ReadWrite"), scalar: 0, scalarFirst: false, out: gt },
    ], "matmul");
    expect(g.handles.hasHandle(q.id), "the consumed product has no handle").toBe(false);
    expect(g.values(g.use(gt, "ReadOnly"))).toEqual(plain.values(p.reads[1]!));
    expect(g.runtime.memoryUsage().liveAllocations, "x, w and gt: the scratch was given back").toBe(3);
  });

  it("integer products and batched, broadcast, transposed operands agree with the unfused oracle", () => {
    for (const dtype of ["f32", "i32"] as const) {
      const fused = new CpuTestHarness();
      const plain = new CpuTestHarness({ fusion: false });
      const build = (h: CpuTestHarness): { ops: OperationIr[]; out: TensorIr } => {
        const a = h.tensor(seeded(2 * 3 * 5, 6).map((v) => (dtype === "i32" ? Math.round(v * 3) : v)), [2, 3, 5], dtype);
        const bT = h.tensor(seeded(4 * 5, 7).map((v) => (dtype === "i32" ? Math.round(v * 3) : v)), [4, 5], dtype);
        const b = h.run({ kind: "permute", input: bT, axes: [1, 0], out: h.output([5, 4], dtype) });
        const p = h.output([2, 3, 4], dtype);
        const y = h.output([2, 3, 4], dtype);
        return {
          ops: [
            { kind: "matmul", lhs: a, rhs: b, out: p },
            { kind: "unary", op: "relu", input: h.use(p, "ReadWrite"), out: y },
          ],
          out: h.use(y, "ReadOnly"),
        };
      };
      const f = build(fused);
      fused.runFused(f.ops, "matmul");
      const p = build(plain);
      for (const op of p.ops) plain.exec(op);
      expect(fused.values(f.out), dtype).toEqual(plain.values(p.out));
    }
  });

  it("is ready only with an epilogue, and closes on another shape or kind", () => {
    const h = new CpuTestHarness();
    const converter = new OperationConverter();
    const fuser = new MatmulFuser(h.runtime);
    const x = h.output([2, 3]);
    const w = h.output([3, 4]);
    const p = h.output([2, 4]);
    fuser.fuse(converter.toRelative({ kind: "matmul", lhs: x, rhs: w, out: p }).op);
    expect(fuser.properties().ready, "a lone matmul stays unfused").toBe(false);
    fuser.fuse(converter.toRelative({ kind: "unary", op: "exp", input: h.use(p, "ReadOnly"), out: h.output([2, 4]) }).op);
    expect(fuser.properties().ready).toBe(true);
    const wide = fuser.clone();
    wide.fuse(converter.toRelative({ kind: "binary", op: "add", lhs: h.use(p, "ReadOnly"), rhs: h.output([3, 2, 4]), out: h.output([3, 2, 4]) }).op);
    expect(wide.status(), "an output larger than the product closes it").toBe("closed");
    const reduce = fuser.clone();
    reduce.fuse(converter.toRelative({ kind: "reduce", op: "sum", input: h.use(p, "ReadOnly"), axes: [1], keepDims: false, out: h.output([2]) }).op);
    expect(reduce.status()).toBe("closed");
    const other = new MatmulFuser(h.runtime);
    other.fuse(converter.toRelative({ kind: "unary", op: "exp", input: x, out: h.output([2, 3]) }).op);
    expect(other.status(), "a block must start with its matmul").toBe("closed");
  });

  it("a failing fused launch falls back op by op: the outputs hold the unfused values", () => {
    const fused = new CpuTestHarness();
    const plain = new CpuTestHarness({ fusion: false });
    const f = layer(fused, 4, 6, 5);
    fused.runtime.injectFault({ launch: 1 });
    fused.runFused(f.ops, "matmul");
    expect(fused.runtime.server.stats().fallbacks, "the fused launch's group fell back").toBe(1);
    const p = layer(plain, 4, 6, 5);
    for (const op of p.ops) plain.exec(op);
    expect(fused.values(f.out)).toEqual(plain.values(p.out));
  });

  it("an injected allocation failure throws out of the block and leaves nothing behind", () => {
    for (const n of [1, 2]) {
      const h = new CpuTestHarness();
      const x = h.tensor(seeded(6, 4), [2, 3]);
      const w = h.tensor(seeded(12, 5), [3, 4]);
      const q = h.output([2, 4]);
      const gt = h.output([2, 4], "bool");
      const before = h.runtime.memoryUsage().liveAllocations;
      h.runtime.injectFault({ allocation: n });
      const ops: OperationIr[] = [
        { kind: "matmul", lhs: x, rhs: w, out: q },
        { kind: "binary-scalar", op: "gt", lhs: h.use(q, "ReadWrite"), scalar: 0, scalarFirst: false, out: gt },
      ];
      expect(() => h.runFused(ops, "matmul"), `allocation ${n} fails`).toThrow();
      expect(h.handles.hasHandle(gt.id)).toBe(false);
      expect(h.runtime.memoryUsage().liveAllocations, "nothing leaked").toBe(before);
    }
  });
});
