/**
 * Every op family at sizes that cross each kernel threshold, against the oracle: tails of `vec4`
 * (`n % 4 ≠ 0`), one and several workgroups, each reduction pass boundary, more workgroups than
 * one dispatch dimension holds, non-contiguous inputs (permuted, sliced with steps, expanded),
 * empty and rank-0 shapes, and special values (NaN, ±Inf, ±0, huge) flowing through each family.
 *
 * @remarks
 * **Sizes.** The catalogue keeps to sizes that cross thresholds rather than giant ones (software
 * WebGPU on a 2-core CI box is slow): workgroups are at most 256 invocations, a reduction pass
 * reduces `workgroupSize × 64` elements, so extents around 128·64 = 8,192 and 256·64 = 16,384
 * cross the first pass boundary on every adapter we know. Crossing a *third* pass or 65,535
 * workgroups per dimension takes millions of elements at those workgroup sizes; the WebGPU suite
 * runs these cases a second time on a runtime with 4-invocation workgroups, where the same
 * boundaries sit at 256 elements (three passes from 65,537) and 262,144 elements (2-D dispatch).
 * `thresholdCases({ large: true })` adds a case that crosses 65,535 workgroups at the default
 * workgroup size (8.4 M elements), for the GPU machine.
 *
 * @module
 */
import type { ConformanceCase } from "./cases.js";
import { ELEMENTWISE, EXACT, TRANSCENDENTAL, reductionTolerance } from "./host-data.js";
import type { Tensor } from "../tensor/tensor.js";

/** Options of {@link thresholdCases}. */
export interface ThresholdOptions {
  /** Add the multi-million-element dispatch case (default false: GPU machine only). */
  readonly large?: boolean;
}

const x0 = (xs: readonly Tensor[]): Tensor => xs[0] as Tensor;
const x1 = (xs: readonly Tensor[]): Tensor => xs[1] as Tensor;

/** Elementwise sizes: vec4 tails and workgroup edges (64, 128, 256 invocations; 4 per vec4 thread). */
const ELEMENTWISE_SIZES = [1, 2, 3, 4, 5, 7, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1023, 1025, 4097];

/** Reduction extents around the pass boundaries of 64-, 128- and 256-invocation workgroups. */
const REDUCTION_EXTENTS = [1, 3, 4, 255, 256, 257, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 16386, 65537];

/** The threshold cases (see the module doc); `large` adds the multi-million-element dispatch case. */
export function thresholdCases(options: ThresholdOptions = {}): ConformanceCase[] {
  const out: ConformanceCase[] = [];
  out.push({
    name: `elementwise chains at vec4 tails and workgroup edges (n = ${ELEMENTWISE_SIZES.join(", ")})`,
    inputs: ELEMENTWISE_SIZES.map((n) => ({ shape: [n], kind: "special" as const })),
    run: (xs) => xs.map((x) => x.mul(1.5).add(x.abs()).neg().maximum(-3)),
    tolerance: ELEMENTWISE,
  });
  out.push({
    name: "elementwise on non-contiguous inputs: permuted, sliced with steps, expanded, at odd sizes",
    inputs: [{ shape: [5, 7, 9], kind: "special" }, { shape: [9, 1, 5] }, { shape: [1, 7, 1] }],
    run: (xs) => {
      const a = x0(xs).permute([2, 1, 0]);
      const b = x1(xs).expand([9, 7, 5]);
      const s = x0(xs).slice([[0, 5, 2], [1, 7, 3], [0, 9, 4]]);
      return [a.add(b), a.mul(xs[2] as Tensor), s.sub(s.abs()), s.transpose().mul(2)];
    },
    tolerance: ELEMENTWISE,
  });
  for (const k of REDUCTION_EXTENTS) {
    out.push({
      name: `reductions over an extent of ${k} (sum, mean, max, argmax, any, with a prologue and an epilogue)`,
      inputs: [{ shape: [k], kind: "unit" }, { shape: [k], kind: "int", dtype: "i32" }],
      run: (xs) => {
        const x = x0(xs);
        const i = x1(xs);
        return [x.sum(), x.mean(), x.abs().max(), i.argmax(), i.gt(3).any(), x.mul(2).exp().sum().log(), i.sum(), i.min()];
      },
      tolerance: reductionTolerance(k * 8),
    });
  }
  out.push({
    name: "row reductions: many outputs, each across a pass boundary (3 × 16,385)",
    inputs: [{ shape: [3, 16385], kind: "unit" }],
    run: (xs) => [x0(xs).sum(1), x0(xs).mean(1, { keepDims: true }), x0(xs).argmin(1), x0(xs).transpose().sum(0)],
    tolerance: reductionTolerance(16385 * 2),
  });
  out.push({
    name: "reductions of non-contiguous inputs over leading and inner axes",
    inputs: [{ shape: [33, 17, 9] }],
    run: (xs) => {
      const p = x0(xs).permute([2, 0, 1]);
      return [p.sum(1), p.max([0, 2]), x0(xs).slice([[1, 33, 2]]).mean([0, 2]), x0(xs).expand([2, 33, 17, 9]).sum(0)];
    },
    tolerance: reductionTolerance(33 * 17),
  });
  out.push({
    name: "reductions see NaN, ±Inf and huge values at every pass",
    inputs: [{ shape: [20000], kind: "special" }],
    run: (xs) => [x0(xs).sum(), x0(xs).max(), x0(xs).min(), x0(xs).argmax(), x0(xs).ne(x0(xs)).any()],
    tolerance: reductionTolerance(20000),
  });
  out.push({
    name: "matmul with edges in M, N and K, a K past two tiles, a batch and a transposed operand",
    inputs: [{ shape: [2, 67, 131] }, { shape: [131, 33] }, { shape: [33, 131] }],
    run: (xs) => [x0(xs).matmul(x1(xs)), x0(xs).matmul((xs[2] as Tensor).transpose())],
    tolerance: reductionTolerance(131 * 4),
  });
  out.push({
    name: "matmul with NaN and ±Inf entries, and an empty K",
    inputs: [{ shape: [5, 6], kind: "special" }, { shape: [6, 4] }, { shape: [3, 0] }, { shape: [0, 2] }],
    run: (xs) => [x0(xs).matmul(x1(xs)), (xs[2] as Tensor).matmul(xs[3] as Tensor)],
    tolerance: reductionTolerance(6 * 4),
  });
  out.push({
    name: "gather along each axis of a non-contiguous input, with negative indices",
    inputs: [{ shape: [5, 6, 4] }, { shape: [6, 3, 4], dtype: "i32", kind: "index", max: 5 }],
    run: (xs) => {
      // Indices in [-2, 3): valid for an axis of 5, negative ones counting from the end.
      const idx = x1(xs).sub(2);
      const p = x0(xs).permute([1, 0, 2]);
      return [p.gather(idx, 1), x0(xs).permute([1, 0, 2]).gather(idx.abs().slice([null, [0, 2]]), 2), x0(xs).gather(idx.slice([[0, 5], [0, 1]]).abs(), 1)];
    },
    tolerance: EXACT,
  });
  out.push({
    name: "empty and rank-0 tensors through every family",
    inputs: [{ shape: [] }, { shape: [4, 0] }, { shape: [0] }],
    run: (xs) => {
      const s = x0(xs);
      const e = x1(xs);
      return [s.exp(), s.sum(), s.reshape([1, 1]).matmul(s.reshape([1, 1])), e.add(1), e.sum(1), e.sum(0), e.transpose().matmul(e), (xs[2] as Tensor).pad([[1, 2]], 3), s.add(e.sum())];
    },
    tolerance: TRANSCENDENTAL,
  });
  out.push({
    name: "an elementwise chain and a gather over 300,001 elements (a 2-D dispatch with 4-invocation workgroups)",
    inputs: [{ shape: [300001] }, { shape: [300001], dtype: "i32", kind: "index", max: 7 }],
    run: (xs) => [x0(xs).mul(2).add(1).relu(), x0(xs).slice([[0, 7]]).gather(x1(xs), 0)],
    tolerance: ELEMENTWISE,
  });
  if (options.large === true) {
    out.push({
      name: "more than 65,535 workgroups in one dimension at the default workgroup size (2^23 + 5 elements)",
      inputs: [{ shape: [2 ** 23 + 5] }],
      run: (xs) => [x0(xs).mul(3).sub(1), x0(xs).sum()],
      tolerance: reductionTolerance(2 ** 23),
    });
  }
  return out;
}
