/**
 * The unfused reduce kernels kept by layout (`ReduceKernelCache`): a kernel is reused only for the
 * same op, axes, input layout and output, so one runtime reducing many layouts in turn gives what
 * a fresh runtime gives for each; the cache stays bounded.
 */
import { describe, expect, it } from "vitest";
import type { ReduceOp, TensorIr } from "@weft/fusion";
import { CpuTestHarness } from "../testing/cpu-test-harness.js";
import { MAX_REDUCE_KERNELS, ReduceKernelCache } from "./reduce-kernel-cache.js";

function seeded(n: number, seed: number): number[] {
  let s = seed;
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return Math.round(((s / 2 ** 32) * 8 - 4) * 16) / 16;
  });
}

/** Reduces `values` ([4, 6]) by `op` over `axes`, the input laid out per `layout`, in `h`. */
function reduce(h: CpuTestHarness, values: readonly number[], layout: "dense" | "transposed" | "offset", op: ReduceOp, axes: number[]): number[] {
  let x: TensorIr;
  if (layout === "dense") x = h.tensor(values, [4, 6]);
  else if (layout === "transposed") {
    const t: number[] = [];
    for (let j = 0; j < 6; j++) for (let i = 0; i < 4; i++) t.push(values[i * 6 + j] as number);
    x = h.run({ kind: "permute", input: h.use(h.tensor(t, [6, 4]), "ReadWrite"), axes: [1, 0], out: h.output([4, 6]) });
  } else {
    const stored = h.tensor([7, 7, 7, ...values], [27]);
    const flat = h.run({ kind: "slice", input: h.use(stored, "ReadWrite"), ranges: [{ start: 3, end: 27, step: 1 }], out: h.output([24]) });
    x = h.run({ kind: "reshape", input: h.use(flat, "ReadWrite"), out: h.output([4, 6]) });
  }
  const outShape = [4, 6].map((d, i) => (axes.includes(i) ? 1 : d));
  const dtype = op === "argmax" || op === "argmin" ? "i32" : "f32";
  const out = h.run({ kind: "reduce", op, input: h.use(x, "ReadWrite"), axes, keepDims: true, out: h.output(outShape, dtype) });
  const values_ = h.values(out);
  h.handles.removeHandle(out.id);
  return values_;
}

describe("ReduceKernelCache", () => {
  it("one runtime reducing layouts, axes and ops in turn gives what a fresh runtime gives for each", () => {
    const h = new CpuTestHarness({ fusion: false });
    const cases: ["dense" | "transposed" | "offset", ReduceOp, number[]][] = [];
    for (const layout of ["dense", "transposed", "offset"] as const) {
      for (const op of ["max", "sum", "argmax", "mean"] as const) for (const axes of [[1], [0], [0, 1]]) cases.push([layout, op, axes]);
    }
    for (let round = 0; round < 2; round++) {
      for (let c = 0; c < cases.length; c++) {
        const [layout, op, axes] = cases[(c * 7 + round * 5) % cases.length]!;
        const values = seeded(24, 100 * round + c);
        const want = reduce(new CpuTestHarness({ fusion: false }), values, layout, op, axes);
        expect(reduce(h, values, layout, op, axes), `${op} over [${axes}] of a ${layout} input (round ${round})`).toEqual(want);
      }
    }
    expect(h.runtime.memoryUsage().liveAllocations, "nothing left").toBe(0);
  });

  it(`reuses a kernel for the same layout only, and keeps at most ${MAX_REDUCE_KERNELS}`, () => {
    const h = new CpuTestHarness({ fusion: false });
    const cache = new ReduceKernelCache();
    const x = h.handles.getHandle(h.tensor(seeded(24, 1), [4, 6]));
    const first = cache.kernel("sum", [1], x, [4, 1], "f32");
    expect(cache.kernel("sum", [1], x, [4, 1], "f32"), "same op, axes, layout: the same kernel").toBe(first);
    expect(cache.kernel("max", [1], x, [4, 1], "f32"), "another op").not.toBe(first);
    expect(cache.kernel("sum", [0], x, [1, 6], "f32"), "other axes").not.toBe(first);
    expect(cache.kernel("sum", [1], { ...x, offset: 1, shape: [4, 5] }, [4, 1], "f32"), "another layout").not.toBe(first);
    for (let i = 0; i < 3 * MAX_REDUCE_KERNELS; i++) cache.kernel("sum", [1], { ...x, offset: i }, [4, 1], "f32");
    expect(cache.size).toBe(MAX_REDUCE_KERNELS);
  });
});
