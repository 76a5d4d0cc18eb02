import { invariant } from "@weft/environment";
import { WgslBuilder } from "../codegen/wgsl/builder.js";
import { emitExpressions, type ExprGraph, type NodeId } from "../codegen/wgsl/expr.js";
import { checkIndexRange, emitCoords, offsetExpr, type StridedLayout } from "../codegen/wgsl/indexing.js";
import { convert } from "../codegen/wgsl/ops.js";
import { encodeParams, KernelParams } from "../codegen/wgsl/params.js";
import { Preamble } from "../codegen/wgsl/preamble.js";
import { storageBinding } from "../codegen/wgsl/bindings.js";
import { finishSource, storageElement, type DeviceProfile } from "../codegen/wgsl/types.js";
import { dispatch1d, ENTRY_PARAMS, LINEAR_GROUP } from "./dispatch.js";
import type { ElementwiseInput, KernelLaunchPlan } from "./elementwise.js";
import { identity } from "./reduce.js";
import { epilogueLoad, productLayout } from "./matmul.js";
import { rowSoftmax } from "./softmax.js";

/**
 * The most multiply-adds one {@link matmulSoftmaxKernel} launch does (`batches · M · N · K`): each
 * row's workgroup reads the whole right operand, which a tiled product reads once per tile, so
 * past small heads the matmul kernel and the softmax kernel run as two launches instead.
 */
export const MAX_MATMUL_SOFTMAX_MACS = 1 << 22;

/** The longest `K` it takes: Mesa's GLES stops a loop after 65,535 iterations per invocation. */
export const MAX_MATMUL_SOFTMAX_K = 65_534;

/**
 * A product `lhs · rhs` (f32, batch dims broadcast), an elementwise epilogue on it, and `softmax`
 * along the last axis of the epilogue's result, as one kernel: the last layer of a classifier.
 */
export interface MatmulSoftmaxSpec {
  readonly lhs: StridedLayout;
  readonly rhs: StridedLayout;
  /** The product's (and the softmax's) shape: `[...batch, M, N]`. */
  readonly outShape: readonly number[];
  /** The epilogue graph: reads the product as the value `res`; `x` is the softmax's input. */
  readonly epilogue: { readonly graph: ExprGraph; readonly inputs: readonly ElementwiseInput[]; readonly x: NodeId };
}

const layoutKey = (l: StridedLayout): string => `${l.shape}:${l.strides}:${l.offset}`;

/** Canonical key of {@link matmulSoftmaxKernel} (structure only: the epilogue's values are uniforms). */
export function matmulSoftmaxKey(spec: MatmulSoftmaxSpec, profile: DeviceProfile): string {
  const e = spec.epilogue;
  return `matmul-softmax:f32(${layoutKey(spec.lhs)}|${layoutKey(spec.rhs)})[${spec.outShape}]{${e.graph.key()}}(${e.inputs.map((i) => `${i.dtype}:${layoutKey(i.layout)}`).join("|")})->${e.x}#${profile.key}`;
}

/** The uniform bytes of the epilogue's parameters for one launch (`undefined` when it has none). */
export function matmulSoftmaxUniforms(spec: MatmulSoftmaxSpec): Uint8Array | undefined {
  return encodeParams(spec.epilogue.graph.params);
}

/** Whether {@link matmulSoftmaxKernel} takes a product of this shape on `profile` (else two launches). */
export function matmulSoftmaxFits(outShape: readonly number[], k: number, profile: DeviceProfile): boolean {
  const rank = outShape.length;
  const n = outShape[rank - 1] ?? 0;
  const rows = outShape.slice(0, -1).reduce((a, b) => a * b, 1);
  return rank >= 2 && n >= 1 && n <= profile.workgroupSize && rows >= 1 && k >= 1 && k <= MAX_MATMUL_SOFTMAX_K && rows * n * k <= MAX_MATMUL_SOFTMAX_MACS;
}

/**
 * One workgroup per output row: invocation `j < N` computes the product's element `j` of the row
 * (a `K`-term sum in order, as the `simple` matmul kernel does), the epilogue on it, and then the
 * row's `softmax` as {@link softmaxKernel} does — the maximum, the sum of `exp(x − m)` over the
 * same workgroup tree with the same combine (`maxNan`: a NaN wins), and `exp(x − m) / s`.
 *
 * @remarks
 * **Why.** A classifier head (`softmax(h · W + b)`) ran as a matmul kernel that wrote the logits
 * and a softmax kernel that read them: two launches per request, and on the H200 a launch is most
 * of a small request's host cost (docs/performance.md, "One launch fewer per request").
 * **Values.** The product is the simple kernel's (a zero sum is +0); the softmax is the softmax
 * kernel's expression graph (`sub`, `exp`, `div` from the same `ExprGraph` as the elementwise
 * kernels). Invocations `j ≥ N` contribute the identities (`−inf`, `0`).
 * **Binding layout:** lhs, rhs, the epilogue's inputs, the output `y` (dense), then the uniform
 * block when the epilogue has parameters.
 * **Bounds** ({@link matmulSoftmaxFits}): `N` ≤ the workgroup size, `K` ≤ {@link MAX_MATMUL_SOFTMAX_K},
 * at most {@link MAX_MATMUL_SOFTMAX_MACS} multiply-adds.
 */
export function matmulSoftmaxKernel(spec: MatmulSoftmaxSpec, profile: DeviceProfile, key = matmulSoftmaxKey(spec, profile)): KernelLaunchPlan {
  const { M, N, K, batchShape, batches, lhsBatch, rhsBatch, sam, sak, sbk, sbn } = productLayout(spec.lhs, spec.rhs, spec.outShape);
  invariant(matmulSoftmaxFits(spec.outShape, K, profile), () => `matmul+softmax of [${spec.outShape}] with K = ${K} is not fused`);
  checkIndexRange(batches * M * N, "matmul+softmax");
  const wg = profile.workgroupSize;
  const t = { dtype: "f32" as const, width: 1 as const };
  const helpers = new Preamble();
  const params = new KernelParams();
  const param = params.add(spec.epilogue.graph);

  const { tree, exp, out: y } = rowSoftmax(wg, helpers, "o");


  const body = new WgslBuilder();
  body.block(`fn main(${ENTRY_PARAMS})`, (b) => {
    // `g` is uniform in the workgroup: the early return keeps the barriers in uniform control flow.
    b.line(`let g = ${LINEAR_GROUP};`, `if (g >= ${batches * M}u) { return; }`);
    b.line(`let batch = g / ${M}u;`, `let row = g % ${M}u;`, "let col = lid;");
    const bc = emitCoords(b, "batch", batchShape, "bt");
    b.line(`let aBase = ${offsetExpr(bc, lhsBatch, spec.lhs.offset)} + row * ${sam}u;`, `let bBase = ${offsetExpr(bc, rhsBatch, spec.rhs.offset)};`);
    b.line(`let o = g * ${N}u + col;`);
    b.line("var xv = 0.0;");
    b.block(`if (col < ${N}u)`, (c) => {
      c.line("var acc = 0.0;");
      c.block(`for (var k = 0u; k < ${K}u; k = k + 1u)`, (l) => l.line(`acc = acc + lhs[aBase + k * ${sak}u] * rhs[bBase + k * ${sbk}u + col * ${sbn}u];`));
      // A zero product sum is +0 whatever the compiler folded (docs/semantics.md, "Signed zeros").
      c.line(`let res = ${helpers.use("plusZero", t)}(acc);`);
      const outCoords = spec.epilogue.inputs.length > 0 ? emitCoords(c, "o", spec.outShape, "e") : [];
      const { lines, exprs } = emitExpressions(spec.epilogue.graph, [spec.epilogue.x], {
        width: 1,
        helpers,
        param,
        index: "o",
        load: epilogueLoad(spec.epilogue.inputs, spec.outShape, outCoords),
      });
      c.line(...lines, `xv = ${convert(exprs[0] ?? "", { dtype: spec.epilogue.graph.node(spec.epilogue.x).dtype, width: 1 }, t)};`);
    });
    b.line(`var av = ${identity("max", "f32")};`);
    b.block(`if (col < ${N}u)`, (c) => c.line("av = xv;"));
    tree(b, "max");
    b.line("let m = sv[0];", "workgroupBarrier();");
    b.line(`av = ${identity("sum", "f32")};`);
    const ex = exp();
    b.block(`if (col < ${N}u)`, (c) => c.line(...ex.lines, `av = ${ex.value};`));
    tree(b, "sum");
    b.line("let s = sv[0];");
    const out = y();
    b.block(`if (col < ${N}u)`, (c) => c.line(...out.lines, `y[o] = ${out.value};`));
  });

  const w = new WgslBuilder();
  let binding = 0;
  w.line(storageBinding(binding++, "lhs", "f32"), storageBinding(binding++, "rhs", "f32"));
  spec.epilogue.inputs.forEach((input, slot) => w.line(storageBinding(binding++, `ep${slot}`, storageElement(input.dtype, 1))));
  w.line(storageBinding(binding++, "y", "f32"));
  if (params.count > 0) w.line("");
  params.declare(w, binding);
  w.line("", `var<workgroup> sv: array<f32, ${wg}>;`, "");
  if (!helpers.empty) helpers.emit(w);
  w.line(`@compute @workgroup_size(${wg})`);
  return { kernel: { key, source: finishSource(w.toString() + body.toString()), entryPoint: "main", label: "matmul+softmax" }, count: dispatch1d(batches * M, profile, "matmul+softmax") };
}
