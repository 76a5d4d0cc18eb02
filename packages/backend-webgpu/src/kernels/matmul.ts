import { UnsupportedError, invariant } from "@weft/environment";
import type { DType } from "@weft/fusion";
import { WgslBuilder } from "../codegen/wgsl/builder.js";
import { emitExpressions, type ExprGraph, type NodeId } from "../codegen/wgsl/expr.js";
import { broadcastStrides, emitCoords, offsetExpr, type StridedLayout } from "../codegen/wgsl/indexing.js";
import { convert } from "../codegen/wgsl/ops.js";
import { Preamble } from "../codegen/wgsl/preamble.js";
import { checkDType, literal, storageElement, wgslScalar, finishSource, type DeviceProfile } from "../codegen/wgsl/types.js";
import type { ElementwiseInput, KernelLaunchPlan } from "./elementwise.js";

/**
 * How a matmul kernel tiles the output.
 * - `simple`: one invocation per output element, no workgroup memory (the reference kernel).
 * - `tiled`: a `wx × wy` workgroup computes a `(wy·rm) × (wx·rn)` tile, staging `tk`-deep slices
 *   of both operands in workgroup memory; each invocation accumulates an `rm × rn` micro-tile.
 */
export type MatmulConfig =
  | { readonly kind: "simple"; readonly wx: number; readonly wy: number }
  | { readonly kind: "tiled"; readonly wx: number; readonly wy: number; readonly rm: number; readonly rn: number; readonly tk: number };

/** The candidate configurations the runtime's autotune chooses from (first = reference). */
export const MATMUL_CONFIGS: readonly MatmulConfig[] = [
  { kind: "simple", wx: 8, wy: 8 },
  { kind: "tiled", wx: 8, wy: 8, rm: 2, rn: 2, tk: 16 },
  { kind: "tiled", wx: 16, wy: 8, rm: 4, rn: 4, tk: 8 },
  { kind: "tiled", wx: 8, wy: 8, rm: 4, rn: 4, tk: 16 },
];

/** Name of a config, for keys and labels. */
export function configName(c: MatmulConfig): string {
  return c.kind === "simple" ? `simple${c.wx}x${c.wy}` : `tiled${c.wx}x${c.wy}r${c.rm}x${c.rn}k${c.tk}`;
}

/** Whether `config` fits the device (invocations and workgroup memory). */
export function configFits(config: MatmulConfig, profile: DeviceProfile): boolean {
  if (config.wx * config.wy > profile.maxInvocations) return false;
  if (config.kind === "simple") return true;
  const bytes = 4 * config.tk * (config.wy * config.rm + config.wx * config.rn);
  return bytes <= profile.maxWorkgroupStorage;
}

/**
 * A batched matmul `out[b, m, n] = Σ_k lhs[b, m, k] · rhs[b, k, n]` with an elementwise epilogue.
 *
 * @remarks
 * Operands are read through their strides (transposed views cost nothing); batch dims broadcast.
 * The epilogue graph reads the product as the value `res` and may read other tensors broadcast to
 * the output shape. **Binding layout:** lhs, rhs, the epilogue's inputs, then its outputs.
 * Every loop runs ≤ `ceil(K / tk)` or ≤ 4096 iterations per level (nested for larger K).
 */
export interface MatmulSpec {
  readonly lhs: StridedLayout;
  readonly rhs: StridedLayout;
  readonly dtype: DType;
  readonly outShape: readonly number[];
  readonly config: MatmulConfig;
  readonly epilogue: {
    readonly graph: ExprGraph;
    readonly inputs: readonly ElementwiseInput[];
    readonly outputs: readonly { readonly node: NodeId; readonly dtype: DType }[];
  };
  readonly label: string;
}

const layoutKey = (l: StridedLayout): string => `${l.shape}:${l.strides}:${l.offset}`;

/** Canonical key of a matmul kernel. */
export function matmulKey(spec: MatmulSpec, profile: DeviceProfile): string {
  const e = spec.epilogue;
  return `matmul:${configName(spec.config)}:${spec.dtype}(${layoutKey(spec.lhs)}|${layoutKey(spec.rhs)})[${spec.outShape}]{${e.graph.key()}}(${e.inputs.map((i) => `${i.dtype}:${layoutKey(i.layout)}`).join("|")})->(${e.outputs.map((o) => `${o.node}:${o.dtype}`).join("|")})#${profile.key}`;
}

/** Generates the matmul kernel of `spec`. */
export function matmulKernel(spec: MatmulSpec, profile: DeviceProfile, key = matmulKey(spec, profile)): KernelLaunchPlan {
  const rank = spec.outShape.length;
  const M = spec.outShape[rank - 2] ?? 1;
  const N = spec.outShape[rank - 1] ?? 1;
  const K = spec.lhs.shape[spec.lhs.shape.length - 1] ?? 1;
  const batchShape = spec.outShape.slice(0, rank - 2);
  const batches = batchShape.reduce((a, b) => a * b, 1);
  const cfg = spec.config;
  invariant(configFits(cfg, profile), () => `matmul config ${configName(cfg)} does not fit the device`);
  const tm = cfg.kind === "simple" ? cfg.wy : cfg.wy * cfg.rm;
  const tn = cfg.kind === "simple" ? cfg.wx : cfg.wx * cfg.rn;
  const groups: [number, number, number] = [Math.ceil(N / tn), Math.ceil(M / tm), batches];
  if (groups.some((g) => g > profile.maxWorkgroupsPerDimension)) {
    throw new UnsupportedError(`matmul of [${spec.outShape}]`, `needs ${groups} workgroups, above ${profile.maxWorkgroupsPerDimension} per dimension; split the batch`);
  }
  [spec.dtype, ...spec.epilogue.outputs.map((o) => o.dtype)].forEach((d) => checkDType(d, profile, spec.label));
  const acc = spec.dtype === "f16" ? "f32" : spec.dtype;
  const accT = { dtype: acc, width: 1 as const };
  const dT = { dtype: spec.dtype, width: 1 as const };
  const helpers = new Preamble();
  const w = new WgslBuilder();
  if (spec.dtype === "f16" || spec.epilogue.outputs.some((o) => o.dtype === "f16")) w.line("enable f16;", "");
  const el = storageElement(spec.dtype, 1);
  w.line(`@group(0) @binding(0) var<storage, read> lhs: array<${el}>;`, `@group(0) @binding(1) var<storage, read> rhs: array<${el}>;`);
  let binding = 2;
  spec.epilogue.inputs.forEach((input, slot) => w.line(`@group(0) @binding(${binding++}) var<storage, read> ep${slot}: array<${storageElement(input.dtype, 1)}>;`));
  spec.epilogue.outputs.forEach((o, k) => w.line(`@group(0) @binding(${binding++}) var<storage, read_write> out${k}: array<${storageElement(o.dtype, 1)}>;`));
  if (cfg.kind === "tiled") w.line("", `var<workgroup> ta: array<${wgslScalar(acc)}, ${tm * cfg.tk}>;`, `var<workgroup> tb: array<${wgslScalar(acc)}, ${cfg.tk * tn}>;`);
  w.line("");

  const batchStrides = (l: StridedLayout): number[] => {
    const lb = { shape: l.shape.slice(0, -2), strides: l.strides.slice(0, -2), offset: 0 };
    return broadcastStrides(lb, batchShape);
  };
  const lr = spec.lhs.strides.length;
  const sam = spec.lhs.strides[lr - 2] ?? 0;
  const sak = spec.lhs.strides[lr - 1] ?? 0;
  const rr = spec.rhs.strides.length;
  const sbk = spec.rhs.strides[rr - 2] ?? 0;
  const sbn = spec.rhs.strides[rr - 1] ?? 0;
  const aAt = (m: string, k: string): string => `lhs[aBase + ${m} * ${sam}u + ${k} * ${sak}u]`;
  const bAt = (k: string, n: string): string => `rhs[bBase + ${k} * ${sbk}u + ${n} * ${sbn}u]`;
  const load = (x: string): string => convert(x, dT, accT);

  const body = new WgslBuilder();
  body.block("fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>, @builtin(local_invocation_index) lid: u32)", (b) => {
    b.line("let batch = wid.z;");
    const bc = emitCoords(b, "batch", batchShape, "bt");
    b.line(`let aBase = ${offsetExpr(bc, batchStrides(spec.lhs), spec.lhs.offset)};`, `let bBase = ${offsetExpr(bc, batchStrides(spec.rhs), spec.rhs.offset)};`);
    const zero = literal(0, accT);
    const rm = cfg.kind === "simple" ? 1 : cfg.rm;
    const rn = cfg.kind === "simple" ? 1 : cfg.rn;
    b.line(`let row0 = wid.y * ${tm}u + lid3.y * ${rm}u;`, `let col0 = wid.x * ${tn}u + lid3.x * ${rn}u;`);
    b.line(`var acc: array<${wgslScalar(acc)}, ${rm * rn}>;`);
    b.block(`for (var t = 0u; t < ${rm * rn}u; t = t + 1u)`, (l) => l.line(`acc[t] = ${zero};`));
    if (cfg.kind === "simple") {
      b.block(`if (row0 < ${M}u && col0 < ${N}u)`, (c) => {
        c.block(`for (var k0 = 0u; k0 < ${K}u; k0 = k0 + 4096u)`, (l) => {
          l.block(`for (var k = k0; k < min(k0 + 4096u, ${K}u); k = k + 1u)`, (i) => i.line(`acc[0] = acc[0] + ${load(aAt("row0", "k"))} * ${load(bAt("k", "col0"))};`));
        });
      });
    } else {
      const tk = cfg.tk;
      const threads = cfg.wx * cfg.wy;
      b.block(`for (var t = 0u; t < ${Math.ceil(K / tk)}u; t = t + 1u)`, (l) => {
        l.block(`for (var e = lid; e < ${tm * tk}u; e = e + ${threads}u)`, (f) => {
          f.line(`let gr = wid.y * ${tm}u + e / ${tk}u;`, `let gk = t * ${tk}u + e % ${tk}u;`);
          f.line(`var v = ${zero};`);
          f.block(`if (gr < ${M}u && gk < ${K}u)`, (g) => g.line(`v = ${load(aAt("gr", "gk"))};`));
          f.line("ta[e] = v;");
        });
        l.block(`for (var e = lid; e < ${tk * tn}u; e = e + ${threads}u)`, (f) => {
          f.line(`let gk = t * ${tk}u + e / ${tn}u;`, `let gc = wid.x * ${tn}u + e % ${tn}u;`);
          f.line(`var v = ${zero};`);
          f.block(`if (gk < ${K}u && gc < ${N}u)`, (g) => g.line(`v = ${load(bAt("gk", "gc"))};`));
          f.line("tb[e] = v;");
        });
        l.line("workgroupBarrier();");
        l.block(`for (var kk = 0u; kk < ${tk}u; kk = kk + 1u)`, (f) => {
          f.block(`for (var i = 0u; i < ${rm}u; i = i + 1u)`, (g) => {
            g.line(`let a = ta[(lid3.y * ${rm}u + i) * ${tk}u + kk];`);
            g.block(`for (var j = 0u; j < ${rn}u; j = j + 1u)`, (h) => h.line(`acc[i * ${rn}u + j] = acc[i * ${rn}u + j] + a * tb[kk * ${tn}u + lid3.x * ${rn}u + j];`));
          });
        });
        l.line("workgroupBarrier();");
      });
    }
    b.block(`for (var i = 0u; i < ${rm}u; i = i + 1u)`, (f) => {
      f.block(`for (var j = 0u; j < ${rn}u; j = j + 1u)`, (g) => {
        g.line("let row = row0 + i;", "let col = col0 + j;");
        g.block(`if (row < ${M}u && col < ${N}u)`, (h) => {
          h.line(`let o = batch * ${M * N}u + row * ${N}u + col;`);
          h.line(`let res = ${convert(`acc[i * ${rn}u + j]`, accT, dT)};`);
          const outCoords = spec.epilogue.inputs.length > 0 ? emitCoords(h, "o", spec.outShape, "e") : [];
          const { lines, exprs } = emitExpressions(spec.epilogue.graph, spec.epilogue.outputs.map((o) => o.node), {
            width: 1,
            helpers,
            index: "o",
            load: (slot) => {
              const input = spec.epilogue.inputs[slot];
              invariant(input !== undefined, () => `epilogue input slot ${slot} is not bound`);
              const raw = `ep${slot}[${offsetExpr(outCoords, broadcastStrides(input.layout, spec.outShape), input.layout.offset)}]`;
              return input.dtype === "bool" ? `(${raw} != 0u)` : raw;
            },
          });
          h.line(...lines);
          spec.epilogue.outputs.forEach((o, k) => {
            let v = convert(exprs[k] ?? "", { dtype: spec.epilogue.graph.node(o.node).dtype, width: 1 }, { dtype: o.dtype, width: 1 });
            if (o.dtype === "bool") v = convert(v, { dtype: "bool", width: 1 }, { dtype: "u32", width: 1 });
            h.line(`out${k}[o] = ${v};`);
          });
        });
      });
    });
  });
  if (!helpers.empty) helpers.emit(w);
  w.line(`@compute @workgroup_size(${cfg.wx}, ${cfg.wy})`);
  return { kernel: { key, source: finishSource(w.toString() + body.toString()), entryPoint: "main", label: spec.label }, count: groups };
}
