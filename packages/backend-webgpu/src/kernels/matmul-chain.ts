import { invariant } from "@weft/environment";
import { WgslBuilder } from "../codegen/wgsl/builder.js";
import { emitExpressions, type ExprGraph, type NodeId } from "../codegen/wgsl/expr.js";
import { broadcastStrides, checkIndexRange, emitCoords, offsetExpr, type StridedLayout } from "../codegen/wgsl/indexing.js";
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
 * The most multiply-adds one {@link matmulChainKernel} launch does (`rows · Σ K_l · N_l`): each
 * row's workgroup reads every layer's whole right operand, which a tiled product reads once per
 * tile, so past small layers the matmul kernels run them instead.
 */
export const MAX_MATMUL_CHAIN_MACS = 1 << 22;

/** The longest `K` of a layer: Mesa's GLES stops a loop after 65,535 iterations per invocation. */
export const MAX_MATMUL_CHAIN_K = 65_534;

/** One layer of a {@link MatmulChainSpec}: a product by `rhs`, then an elementwise epilogue on it. */
export interface MatmulChainLayer {
  /** The right operand `[...batch, K_l, N_l]` (its batch dims broadcast into the chain's). */
  readonly rhs: StridedLayout;
  /**
   * The epilogue graph: reads the product as the value `res` and its inputs broadcast to the
   * layer's product shape `[...batch, M, N_l]`; `x` is what the next layer multiplies (or the
   * softmax takes, or the chain writes).
   */
  readonly epilogue: { readonly graph: ExprGraph; readonly inputs: readonly ElementwiseInput[]; readonly x: NodeId };
}

/**
 * A chain of products computed row by row (f32): `x_0 = lhs`, `x_l = epilogue_l(x_{l−1} · rhs_l)`,
 * then optionally `softmax` along the last axis of the last `x`: a classifier head (one layer and
 * the softmax), or a small MLP's layers (several). What {@link matmulChainKernel} runs.
 */
export interface MatmulChainSpec {
  /** The first layer's left operand `[...batch, M, K_0]`. */
  readonly lhs: StridedLayout;
  /** At least one. */
  readonly layers: readonly MatmulChainLayer[];
  /** The chain's batch shape and rows: its output is `[...batch, M, N_last]`. */
  readonly batchShape: readonly number[];
  readonly m: number;
  /** Whether the last layer's value goes through `softmax` along its last axis before it is written. */
  readonly softmax: boolean;
}

const layoutKey = (l: StridedLayout): string => `${l.shape}:${l.strides}:${l.offset}`;

/** `N` of a layer (its right operand's last dim). */
const widthOf = (layer: MatmulChainLayer): number => layer.rhs.shape[layer.rhs.shape.length - 1] ?? 0;

/** The product shape of layer `l` of `spec`: `[...batch, M, N_l]`. */
function chainLayerShape(spec: Pick<MatmulChainSpec, "batchShape" | "m">, n: number): number[] {
  return [...spec.batchShape, spec.m, n];
}

/** Canonical key of {@link matmulChainKernel} (structure only: the epilogues' values are uniforms). */
export function matmulChainKey(spec: MatmulChainSpec, profile: DeviceProfile): string {
  const layers = spec.layers.map((l) => `${layoutKey(l.rhs)}{${l.epilogue.graph.key()}}(${l.epilogue.inputs.map((i) => `${i.dtype}:${layoutKey(i.layout)}`).join("|")})->${l.epilogue.x}`);
  return `matmul-chain:f32(${layoutKey(spec.lhs)})[${spec.batchShape}|${spec.m}]${layers.join(";")}${spec.softmax ? "+softmax" : ""}#${profile.key}`;
}

/** The uniform bytes of the epilogues' parameters for one launch, layer by layer (`undefined` when there is none). */
export function matmulChainUniforms(spec: MatmulChainSpec): Uint8Array | undefined {
  return encodeParams(spec.layers.flatMap((l) => l.epilogue.graph.params));
}

/**
 * Whether {@link matmulChainKernel} takes a chain of `rows` rows (batches · M) through layers of
 * `ks[l] × ns[l]` on `profile`: every `N_l` at most the workgroup size, every `K_l` at most
 * {@link MAX_MATMUL_CHAIN_K}, at most {@link MAX_MATMUL_CHAIN_MACS} multiply-adds in all.
 */
export function matmulChainFits(rows: number, ks: readonly number[], ns: readonly number[], profile: DeviceProfile): boolean {
  if (rows < 1 || ks.length === 0 || ks.length !== ns.length) return false;
  let macs = 0;
  for (let l = 0; l < ks.length; l++) {
    const k = ks[l] ?? 0;
    const n = ns[l] ?? 0;
    if (n < 1 || n > profile.workgroupSize || k < 1 || k > MAX_MATMUL_CHAIN_K) return false;
    macs += k * n;
  }
  return rows * macs <= MAX_MATMUL_CHAIN_MACS;
}

/**
 * One workgroup per row of the chain: for each layer, invocation `j < N_l` computes element `j`
 * of the row's product (a `K_l`-term sum in order, as the `simple` matmul kernel does: the first
 * layer reads `lhs`, the others the previous layer's row from workgroup memory) and the layer's
 * epilogue on it; after the last layer, the row's `softmax` as {@link softmaxKernel} computes it
 * (the maximum, the sum of `exp(x − m)` over the same workgroup tree with the same combine —
 * `maxNan`: a NaN wins — and `exp(x − m) / s`), or the value itself, is written to `y`.
 *
 * @remarks
 * **Why.** A classifier head (`softmax(h · W + b)`) or a small MLP ran as one matmul kernel per
 * layer writing its result and a softmax kernel reading the last one: on the H200 a launch and a
 * block execution are most of a small request's host cost (docs/performance.md#one-launch-fewer,
 * #serving-p99-structure). The intermediate rows never leave the workgroup.
 * **Values.** Each product is the simple kernel's (a zero sum is +0); the epilogues are the same
 * expression graphs as the matmul kernel's; the softmax is the softmax kernel's graph. Invocations
 * `j ≥ N_l` hold 0 for the next layer (never read: `K_{l+1} = N_l`) and contribute the identities
 * (`−inf`, `0`) to the softmax.
 * **Binding layout:** `lhs`, every layer's `rhs` (`r0`, `r1`, …), every layer's epilogue inputs
 * (`e<l>_<slot>`, layer by layer), the output `y` (dense), then the uniform block when an epilogue
 * has parameters (layer by layer).
 * **Bounds** ({@link matmulChainFits}).
 */
export function matmulChainKernel(spec: MatmulChainSpec, profile: DeviceProfile, key = matmulChainKey(spec, profile)): KernelLaunchPlan {
  const first = spec.layers[0];
  invariant(first !== undefined, "a matmul chain has a layer");
  const ns = spec.layers.map(widthOf);
  const ks = [spec.lhs.shape[spec.lhs.shape.length - 1] ?? 0, ...ns.slice(0, -1)];
  const last = ns[ns.length - 1] ?? 0;
  const outShape = chainLayerShape(spec, last);
  const { batchShape, batches, lhsBatch, rhsBatch, sam, sak, sbk, sbn } = productLayout(spec.lhs, first.rhs, chainLayerShape(spec, ns[0] ?? 0));
  const M = spec.m;
  const rows = batches * M;
  invariant(matmulChainFits(rows, ks, ns, profile), () => `the matmul chain of [${outShape}] (K ${ks}, N ${ns}) is not fused`);
  checkIndexRange(rows * Math.max(...ns), "matmul chain");
  const wg = profile.workgroupSize;
  const t = { dtype: "f32" as const, width: 1 as const };
  const helpers = new Preamble();
  const params = new KernelParams();
  const { tree, exp, out: y } = rowSoftmax(wg, helpers, "o");

  const body = new WgslBuilder();
  body.block(`fn main(${ENTRY_PARAMS})`, (b) => {
    // `g` is uniform in the workgroup: the early return keeps the barriers in uniform control flow.
    b.line(`let g = ${LINEAR_GROUP};`, `if (g >= ${rows}u) { return; }`);
    b.line(`let batch = g / ${M}u;`, `let row = g % ${M}u;`, "let col = lid;");
    const bc = emitCoords(b, "batch", batchShape, "bt");
    b.line(`let aBase = ${offsetExpr(bc, lhsBatch, spec.lhs.offset)} + row * ${sam}u;`);
    b.line("var xv = 0.0;");
    spec.layers.forEach((layer, l) => {
      const n = ns[l] ?? 0;
      const k = ks[l] ?? 0;
      const shape = chainLayerShape(spec, n);
      const param = params.add(layer.epilogue.graph);
      // The right operand's batch strides into the chain's batch shape, and its K and N strides.
      const r = layer.rhs;
      const rr = r.strides.length;
      const rBatch = l === 0 ? rhsBatch : broadcastStrides({ shape: r.shape.slice(0, -2), strides: r.strides.slice(0, -2), offset: 0 }, batchShape);
      const [rk, rn] = l === 0 ? [sbk, sbn] : [r.strides[rr - 2] ?? 0, r.strides[rr - 1] ?? 0];
      if (l > 0) b.line("workgroupBarrier();", "hv[lid] = xv;", "workgroupBarrier();");
      b.block(`if (col < ${n}u)`, (c) => {
        c.line(`let rBase = ${offsetExpr(bc, rBatch, r.offset)};`);
        c.line("var acc = 0.0;");
        const left = l === 0 ? `lhs[aBase + k * ${sak}u]` : "hv[k]";
        c.block(`for (var k = 0u; k < ${k}u; k = k + 1u)`, (lp) => lp.line(`acc = acc + ${left} * r${l}[rBase + k * ${rk}u + col * ${rn}u];`));
        // A zero product sum is +0 whatever the compiler folded (docs/semantics.md, "Signed zeros").
        c.line(`let res = ${helpers.use("plusZero", t)}(acc);`);
        c.line(`let o = g * ${n}u + col;`);
        const outCoords = layer.epilogue.inputs.length > 0 ? emitCoords(c, "o", shape, "e") : [];
        const { lines, exprs } = emitExpressions(layer.epilogue.graph, [layer.epilogue.x], {
          width: 1,
          helpers,
          param,
          index: "o",
          load: epilogueLoad(layer.epilogue.inputs, shape, outCoords, `e${l}_`),
        });
        c.line(...lines, `xv = ${convert(exprs[0] ?? "", { dtype: layer.epilogue.graph.node(layer.epilogue.x).dtype, width: 1 }, t)};`);
      });
      // Invocations past the layer's width hold 0 (never read as a next layer's K).
      b.block(`if (col >= ${n}u)`, (c) => c.line("xv = 0.0;"));
    });
    b.line(`let o = g * ${last}u + col;`);
    if (spec.softmax) {
      b.line(`var av = ${identity("max", "f32")};`);
      b.block(`if (col < ${last}u)`, (c) => c.line("av = xv;"));
      tree(b, "max");
      b.line("let m = sv[0];", "workgroupBarrier();");
      b.line(`av = ${identity("sum", "f32")};`);
      const ex = exp();
      b.block(`if (col < ${last}u)`, (c) => c.line(...ex.lines, `av = ${ex.value};`));
      tree(b, "sum");
      b.line("let s = sv[0];");
      const out = y();
      b.block(`if (col < ${last}u)`, (c) => c.line(...out.lines, `y[o] = ${out.value};`));
    } else {
      b.block(`if (col < ${last}u)`, (c) => c.line("y[o] = xv;"));
    }
  });

  const w = new WgslBuilder();
  let binding = 0;
  w.line(storageBinding(binding++, "lhs", "f32"));
  spec.layers.forEach((_, l) => w.line(storageBinding(binding++, `r${l}`, "f32")));
  spec.layers.forEach((layer, l) => layer.epilogue.inputs.forEach((input, slot) => w.line(storageBinding(binding++, `e${l}_${slot}`, storageElement(input.dtype, 1)))));
  w.line(storageBinding(binding++, "y", "f32"));
  if (params.count > 0) w.line("");
  params.declare(w, binding);
  w.line("");
  if (spec.softmax) w.line(`var<workgroup> sv: array<f32, ${wg}>;`);
  if (spec.layers.length > 1) w.line(`var<workgroup> hv: array<f32, ${wg}>;`);
  w.line("");
  if (!helpers.empty) helpers.emit(w);
  w.line(`@compute @workgroup_size(${wg})`);
  const label = spec.layers.length === 1 && spec.softmax ? "matmul+softmax" : `matmul chain (${spec.layers.length} layers${spec.softmax ? ", softmax" : ""})`;
  return { kernel: { key, source: finishSource(w.toString() + body.toString()), entryPoint: "main", label }, count: dispatch1d(rows, profile, label) };
}
