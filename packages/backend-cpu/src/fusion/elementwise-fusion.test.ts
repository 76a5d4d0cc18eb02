/**
 * The elementwise fuser and its optimization: one launch per chain, fused results identical to
 * the unfused oracle, write elision, in-place reuse only for sole owners, and failures tainting
 * exactly the block's outputs.
 */
import { describe, expect, it } from "vitest";
import { StreamId } from "@weft/environment";
import { InjectedFaultError, TaintedReadError } from "@weft/server";
import { withProcessMode } from "@weft/runtime";
import type { OperationIr, TensorIr } from "@weft/fusion";
import { OperationConverter } from "@weft/fusion/internal";
import { CpuTestHarness } from "../testing/cpu-test-harness.js";

/** An 8-op chain over x[2,3] and y[3] (broadcast), ending in `out`; intermediates consumed. */
function chain(h: CpuTestHarness, x: TensorIr, y: TensorIr): { ops: OperationIr[]; out: TensorIr } {
  const ops: OperationIr[] = [];
  let cur = x;
  const step = (make: (input: TensorIr, out: TensorIr) => OperationIr, dtype: "f32" | "bool" = "f32"): void => {
    const out = h.output([2, 3], dtype);
    ops.push(make(cur, out));
    cur = { ...out, status: "ReadWrite" };
  };
  step((i, o) => ({ kind: "binary", op: "add", lhs: i, rhs: y, out: o }));
  step((i, o) => ({ kind: "binary-scalar", op: "mul", lhs: i, scalar: 3, scalarFirst: false, out: o }));
  step((i, o) => ({ kind: "unary", op: "exp", input: i, out: o }));
  step((i, o) => ({ kind: "unary", op: "log1p", input: i, out: o }));
  step((i, o) => ({ kind: "clamp", input: i, min: 0, max: 10, out: o }));
  step((i, o) => ({ kind: "binary-scalar", op: "sub", lhs: i, scalar: 1, scalarFirst: true, out: o }));
  step((i, o) => ({ kind: "unary", op: "tanh", input: i, out: o }));
  step((i, o) => ({ kind: "unary", op: "gelu", input: i, out: o }));
  const last = ops[ops.length - 1]!;
  return { ops, out: { ...(last.kind === "drop" ? x : last.out), status: "ReadOnly" } };
}

describe("ElementwiseFuser", () => {
  it("a chain of 8 elementwise ops becomes one launch with the unfused oracle's exact values", () => {
    const fused = new CpuTestHarness();
    const plain = new CpuTestHarness({ fusion: false });
    const data = [-1, 0, 0.5, 1, 2, NaN];
    const run = (h: CpuTestHarness, fuse: boolean): number[] => {
      const x = h.tensor(data, [2, 3]);
      const y = h.tensor([0.25, -0.5, 1], [3]);
      const { ops, out } = chain(h, x, y);
      const before = h.runtime.server.stats().launched;
      if (fuse) h.runFused(ops);
      else for (const op of ops) h.exec(op);
      const launches = h.runtime.server.stats().launched - before;
      expect(launches, fuse ? "the fused chain is one kernel" : "unfused, one kernel per op").toBe(fuse ? 1 : 8);
      return h.values(out);
    };
    const oracle = run(plain, false);
    expect(run(fused, true), "fused and unfused round at the same points, so they agree bit for bit").toEqual(oracle);
    expect(fused.runtime.stats.fusedLaunches).toBe(1);
    expect(fused.runtime.stats.elidedWrites, "the 7 consumed intermediates are never written").toBe(7);
  });

  it("intermediates consumed or dropped in the block get no handle; ones used later are written", () => {
    const h = new CpuTestHarness();
    const x = h.tensor([1, 2], [2]);
    const a = h.output([2]);
    const b = h.output([2]);
    const c = h.output([2]);
    h.runFused([
      { kind: "unary", op: "neg", input: x, out: a },
      { kind: "unary", op: "exp", input: h.use(a, "ReadOnly"), out: b },
      { kind: "binary", op: "add", lhs: h.use(b, "ReadWrite"), rhs: h.use(a, "ReadOnly"), out: c },
      { kind: "drop", tensor: h.use(c, "ReadWrite") },
    ]);
    expect(h.handles.hasHandle(a.id), "a is still used after the block: written").toBe(true);
    expect(h.handles.hasHandle(b.id), "b is consumed inside the block: elided").toBe(false);
    expect(h.handles.hasHandle(c.id), "c is dropped inside the block: elided").toBe(false);
    expect(h.values(h.use(a, "ReadOnly"))).toEqual([-1, -2]);
    expect(h.runtime.stats.elidedWrites).toBe(2);
  });

  // Issue 9: `x = tensor(5); e = zeros([0]); r = x.neg(); e.neg()` read garbage for `r`: the
  // block's reference shape was the empty [0], so one pass over it computed nothing.
  it("a size-1 output fused beside an empty one is computed; the empty one gets an empty handle", () => {
    for (const [xShape, eShape] of [[[], [0]], [[1], [0]], [[1, 3], [0, 3]], [[2, 1], [2, 0]]] as const) {
      const h = new CpuTestHarness();
      const n = (xShape as readonly number[]).reduce((a, b) => a * b, 1);
      const x = h.tensor(Array.from({ length: n }, (_, i) => i + 5), xShape);
      const e = h.tensor([], eShape);
      const r = h.output(xShape);
      const q = h.output(eShape);
      const s = h.output(xShape);
      h.runFused([
        { kind: "unary", op: "neg", input: x, out: r },
        { kind: "unary", op: "neg", input: e, out: q },
        { kind: "binary-scalar", op: "add", lhs: h.use(r, "ReadOnly"), scalar: 1, scalarFirst: false, out: s },
      ]);
      const want = Array.from({ length: n }, (_, i) => -(i + 5));
      expect(h.values(h.use(r, "ReadOnly")), `neg of ${JSON.stringify(xShape)} beside an empty ${JSON.stringify(eShape)}`).toEqual(want);
      expect(h.values(h.use(s, "ReadOnly")), "and what the block computes from it").toEqual(want.map((v) => v + 1));
      expect(h.values(h.use(q, "ReadOnly")), "the empty output is empty").toEqual([]);
    }
  });

  it("writes in place into a consumed input that is the sole owner of its memory", () => {
    const h = new CpuTestHarness();
    const x = h.tensor([1, 2, 3], [3]);
    const memory = h.handles.getHandle(x).memory;
    const out = h.output([3]);
    h.runFused([
      { kind: "unary", op: "neg", input: h.use(x, "ReadWrite"), out },
    ]);
    expect(h.runtime.stats.inPlaceWrites).toBe(1);
    expect(h.handles.getHandle(out).memory, "the output reuses the consumed input's memory").toBe(memory);
    expect(h.handles.hasHandle(x.id), "the consumed input's entry is gone").toBe(false);
    expect(h.values(h.use(out, "ReadOnly"))).toEqual([-1, -2, -3]);
    expect(memory.refs, "only the output holds the memory now").toBe(1);
  });

  it("a drop after a read-only use makes that use the consuming one (in place)", () => {
    const h = new CpuTestHarness();
    const x = h.tensor([1, 2, 3], [3]);
    const memory = h.handles.getHandle(x).memory;
    const out = h.output([3], "i32");
    h.runFused([
      { kind: "cast", input: x, out },
      { kind: "drop", tensor: h.use(x, "ReadWrite") },
    ]);
    expect(h.handles.getHandle(out).memory, "f32 → i32 keeps 4 bytes per element: reused").toBe(memory);
    expect(h.values(h.use(out, "ReadOnly"))).toEqual([1, 2, 3]);
  });

  it("never writes in place into memory shared with a view or an alias", () => {
    for (const share of ["view", "alias"] as const) {
      const h = new CpuTestHarness();
      const x = h.tensor([1, 2, 3], [3]);
      const memory = h.handles.getHandle(x).memory;
      const keep = share === "view"
        ? h.run({ kind: "slice", input: x, ranges: [{ start: 0, end: 3, step: 1 }], out: h.output([3]) })
        : undefined;
      const alias = share === "alias" ? h.runtime.aliasHandle(h.handles.getHandle(x), StreamId.DEFAULT) : undefined;
      const out = h.output([3]);
      h.runFused([{ kind: "unary", op: "neg", input: h.use(x, "ReadWrite"), out }]);
      expect(h.runtime.stats.inPlaceWrites, `${share}: shared memory is never written in place`).toBe(0);
      expect(h.handles.getHandle(out).memory).not.toBe(memory);
      if (keep !== undefined) expect(h.values(keep), "the view still sees the original values").toEqual([1, 2, 3]);
      if (alias !== undefined) {
        expect(alias.memory.refs, "the alias is the only holder left").toBe(1);
        h.runtime.releaseHandle(alias);
      }
    }
  });

  it("a failed fused launch taints its outputs and what is computed from them, not other tensors", async () => {
    const h = new CpuTestHarness();
    const x = h.tensor([1, 2], [2]);
    const other = h.tensor([5, 6], [2]);
    const a = h.output([2]);
    // Every exp kernel fails (the fused block's and the unfused one its fallback runs).
    h.runtime.injectFault({ kernelMatching: /^elementwise exp$/ });
    h.runFused([{ kind: "unary", op: "exp", input: x, out: a }]);
    const b = h.run({ kind: "unary", op: "neg", input: h.use(a, "ReadOnly"), out: h.output([2]) });
    for (const tainted of [a, b]) {
      const error = await h.read(h.use(tainted, "ReadOnly")).then(() => undefined, (e: unknown) => e);
      expect(error, "a read of a tainted tensor rejects").toBeInstanceOf(TaintedReadError);
      expect((error as TaintedReadError).root, "naming the injected fault as the root cause").toBeInstanceOf(InjectedFaultError);
    }
    expect(Array.from(await h.read(other)), "a tensor that shares nothing with the failure reads fine").toEqual([5, 6]);
  });

  it("a fused launch hit by a one-shot fault falls back to its ops: every output is computed", () => {
    const h = new CpuTestHarness();
    const x = h.tensor([1, 2], [2]);
    const a = h.output([2]);
    const c = h.output([2]);
    h.runtime.injectFault({ launch: 1 });
    h.runFused([
      { kind: "unary", op: "neg", input: x, out: a },
      { kind: "binary-scalar", op: "mul", lhs: h.use(x, "ReadOnly"), scalar: 3, scalarFirst: false, out: c },
    ]);
    expect(h.runtime.server.stats().fallbacks, "the fused launch's group fell back").toBe(1);
    expect(h.values(h.use(a, "ReadOnly"))).toEqual([-1, -2]);
    expect(h.values(h.use(c, "ReadOnly"))).toEqual([3, 6]);
  });

  it("an injected allocation failure throws out of the block and leaves no handle behind", () => {
    const h = new CpuTestHarness();
    const x = h.tensor([1, 2], [2]);
    const before = h.runtime.memoryUsage().liveAllocations;
    h.runtime.injectFault({ allocation: 1 });
    const out = h.output([2]);
    expect(() => h.runFused([{ kind: "unary", op: "exp", input: x, out }])).toThrow();
    expect(h.handles.hasHandle(out.id)).toBe(false);
    expect(h.runtime.memoryUsage().liveAllocations, "nothing leaked").toBe(before);
  });

  it("in compile-and-autotune mode the launch is discarded", () => {
    const h = new CpuTestHarness();
    const x = h.tensor([1, 2], [2]);
    const before = h.runtime.server.stats();
    withProcessMode("compile-and-autotune", () => h.run({ kind: "unary", op: "exp", input: x, out: h.output([2]) }));
    const after = h.runtime.server.stats();
    expect(after.discarded - before.discarded, "the CPU launch is discarded like a GPU one").toBe(1);
    expect(after.launched - before.launched).toBe(0);
  });
});

describe("ElementwiseFuser acceptance", () => {
  const relative = (ops: OperationIr[]): OperationIr[] => {
    const c = new OperationConverter();
    return ops.map((op) => c.toRelative(op).op);
  };

  it("closes on a non-elementwise op, on a leading drop and on an incompatible shape; grows the reference by broadcasting", () => {
    const h = new CpuTestHarness();
    const t = (shape: number[]): TensorIr => ({ ...h.output(shape), status: "ReadOnly" });
    const fuser = h.runtime.fusers()[0]!;
    const feed = (ops: OperationIr[]): number => {
      fuser.reset();
      for (const op of relative(ops)) fuser.fuse(op);
      return fuser.len();
    };
    const row = t([1, 4]);
    const full = t([3, 4]);
    const a = h.output([1, 4]);
    expect(feed([
      { kind: "unary", op: "exp", input: row, out: a },
      { kind: "binary", op: "add", lhs: h.use(a, "ReadWrite"), rhs: full, out: h.output([3, 4]) },
    ]), "[1,4] grows into [3,4]").toBe(2);
    expect(fuser.status()).toBe("open");
    expect(feed([
      { kind: "unary", op: "exp", input: full, out: h.output([3, 4]) },
      { kind: "reduce", op: "sum", input: full, axes: [0], keepDims: false, out: h.output([4]) },
    ])).toBe(1);
    expect(fuser.status(), "a reduce closes the elementwise fuser").toBe("closed");
    expect(feed([{ kind: "drop", tensor: full }])).toBe(0);
    expect(fuser.status(), "a drop with nothing fused closes").toBe("closed");
    expect(feed([
      { kind: "unary", op: "exp", input: t([3, 1]), out: h.output([3, 1]) },
      { kind: "unary", op: "exp", input: t([1, 4]), out: h.output([1, 4]) },
    ]), "[3,1] and [1,4] would both have to grow").toBe(1);
    expect(fuser.properties().ready).toBe(true);
    expect(h.runtime.fusers().length, "elementwise, matmul-epilogue and softmax fusers").toBe(3);
    expect(new CpuTestHarness({ fusion: false }).runtime.fusers(), "the unfused oracle mode has no fusers").toEqual([]);
  });

  it("a closed fuser offers its longest prefix that writes nothing (dead code: no kernel); an open one is never cut", () => {
    const h = new CpuTestHarness();
    const x = { ...h.output([16]), status: "ReadOnly" as const };
    const fuser = h.runtime.fusers()[0]!;
    /** One `tidy` step: `x + 1 + 1 …` (`adds` adds, every result alive), then the drops of its results. */
    const step = (adds: number, drop = true): OperationIr[] => {
      const ops: OperationIr[] = [];
      const outs: TensorIr[] = [];
      for (let k = 0; k < adds; k++) {
        const out = h.output([16]);
        ops.push({ kind: "binary-scalar", op: "add", lhs: k === 0 ? x : { ...(outs[k - 1] as TensorIr), status: "ReadOnly" }, scalar: 1, scalarFirst: false, out });
        outs.push(out);
      }
      if (drop) for (const o of outs) ops.push({ kind: "drop", tensor: { ...o, status: "ReadWrite" } });
      return ops;
    };
    const feed = (ops: OperationIr[]): void => {
      fuser.reset();
      for (const op of relative(ops)) fuser.fuse(op);
    };
    // Three whole steps (60 operations), then a fourth cut by the 64-operation limit.
    feed([...step(10), ...step(10), ...step(10), ...step(10)]);
    expect(fuser.status(), "closed by the limit").toBe("closed");
    expect(fuser.len(), "cut after the three clean steps; the half step starts the next block").toBe(60);
    expect(fuser.properties().ready, "the cut block is ready").toBe(true);
    // Still open: never cut, whatever its tail (the segment may end cleanly).
    feed([...step(10), ...step(4, false)]);
    expect([fuser.status(), fuser.len()]).toEqual(["open", 24]);
    // Closed with no clean prefix: the whole accepted run.
    feed([...step(3, false), { kind: "reduce", op: "sum", input: x, axes: [0], keepDims: false, out: h.output([]) }]);
    expect([fuser.status(), fuser.len()]).toEqual(["closed", 3]);
    // The clone carries the cut.
    feed([...step(10), ...step(10), ...step(10), ...step(10)]);
    expect(fuser.clone().len()).toBe(60);
  });

  it("scores a chain above a single op", () => {
    const h = new CpuTestHarness();
    const x = h.tensor([1, 2, 3, 4, 5, 6], [2, 3]);
    const y = h.tensor([1, 2, 3], [3]);
    const fuser = h.runtime.fusers()[0]!;
    const c = new OperationConverter();
    const { ops } = chain(h, x, y);
    fuser.fuse(c.toRelative(ops[0]!).op);
    const single = fuser.properties().score;
    for (const op of ops.slice(1)) fuser.fuse(c.toRelative(op).op);
    expect(fuser.properties().score, "fusing 8 ops saves 7 intermediate writes and reads").toBeGreaterThan(single);
  });
});
