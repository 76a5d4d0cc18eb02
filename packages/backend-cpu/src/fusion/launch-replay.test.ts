/**
 * The fused optimizations' launch replay (`launch-replay.ts`): one optimization executed again and
 * again — as a cached plan is — with new tensors of the same structure but other layouts, strides,
 * offsets, broadcasts, scalars, aliasing and ownership must give exactly the unfused oracle's
 * values, count the same, free everything, replay only what it may, and stay bounded.
 */
import { describe, expect, it } from "vitest";
import { InjectedFaultError, TaintedReadError } from "@weft/server";
import type { ElementwiseOperation, OperationIr, Optimization, TensorIr } from "@weft/fusion";
import { CpuTestHarness } from "../testing/cpu-test-harness.js";
import type { CpuHandle } from "../handle/cpu-handle.js";
import { ElementwiseProgramBuilder } from "../kernels/elementwise-kernel.js";
import { appendElementwise } from "../kernels/elementwise-ops.js";
import { MAX_LAUNCH_ENTRIES, replayUniforms } from "./launch-replay.js";

/** How a test input of logical shape [rows, cols] is laid out in memory. */
type Layout = "dense" | "transposed" | "offset" | "broadcast";

function seeded(n: number, seed: number): number[] {
  let s = seed;
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return Math.round(((s / 2 ** 32) * 4 - 2) * 64) / 64;
  });
}

/** `values` (row-major [rows, cols]; for "broadcast" only the first row is used) as a tensor of `h` laid out as `layout`. */
function place(h: CpuTestHarness, values: readonly number[], rows: number, cols: number, layout: Layout): TensorIr {
  switch (layout) {
    case "dense":
      return h.tensor(values, [rows, cols]);
    case "transposed": {
      const t: number[] = [];
      for (let j = 0; j < cols; j++) for (let i = 0; i < rows; i++) t.push(values[i * cols + j] as number);
      const stored = h.tensor(t, [cols, rows]);
      const view = h.run({ kind: "permute", input: h.use(stored, "ReadWrite"), axes: [1, 0], out: h.output([rows, cols]) });
      return view;
    }
    case "offset": {
      const stored = h.tensor([...seeded(cols + 1, 99), ...values], [rows * cols + cols + 1]);
      const flat = h.run({ kind: "slice", input: h.use(stored, "ReadWrite"), ranges: [{ start: cols + 1, end: cols + 1 + rows * cols, step: 1 }], out: h.output([rows * cols]) });
      return h.run({ kind: "reshape", input: h.use(flat, "ReadWrite"), out: h.output([rows, cols]) });
    }
    case "broadcast": {
      const row = h.tensor(values.slice(0, cols), [1, cols]);
      return h.run({ kind: "expand", input: h.use(row, "ReadWrite"), out: h.output([rows, cols]) });
    }
    default:
      return layout satisfies never;
  }
}

/** Logical values of `values` laid out as `layout` (a broadcast repeats the first row). */
function logical(values: readonly number[], rows: number, cols: number, layout: Layout): number[] {
  return layout === "broadcast" ? Array.from({ length: rows * cols }, (_, i) => values[i % cols] as number) : [...values];
}

/** The elementwise block: `a = x + y` (kept), `b = a * s`, `c = clamp(b, lo, hi)`, `d = exp(c)` (kept); x's last use per `xStatus`. */
function block(h: CpuTestHarness, x: TensorIr, y: TensorIr, s: number, lo: number, hi: number, xStatus: "ReadOnly" | "ReadWrite"): { ops: OperationIr[]; a: TensorIr; d: TensorIr } {
  const shape = x.shape;
  const a = h.output(shape);
  const b = h.output(shape);
  const c = h.output(shape);
  const d = h.output(shape);
  return {
    ops: [
      { kind: "binary", op: "add", lhs: h.use(x, xStatus), rhs: h.use(y, "ReadWrite"), out: a },
      { kind: "binary-scalar", op: "mul", lhs: h.use(a, "ReadOnly"), scalar: s, scalarFirst: false, out: b },
      { kind: "clamp", input: h.use(b, "ReadWrite"), min: lo, max: hi, out: c },
      { kind: "unary", op: "exp", input: h.use(c, "ReadWrite"), out: d },
    ],
    a: h.use(a, "ReadOnly"),
    d: h.use(d, "ReadOnly"),
  };
}

/** The block's values computed op by op on dense copies (the unfused oracle). */
function oracle(x: readonly number[], y: readonly number[], s: number, lo: number, hi: number): { a: number[]; d: number[] } {
  const h = new CpuTestHarness({ fusion: false });
  const xt = h.tensor(x, [2, 3]);
  const yt = h.tensor(y, [2, 3]);
  const { ops, a, d } = block(h, xt, yt, s, lo, hi, "ReadOnly");
  for (const op of ops) h.exec(op);
  return { a: h.values(a), d: h.values(d) };
}

function entries(optimization: Optimization<CpuHandle>): number {
  return (optimization as unknown as { readonly launchEntries: number }).launchEntries;
}

/** Removes every handle of `h`'s container (what disposing every tensor does). */
function disposeAll(h: CpuTestHarness): void {
  for (const id of [...h.handles.ids()]) h.handles.removeHandle(id);
}

describe("launch replay", () => {
  for (const kernels of ["auto", "interpreted"] as const) {
    it(`elementwise (${kernels}): other layouts, strides, offsets, broadcasts and a new scalar each execution give the oracle's values, replaying each layout`, () => {
      const h = new CpuTestHarness({ kernels });
      const probe = block(h, h.tensor(seeded(6, 1), [2, 3]), h.tensor(seeded(6, 2), [2, 3]), 1, -1, 1, "ReadOnly");
      const { optimization } = h.optimize(probe.ops);
      disposeAll(h);
      const sequence: [Layout, Layout][] = [["dense", "dense"], ["transposed", "broadcast"], ["dense", "dense"], ["offset", "transposed"], ["transposed", "broadcast"], ["dense", "dense"], ["offset", "transposed"], ["dense", "offset"], ["transposed", "broadcast"]];
      // The first execution derives the structure; a later one remembers its layout; one with a
      // layout remembered before replays it.
      const remembered = new Set<string>();
      for (let i = 0; i < sequence.length; i++) {
        const [xl, yl] = sequence[i]!;
        const xv = seeded(6, 10 + i);
        const yv = seeded(6, 20 + i);
        const s = 0.5 + i;
        const lo = -1 - i / 4;
        const hi = 1 + i / 8;
        const x = place(h, xv, 2, 3, xl);
        const y = place(h, yv, 2, 3, yl);
        const { ops, a, d } = block(h, x, y, s, lo, hi, "ReadOnly");
        const replayedBefore = h.runtime.stats.replayedLaunches;
        optimization.execute({ handles: h.handles, stream: h.stream }, ops);
        const key = `${xl}/${yl}`;
        expect(h.runtime.stats.replayedLaunches - replayedBefore, `execution ${i} (${key}) replays`).toBe(remembered.has(key) ? 1 : 0);
        if (i > 0) remembered.add(key);
        const want = oracle(logical(xv, 2, 3, xl), logical(yv, 2, 3, yl), s, lo, hi);
        expect(h.values(a), `execution ${i} (${key}): a`).toEqual(want.a);
        expect(h.values(d), `execution ${i} (${key}): d`).toEqual(want.d);
        expect(h.handles.hasHandle(y.id), "y died in the block: removed").toBe(false);
        disposeAll(h);
        expect(h.runtime.memoryUsage().liveAllocations, `execution ${i}: nothing left once disposed`).toBe(0);
      }
      expect(entries(optimization)).toBe(4);
    });
  }

  it("elementwise: an in-place output is replayed in place, and not when the input's memory is shared", () => {
    const h = new CpuTestHarness();
    const probe = block(h, h.tensor(seeded(6, 1), [2, 3]), h.tensor(seeded(6, 2), [2, 3]), 1, -1, 1, "ReadWrite");
    const { optimization } = h.optimize(probe.ops);
    disposeAll(h);
    for (let i = 0; i < 8; i++) {
      const shared = i % 4 === 3;
      const xv = seeded(6, 30 + i);
      const yv = seeded(6, 40 + i);
      const x = h.tensor(xv, [2, 3]);
      const y = h.tensor(yv, [2, 3]);
      const alias = shared ? h.runtime.retainHandle(h.handles.getHandle(x)) : undefined;
      const { ops, a, d } = block(h, x, y, 2 + i, -3, 3, "ReadWrite");
      const inPlace = h.runtime.stats.inPlaceWrites;
      optimization.execute({ handles: h.handles, stream: h.stream }, ops);
      // a and d go into x and y (both die); into y only while x's memory is shared.
      expect(h.runtime.stats.inPlaceWrites - inPlace, `execution ${i}: outputs written in place`).toBe(shared ? 1 : 2);
      const want = oracle(xv, yv, 2 + i, -3, 3);
      expect(h.values(a), `execution ${i}: a`).toEqual(want.a);
      expect(h.values(d), `execution ${i}: d`).toEqual(want.d);
      if (alias !== undefined) {
        const seen = h.runtime.readSync(alias, { ...x, status: "ReadOnly" }, h.stream);
        expect(Array.from(seen ?? []), "the alias still sees x").toEqual(Array.from(new Float32Array(xv)));
        h.runtime.releaseHandle(alias);
      }
      disposeAll(h);
      expect(h.runtime.memoryUsage().liveAllocations).toBe(0);
    }
    expect(h.runtime.stats.replayedLaunches, "both ownership cases replay after their first two executions").toBeGreaterThanOrEqual(4);
  });

  it("elementwise: two inputs on one memory are never replayed (and still right)", () => {
    const h = new CpuTestHarness();
    const probe = block(h, h.tensor(seeded(6, 1), [2, 3]), h.tensor(seeded(6, 2), [2, 3]), 1, -1, 1, "ReadOnly");
    const { optimization } = h.optimize(probe.ops);
    disposeAll(h);
    for (let i = 0; i < 4; i++) {
      const xv = seeded(6, 50 + i);
      const x = h.tensor(xv, [2, 3]);
      const y = h.run({ kind: "slice", input: h.use(x, "ReadOnly"), ranges: [{ start: 0, end: 2, step: 1 }, { start: 0, end: 3, step: 1 }], out: h.output([2, 3]) });
      const { ops, a, d } = block(h, x, y, 1.5, -2, 2, "ReadOnly");
      optimization.execute({ handles: h.handles, stream: h.stream }, ops);
      const want = oracle(xv, xv, 1.5, -2, 2);
      expect(h.values(a)).toEqual(want.a);
      expect(h.values(d)).toEqual(want.d);
      disposeAll(h);
    }
    expect(h.runtime.stats.replayedLaunches).toBe(0);
    expect(entries(optimization)).toBe(0);
    expect(h.runtime.memoryUsage().liveAllocations).toBe(0);
  });

  it("elementwise: a fault in a replayed launch falls back, or taints exactly its outputs", async () => {
    const h = new CpuTestHarness();
    const run = (i: number): { a: TensorIr; d: TensorIr; x: TensorIr; xv: number[]; yv: number[] } => {
      const xv = seeded(6, 60 + i);
      const yv = seeded(6, 70 + i);
      const x = h.tensor(xv, [2, 3]);
      const y = h.tensor(yv, [2, 3]);
      const { ops, a, d } = block(h, x, y, 3, -2, 2, "ReadOnly");
      optimization.execute({ handles: h.handles, stream: h.stream }, ops);
      return { a, d, x, xv, yv };
    };
    const probe = block(h, h.tensor(seeded(6, 1), [2, 3]), h.tensor(seeded(6, 2), [2, 3]), 1, -1, 1, "ReadOnly");
    const { optimization } = h.optimize(probe.ops);
    disposeAll(h);
    for (let i = 0; i < 2; i++) run(i);
    disposeAll(h);
    // A one-shot fault: the replayed group falls back op by op; every output is computed.
    h.runtime.injectFault({ launch: 1 });
    const replayed = h.runtime.stats.replayedLaunches;
    const first = run(2);
    expect(h.runtime.stats.replayedLaunches - replayed, "the launch was a replay").toBe(1);
    expect(h.runtime.server.stats().fallbacks).toBe(1);
    const want = oracle(first.xv, first.yv, 3, -2, 2);
    expect(h.values(first.a)).toEqual(want.a);
    expect(h.values(first.d)).toEqual(want.d);
    disposeAll(h);
    // Every exp kernel fails (the fused one and the fallback's): d is tainted; a (computed before
    // the exp by the fallback), the input and an unrelated tensor are not.
    const other = h.tensor([5, 6], [2]);
    h.runtime.injectFault({ kernelMatching: /exp/ });
    const second = run(3);
    const error = await h.read(second.d).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(TaintedReadError);
    expect((error as TaintedReadError).root).toBeInstanceOf(InjectedFaultError);
    expect(h.values(second.a)).toEqual(oracle(second.xv, second.yv, 3, -2, 2).a);
    expect(h.values(second.x)).toEqual(Array.from(new Float32Array(second.xv)));
    expect(h.values(other)).toEqual([5, 6]);
    h.runtime.server.clearFaults();
    disposeAll(h);
    expect(h.runtime.memoryUsage().liveAllocations).toBe(0);
  });

  it(`elementwise: at most ${MAX_LAUNCH_ENTRIES} layout signatures are remembered`, () => {
    const h = new CpuTestHarness();
    const probe = block(h, h.tensor(seeded(6, 1), [2, 3]), h.tensor(seeded(6, 2), [2, 3]), 1, -1, 1, "ReadOnly");
    const { optimization } = h.optimize(probe.ops);
    disposeAll(h);
    for (let i = 0; i < 3 * MAX_LAUNCH_ENTRIES; i++) {
      // A new offset each time: a new signature.
      const xv = seeded(6, 80 + i);
      const stored = h.tensor([...seeded(i, 7), ...xv], [i + 6]);
      const flat = h.run({ kind: "slice", input: h.use(stored, "ReadWrite"), ranges: [{ start: i, end: i + 6, step: 1 }], out: h.output([6]) });
      const x = h.run({ kind: "reshape", input: h.use(flat, "ReadWrite"), out: h.output([2, 3]) });
      const y = h.tensor(seeded(6, 90 + i), [2, 3]);
      const { ops, d } = block(h, x, y, 1, -1, 1, "ReadOnly");
      optimization.execute({ handles: h.handles, stream: h.stream }, ops);
      expect(h.values(d)).toEqual(oracle(xv, seeded(6, 90 + i), 1, -1, 1).d);
      expect(entries(optimization)).toBeLessThanOrEqual(MAX_LAUNCH_ENTRIES);
      disposeAll(h);
    }
    expect(entries(optimization)).toBe(MAX_LAUNCH_ENTRIES);
  });

  it("the uniforms a replay sends are the builder's, value for value (i32 truncation, clamp bounds)", () => {
    const h = new CpuTestHarness();
    const xi = h.tensor([1, 2, 3], [3], "i32");
    const xf = h.tensor([1, 2, 3], [3]);
    const ops: ElementwiseOperation[] = [
      { kind: "binary-scalar", op: "add", lhs: xi, scalar: 2.7, scalarFirst: false, out: h.output([3], "i32") },
      { kind: "clamp", input: xi, min: -1.5, max: 7.9, out: h.output([3], "i32") },
      { kind: "binary-scalar", op: "pow", lhs: xf, scalar: 1 / 3, scalarFirst: true, out: h.output([3]) },
      { kind: "clamp", input: xf, min: 0.1, max: 1e40, out: h.output([3]) },
      { kind: "unary", op: "neg", input: xf, out: h.output([3]) },
    ];
    const builder = new ElementwiseProgramBuilder([3]);
    for (const op of ops) {
      const r = appendElementwise(builder, op, (t) => {
        const handle = h.handles.getHandle(t);
        return builder.input(handle.memory, handle.dtype, handle);
      });
      const out = h.runtime.allocate(op.out.shape, op.out.dtype, h.stream);
      builder.output(r, out.memory, out.dtype, out);
    }
    const built = builder.build(h.runtime.runner);
    const replayed = replayUniforms(ops, [0, 1, 2, 3, 4], built.uniforms.byteLength / 8);
    expect(Array.from(new Float64Array(replayed.buffer))).toEqual(Array.from(new Float64Array(built.uniforms.buffer, built.uniforms.byteOffset, built.uniforms.byteLength / 8)));
  });

  /** `x[2,4] @ w[4,3] * s + b`, then `gelu`; with `castOut` a final cast to i32 (the product then goes to a scratch). */
  function layer(h: CpuTestHarness, x: TensorIr, w: TensorIr, b: TensorIr, s: number, castOut: boolean): { ops: OperationIr[]; out: TensorIr } {
    const p = h.output([2, 3]);
    const q = h.output([2, 3]);
    const r = h.output([2, 3]);
    const g = h.output([2, 3]);
    const ops: OperationIr[] = [
      { kind: "matmul", lhs: x, rhs: w, out: p },
      { kind: "binary-scalar", op: "mul", lhs: h.use(p, "ReadWrite"), scalar: s, scalarFirst: false, out: q },
      { kind: "binary", op: "add", lhs: h.use(q, "ReadWrite"), rhs: h.use(b, "ReadWrite"), out: r },
      { kind: "unary", op: "gelu", input: h.use(r, "ReadWrite"), out: g },
    ];
    if (!castOut) return { ops, out: h.use(g, "ReadOnly") };
    const c = h.output([2, 3], "i32");
    ops.push({ kind: "cast", input: h.use(g, "ReadWrite"), out: c });
    return { ops, out: h.use(c, "ReadOnly") };
  }

  for (const castOut of [false, true]) {
    it(`matmul + epilogue${castOut ? " (product in a scratch)" : ""}: other layouts and scalars give the oracle's values, replaying each layout`, () => {
      const h = new CpuTestHarness();
      const probe = layer(h, h.tensor(seeded(8, 1), [2, 4]), h.tensor(seeded(12, 2), [4, 3]), h.tensor(seeded(6, 3), [2, 3]), 1, castOut);
      const { optimization } = h.optimize(probe.ops, "matmul");
      disposeAll(h);
      const sequence: [Layout, Layout, Layout][] = [["dense", "dense", "broadcast"], ["offset", "transposed", "dense"], ["dense", "dense", "broadcast"], ["offset", "transposed", "dense"], ["transposed", "offset", "broadcast"], ["dense", "dense", "broadcast"]];
      for (let i = 0; i < sequence.length; i++) {
        const [xl, wl, bl] = sequence[i]!;
        const xv = seeded(8, 100 + i);
        const wv = seeded(12, 110 + i);
        const bv = seeded(6, 120 + i);
        const s = 0.25 + i;
        const fused = layer(h, place(h, xv, 2, 4, xl), place(h, wv, 4, 3, wl), place(h, bv, 2, 3, bl), s, castOut);
        optimization.execute({ handles: h.handles, stream: h.stream }, fused.ops);
        const plain = new CpuTestHarness({ fusion: false });
        const want = layer(plain, plain.tensor(xv, [2, 4]), plain.tensor(wv, [4, 3]), plain.tensor(logical(bv, 2, 3, bl), [2, 3]), s, castOut);
        for (const op of want.ops) plain.exec(op);
        expect(h.values(fused.out), `execution ${i} (${xl}/${wl}/${bl})`).toEqual(plain.values(want.out));
        disposeAll(h);
        expect(h.runtime.memoryUsage().liveAllocations, `execution ${i}: nothing left (scratch included)`).toBe(0);
      }
      // Executions 3 and 5 repeat a layout remembered by an earlier one (execution 0 only derives the structure).
      expect(h.runtime.stats.replayedLaunches).toBe(2);
      expect(entries(optimization)).toBe(3);
    });
  }
});
