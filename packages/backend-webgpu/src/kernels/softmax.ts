import { invariant } from "@weft/environment";
import { WgslBuilder } from "../codegen/wgsl/builder.js";
import { emitExpressions, ExprGraph } from "../codegen/wgsl/expr.js";
import { checkIndexRange } from "../codegen/wgsl/indexing.js";
import { Preamble } from "../codegen/wgsl/preamble.js";
import { storageBinding } from "../codegen/wgsl/bindings.js";
import { finishSource, type DeviceProfile } from "../codegen/wgsl/types.js";
import { dispatch1d, ENTRY_PARAMS, LINEAR_GROUP } from "./dispatch.js";
import type { KernelLaunchPlan } from "./elementwise.js";
import { combine, identity } from "./reduce.js";

/** Longest row {@link softmaxKernel} takes: each of a workgroup's invocations loops over at most this / workgroup size elements. */
export const MAX_SOFTMAX_ROW = 4096;

/** What a fused row softmax reads and writes: `rows` dense f32 rows of `n`, the input at `offset` elements. */
export interface SoftmaxSpec {
  readonly rows: number;
  readonly n: number;
  /** The input's offset in elements (its rows are dense: row `r` starts at `offset + r·n`). */
  readonly offset: number;
}

/** Canonical key of {@link softmaxKernel}. */
export function softmaxKey(spec: SoftmaxSpec, profile: DeviceProfile): string {
  return `softmax:f32[${spec.rows}x${spec.n}]@${spec.offset}#${profile.key}`;
}

/**
 * One kernel for `softmax` along the last axis of dense f32 rows, the op sequence `Tensor.softmax`
 * records (`m = max(x)`, `d = x − m`, `e = exp(d)`, `s = sum(e)`, `y = e / s`): one workgroup per
 * row takes the maximum, then the sum of the exponentials, then writes every `e / s`.
 *
 * @remarks
 * **The same values as the five kernels.** `sub`, `exp` and `div` are emitted from the same
 * expression graph as the elementwise kernels (so the same WGSL and helpers); `max` and `sum` use
 * the reduce kernel's identity, combine (`maxNan`: a NaN wins) and workgroup tree, with invocation
 * `i` folding elements `i, i + wg, …` in order as the reduce kernel's scalar path does. So a row
 * whose separate `sum` takes that path gives the same bits; where the reduce kernel reads `vec4`s
 * (dense rows of a multiple of 4) the sum is associated differently, within f32 rounding, as any
 * two WebGPU reductions may be (docs/semantics.md: f32 trees). `exp` is evaluated twice per
 * element (for the sum, then for the output): the same expression, the same bits.
 * **Binding layout:** `x` (the input's allocation), `y` (the output, dense).
 */
export function softmaxKernel(spec: SoftmaxSpec, profile: DeviceProfile, key = softmaxKey(spec, profile)): KernelLaunchPlan {
  const { rows, n, offset } = spec;
  invariant(n >= 1 && n <= MAX_SOFTMAX_ROW, () => `softmax rows of ${n} elements are not fused`);
  checkIndexRange(offset + rows * n, "softmax");
  const wg = profile.workgroupSize;
  const t = { dtype: "f32" as const, width: 1 as const };
  const helpers = new Preamble();
  const { tree, exp, out: y } = rowSoftmax(wg, helpers, "i");
  const body = new WgslBuilder();
  body.block(`fn main(${ENTRY_PARAMS})`, (b) => {
    b.line(`let g = ${LINEAR_GROUP};`, `if (g >= ${rows}u) { return; }`);
    b.line(`let base = g * ${n}u;`);
    b.line(`var av = ${identity("max", "f32")};`);
    b.block(`for (var j = lid; j < ${n}u; j = j + ${wg}u)`, (l) => l.line(`let bv = x[base + j + ${offset}u];`, combine("max", "av", "bv", "", "", t, helpers)));
    tree(b, "max");
    b.line("let m = sv[0];", "workgroupBarrier();");
    b.line(`av = ${identity("sum", "f32")};`);
    const ex = exp();
    b.block(`for (var j = lid; j < ${n}u; j = j + ${wg}u)`, (l) => {
      l.line("let i = base + j;", `let xv = x[i + ${offset}u];`, ...ex.lines, `let bv = ${ex.value};`, combine("sum", "av", "bv", "", "", t, helpers));
    });
    tree(b, "sum");
    b.line("let s = sv[0];");
    const out = y();
    b.block(`for (var j = lid; j < ${n}u; j = j + ${wg}u)`, (l) => {
      l.line("let i = base + j;", `let xv = x[i + ${offset}u];`, ...out.lines, `y[i] = ${out.value};`);
    });
  });
  const w = new WgslBuilder();
  w.line(storageBinding(0, "x", "f32"), storageBinding(1, "y", "f32"), "", `var<workgroup> sv: array<f32, ${wg}>;`, "");
  if (!helpers.empty) helpers.emit(w);
  w.line(`@compute @workgroup_size(${wg})`);
  return { kernel: { key, source: finishSource(w.toString() + body.toString()), entryPoint: "main", label: "softmax" }, count: dispatch1d(rows, profile, "softmax") };
}

/**
 * The parts of a row softmax over one workgroup of `wg` invocations, shared by the softmax kernel
 * and the matmul+softmax kernel so both compute the same values: `tree(b, op)` folds each
 * invocation's `av` into `sv[0]` (the reduce kernel's combine: `maxNan`, a NaN wins), `exp()` emits
 * `exp(xv − m)` and `out()` `exp(xv − m) / s` from the WGSL values `xv`, `m`, `s` (the same
 * expression graph as the elementwise kernels). The kernel declares `sv: array<f32, wg>` and the
 * builtin `lid`; `index` names its element index.
 */
export function rowSoftmax(wg: number, helpers: Preamble, index: string): {
  tree: (b: WgslBuilder, op: "max" | "sum") => void;
  exp: () => { lines: string[]; value: string };
  out: () => { lines: string[]; value: string };
} {
  const t = { dtype: "f32" as const, width: 1 as const };
  const graph = new ExprGraph();
  const xv = graph.add({ kind: "value", name: "xv", dtype: "f32" });
  const mv = graph.add({ kind: "value", name: "m", dtype: "f32" });
  const sv = graph.add({ kind: "value", name: "s", dtype: "f32" });
  const e = graph.unary("exp", graph.binary("sub", xv, mv));
  const y = graph.binary("div", e, sv);
  const noParam = (): string => {
    throw new Error("internal: the softmax graph has no parameters");
  };
  const emit = (root: number): { lines: string[]; value: string } => {
    const { lines, exprs } = emitExpressions(graph, [root], { width: 1, helpers, param: noParam, index, load: () => "0.0" });
    return { lines, value: exprs[0] ?? "" };
  };
  return {
    tree: (b, op) => {
      b.line("sv[lid] = av;", "workgroupBarrier();");
      b.block(`for (var st = ${wg / 2}u; st > 0u; st = st >> 1u)`, (l) => {
        l.block("if (lid < st)", (c) => c.line("var xw = sv[lid];", combine(op, "xw", "sv[lid + st]", "", "", t, helpers), "sv[lid] = xw;"));
        l.line("workgroupBarrier();");
      });
    },
    exp: () => emit(e),
    out: () => emit(y),
  };
}
