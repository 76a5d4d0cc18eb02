import { UnsupportedError, invariant } from "@weft/environment";
import type { DType } from "@weft/fusion";
import { elementCount } from "@weft/fusion";
import { WgslBuilder } from "../codegen/wgsl/builder.js";
import { emitExpressions, type ExprGraph, type NodeId } from "../codegen/wgsl/expr.js";
import { broadcastStrides, emitCoords, offsetExpr, type StridedLayout } from "../codegen/wgsl/indexing.js";
import { convert } from "../codegen/wgsl/ops.js";
import { encodeParams, KernelParams } from "../codegen/wgsl/params.js";
import { Preamble } from "../codegen/wgsl/preamble.js";
import { checkDType, literal, storageElement, wgslScalar, finishSource, type DeviceProfile, type ValueType } from "../codegen/wgsl/types.js";
import { storageBinding } from "../codegen/wgsl/bindings.js";
import type { ElementwiseInput, KernelLaunchPlan } from "./elementwise.js";
import { dispatch1d, ENTRY_PARAMS, LINEAR_GROUP } from "./dispatch.js";
import { kernelBinding, type KernelBinding, type MemoryHandle } from "@weft/server";
import { emitVec4Tiled, operandAxes, vec4Access, vec4OperandElement, vec4Shared, type Vec4Config } from "./matmul-vec4.js";

/**
 * How a matmul kernel tiles the output.
 * - `simple`: one invocation per output element, no workgroup memory (the reference kernel).
 * - `tiled`: a `wx × wy` workgroup computes a `(wy·rm) × (wx·rn)` tile, staging `tk`-deep slices
 *   of both operands in workgroup memory; each invocation accumulates an `rm × rn` micro-tile.
 */
export type MatmulConfig =
  | { readonly kind: "simple"; readonly wx: number; readonly wy: number }
  | { readonly kind: "tiled"; readonly wx: number; readonly wy: number; readonly rm: number; readonly rn: number; readonly tk: number }
  /**
   * The high-throughput kernel: a `wx × wy` workgroup computes a `(wy·rm) × (wx·rn)` tile; `rm` and
   * `rn` are multiples of 4. Each `tk`-deep K slice of both operands is staged in workgroup memory
   * as `vec4`s (A transposed), each invocation keeps an `rm × rn` register block of `vec4`
   * accumulators and, per `k`, loads `rm/4 + rn/4` `vec4`s and issues `rm·rn/4` vec4 FMAs. The
   * register block's rows and columns are interleaved in groups of 4 across the workgroup
   * (invocation `x` owns columns `q·4·wx + 4x + c`), so neighbouring invocations read neighbouring
   * `vec4`s of workgroup memory (no bank conflicts) and global loads are coalesced along each
   * operand's contiguous dimension. Bounds checks are emitted only for dimensions a tile does not
   * divide (shapes are baked into the kernel).
   */
  | { readonly kind: "register"; readonly wx: number; readonly wy: number; readonly rm: number; readonly rn: number; readonly tk: number }
  /**
   * The fastest kernel on desktop GPUs: `vec4` global loads along each operand's contiguous
   * dimension, K-major `vec4` workgroup tiles, an `rm × rn` block of `vec4` accumulators per
   * invocation and register prefetch of the next K step (see `Vec4Config` in `matmul-vec4.ts`).
   */
  | Vec4Config;

/**
 * The candidate configurations the runtime's autotune chooses from. The first is the reference
 * every other is validated against; within each kind tiles grow along the list, and the heuristic
 * (`chooseMatmulConfig`) prefers the `vec4` kind, taking the largest of its tiles that still gives
 * the GPU enough workgroups.
 */
export const MATMUL_CONFIGS: readonly MatmulConfig[] = [
  { kind: "simple", wx: 8, wy: 8 },
  { kind: "tiled", wx: 8, wy: 8, rm: 2, rn: 2, tk: 16 },
  { kind: "tiled", wx: 8, wy: 8, rm: 4, rn: 4, tk: 16 },
  { kind: "register", wx: 8, wy: 8, rm: 4, rn: 4, tk: 16 },
  { kind: "register", wx: 16, wy: 8, rm: 4, rn: 4, tk: 16 },
  { kind: "register", wx: 16, wy: 16, rm: 4, rn: 4, tk: 16 },
  { kind: "register", wx: 16, wy: 16, rm: 8, rn: 4, tk: 16 },
  { kind: "register", wx: 16, wy: 16, rm: 8, rn: 8, tk: 8 },
  // The vec4 kernels, tiles growing (the heuristic prefers the largest that still fills the GPU).
  { kind: "vec4", wx: 8, wy: 8, rm: 4, rn: 4, tk: 16 },
  { kind: "vec4", wx: 16, wy: 8, rm: 4, rn: 4, tk: 16 },
  { kind: "vec4", wx: 16, wy: 8, rm: 8, rn: 4, tk: 16 },
  { kind: "vec4", wx: 16, wy: 16, rm: 4, rn: 4, tk: 16 },
  { kind: "vec4", wx: 16, wy: 8, rm: 8, rn: 8, tk: 16 },
  { kind: "vec4", wx: 16, wy: 16, rm: 8, rn: 4, tk: 16 },
  { kind: "vec4", wx: 16, wy: 16, rm: 8, rn: 8, tk: 32 },
  { kind: "vec4", wx: 16, wy: 16, rm: 8, rn: 8, tk: 16 },
  // Split-K: the largest tile with its K steps shared by 2, 4 or 8 workgroups, for products whose
  // tiles alone leave a large GPU idle (the heuristic takes them only then; the tuner measures all).
  { kind: "vec4", wx: 16, wy: 16, rm: 8, rn: 8, tk: 16, splitK: 2 },
  { kind: "vec4", wx: 16, wy: 16, rm: 8, rn: 8, tk: 16, splitK: 4 },
  { kind: "vec4", wx: 16, wy: 16, rm: 8, rn: 8, tk: 16, splitK: 8 },
];

/** Name of a config, for keys and labels. */
export function configName(c: MatmulConfig): string {
  if (c.kind === "simple") return `simple${c.wx}x${c.wy}`;
  const prefix = c.kind === "tiled" ? "tiled" : c.kind === "register" ? "reg" : "vec4";
  const split = c.kind === "vec4" && (c.splitK ?? 1) > 1 ? `s${c.splitK}` : "";
  return `${prefix}${c.wx}x${c.wy}r${c.rm}x${c.rn}k${c.tk}${split}`;
}

/** The output tile `[rows, cols]` one workgroup of `config` computes. */
export function configTile(c: MatmulConfig): [number, number] {
  return c.kind === "simple" ? [c.wy, c.wx] : [c.wy * c.rm, c.wx * c.rn];
}

/** Whether `config` fits the device (invocations and workgroup memory). */
export function configFits(config: MatmulConfig, profile: DeviceProfile): boolean {
  if (config.wx * config.wy > profile.maxInvocations) return false;
  if (config.kind === "simple") return true;
  if (config.kind === "register" && (config.rm % 4 !== 0 || config.rn % 4 !== 0)) return false;
  if (config.kind === "vec4" && (config.rm % 4 !== 0 || config.rn % 4 !== 0 || config.tk % 4 !== 0)) return false;
  const bytes = 4 * config.tk * (config.wy * config.rm + config.wx * config.rn);
  return bytes <= profile.maxWorkgroupStorage;
}

/**
 * A batched matmul `out[b, m, n] = Σ_k lhs[b, m, k] · rhs[b, k, n]` with an elementwise epilogue.
 *
 * @remarks
 * Operands are read through their strides (transposed views cost nothing); batch dims broadcast.
 * The epilogue graph reads the product as the value `res` and may read other tensors broadcast to
 * the output shape. **Binding layout:** lhs, rhs, the epilogue's inputs, then its outputs, then —
 * when the epilogue has parameters — the uniform block (`matmulUniforms`).
 * Every loop runs fewer than 65,535 iterations per invocation (Mesa's silent cap; see the kernels).
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

/** The uniform bytes of the epilogue's parameters for one launch (`undefined` when it has none). */
export function matmulUniforms(spec: MatmulSpec): Uint8Array | undefined {
  return encodeParams(spec.epilogue.graph.params);
}

/** Canonical key of a matmul kernel (structure only: the epilogue's values are uniforms). */
export function matmulKey(spec: MatmulSpec, profile: DeviceProfile): string {
  const e = spec.epilogue;
  return `matmul:${configName(spec.config)}:${spec.dtype}(${layoutKey(spec.lhs)}|${layoutKey(spec.rhs)})[${spec.outShape}]{${e.graph.key()}}(${e.inputs.map((i) => `${i.dtype}:${layoutKey(i.layout)}`).join("|")})->(${e.outputs.map((o) => `${o.node}:${o.dtype}`).join("|")})#${profile.key}`;
}

/**
 * The sizes and strides of a product `lhs` (`[..., M, K]`) · `rhs` (`[..., K, N]`) into
 * `outShape` (`[...batch, M, N]`): each operand's batch strides broadcast to the output's batch
 * shape, and the element strides along `M`, `K` (`sam`, `sak`) and `K`, `N` (`sbk`, `sbn`).
 */
export function productLayout(lhs: StridedLayout, rhs: StridedLayout, outShape: readonly number[]): {
  M: number;
  N: number;
  K: number;
  batchShape: number[];
  batches: number;
  lhsBatch: number[];
  rhsBatch: number[];
  sam: number;
  sak: number;
  sbk: number;
  sbn: number;
} {
  const rank = outShape.length;
  const batchShape = outShape.slice(0, rank - 2);
  const batchStrides = (l: StridedLayout): number[] => broadcastStrides({ shape: l.shape.slice(0, -2), strides: l.strides.slice(0, -2), offset: 0 }, batchShape);
  const lr = lhs.strides.length;
  const rr = rhs.strides.length;
  return {
    M: outShape[rank - 2] ?? 1,
    N: outShape[rank - 1] ?? 1,
    K: lhs.shape[lhs.shape.length - 1] ?? 1,
    batchShape,
    batches: batchShape.reduce((a, b) => a * b, 1),
    lhsBatch: batchStrides(lhs),
    rhsBatch: batchStrides(rhs),
    sam: lhs.strides[lr - 2] ?? 0,
    sak: lhs.strides[lr - 1] ?? 0,
    sbk: rhs.strides[rr - 2] ?? 0,
    sbn: rhs.strides[rr - 1] ?? 0,
  };
}

/** Generates the matmul kernel of `spec`. */
export function matmulKernel(spec: MatmulSpec, profile: DeviceProfile, key = matmulKey(spec, profile)): KernelLaunchPlan {
  const { M, N, K, batchShape, batches, lhsBatch, rhsBatch, sam, sak, sbk, sbn } = productLayout(spec.lhs, spec.rhs, spec.outShape);
  const cfg = spec.config;
  invariant(configFits(cfg, profile), () => `matmul config ${configName(cfg)} does not fit the device`);
  const tm = cfg.kind === "simple" ? cfg.wy : cfg.wy * cfg.rm;
  const tn = cfg.kind === "simple" ? cfg.wx : cfg.wx * cfg.rn;
  const split = splitOf(cfg);
  const steps = cfg.kind === "vec4" ? Math.ceil(K / cfg.tk) : 0;
  if (!splitApplies(cfg, K)) {
    throw new UnsupportedError(`matmul with K = ${K} in config ${configName(cfg)}`, `a K of ${steps} steps split ${split} ways; use a config without split-K (chooseMatmulConfig picks one)`);
  }
  const groups: [number, number, number] = [Math.ceil(N / tn), Math.ceil(M / tm), batches * split];
  if (groups.some((g) => g > profile.maxWorkgroupsPerDimension)) {
    throw new UnsupportedError(`matmul of [${spec.outShape}]`, `needs ${groups} workgroups, above ${profile.maxWorkgroupsPerDimension} per dimension; split the batch`);
  }
  [spec.dtype, ...spec.epilogue.outputs.map((o) => o.dtype)].forEach((d) => checkDType(d, profile, spec.label));
  if ((cfg.kind === "tiled" || cfg.kind === "register") && K >= 65_535) {
    // Their per-k loops sit inside the K-step loop, and Mesa's GLES silently stops a loop after
    // 65,535 iterations per invocation counted across enclosing loops (a wrong sum, no error).
    throw new UnsupportedError(`matmul with K = ${K} in config ${configName(cfg)}`, "K of 65,535 or more; use a vec4 or the simple config (chooseMatmulConfig picks one)");
  }
  const acc = spec.dtype === "f16" ? "f32" : spec.dtype;
  const accT = { dtype: acc, width: 1 as const };
  const dT = { dtype: spec.dtype, width: 1 as const };
  const helpers = new Preamble();
  const w = new WgslBuilder();
  if (spec.dtype === "f16" || spec.epilogue.outputs.some((o) => o.dtype === "f16")) w.line("enable f16;", "");
  const vec4Axes = cfg.kind === "vec4" ? { lhs: operandAxes(spec.lhs, "lhs", lhsBatch), rhs: operandAxes(spec.rhs, "rhs", rhsBatch) } : undefined;
  const el = storageElement(spec.dtype, 1);
  const lhsEl = vec4Axes === undefined ? el : vec4OperandElement(spec.dtype, vec4Access(vec4Axes.lhs));
  const rhsEl = vec4Axes === undefined ? el : vec4OperandElement(spec.dtype, vec4Access(vec4Axes.rhs));
  w.line(storageBinding(0, "lhs", lhsEl), storageBinding(1, "rhs", rhsEl));
  const params = new KernelParams();
  const param = params.add(spec.epilogue.graph);
  if (split > 1) w.line(storageBinding(2, "partial", wgslScalar(acc)));
  else {
    let binding = 2;
    spec.epilogue.inputs.forEach((input, slot) => w.line(storageBinding(binding++, `ep${slot}`, storageElement(input.dtype, 1))));
    spec.epilogue.outputs.forEach((o, k) => w.line(storageBinding(binding++, `out${k}`, storageElement(o.dtype, 1))));
    if (params.count > 0) w.line("");
    params.declare(w, binding);
  }
  if (cfg.kind === "tiled") w.line("", `var<workgroup> ta: array<${wgslScalar(acc)}, ${tm * cfg.tk}>;`, `var<workgroup> tb: array<${wgslScalar(acc)}, ${cfg.tk * tn}>;`);
  if (cfg.kind === "register") w.line("", `var<workgroup> ta: array<vec4<${wgslScalar(acc)}>, ${(tm * cfg.tk) / 4}>;`, `var<workgroup> tb: array<vec4<${wgslScalar(acc)}>, ${(cfg.tk * tn) / 4}>;`);
  if (cfg.kind === "vec4") w.line("", ...vec4Shared(cfg, acc));
  w.line("");

  const aAt = (m: string, k: string): string => `lhs[aBase + ${m} * ${sam}u + ${k} * ${sak}u]`;
  const bAt = (k: string, n: string): string => `rhs[bBase + ${k} * ${sbk}u + ${n} * ${sbn}u]`;
  const load = (x: string): string => convert(x, dT, accT);

  const store = split > 1 ? partialStore(M, N, batches) : epilogueStore(spec, helpers, param, M, N, acc);

  const body = new WgslBuilder();
  body.block("fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>, @builtin(local_invocation_index) lid: u32)", (b) => {
    if (split > 1) {
      // Split `s` runs K steps [s·steps/split, (s+1)·steps/split): every share holds at least one.
      b.line(`let batch = wid.z / ${split}u;`, `let split = wid.z % ${split}u;`);
      b.line(`let kt0 = (split * ${steps}u) / ${split}u;`, `let kt1 = ((split + 1u) * ${steps}u) / ${split}u;`);
    } else b.line("let batch = wid.z;");
    const bc = emitCoords(b, "batch", batchShape, "bt");
    b.line(`let aBase = ${offsetExpr(bc, lhsBatch, spec.lhs.offset)};`, `let bBase = ${offsetExpr(bc, rhsBatch, spec.rhs.offset)};`);
    const zero = literal(0, accT);
    if (cfg.kind === "register") {
      emitRegisterTiled(b, cfg, { M, N, K, tm, tn, acc, sam, sak, sbk, sbn, aAt, bAt, load, store });
      return;
    }
    if (cfg.kind === "vec4") {
      invariant(vec4Axes !== undefined, "vec4 axes are computed for vec4 configs");
      emitVec4Tiled(b, cfg, { M, N, K, dtype: spec.dtype, acc, lhs: vec4Axes.lhs, rhs: vec4Axes.rhs, store, split: split > 1 });
      return;
    }
    const rm = cfg.kind === "simple" ? 1 : cfg.rm;
    const rn = cfg.kind === "simple" ? 1 : cfg.rn;
    b.line(`let row0 = wid.y * ${tm}u + lid3.y * ${rm}u;`, `let col0 = wid.x * ${tn}u + lid3.x * ${rn}u;`);
    b.line(`var acc: array<${wgslScalar(acc)}, ${rm * rn}>;`);
    b.block(`for (var t = 0u; t < ${rm * rn}u; t = t + 1u)`, (l) => l.line(`acc[t] = ${zero};`));
    if (cfg.kind === "simple") {
      b.block(`if (row0 < ${M}u && col0 < ${N}u)`, (c) => {
        // Mesa's GLES stops a loop at 65,535 iterations per invocation, counted across enclosing
        // loops: a longer K runs `u` unrolled terms per iteration instead of a nest.
        const u = Math.ceil(K / 65_534);
        c.block(`for (var k0 = 0u; k0 < ${K}u; k0 = k0 + ${u}u)`, (l) => {
          for (let j = 0; j < u; j++) {
            const k = j === 0 ? "k0" : `(k0 + ${j}u)`;
            const term = `acc[0] = acc[0] + ${load(aAt("row0", k))} * ${load(bAt(k, "col0"))};`;
            l.line(j > 0 && K % u !== 0 ? `if (${k} < ${K}u) { ${term} }` : term);
          }
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
        store(g, "row", "col", `acc[i * ${rn}u + j]`, true);
      });
    });
  });
  if (!helpers.empty) helpers.emit(w);
  w.line(`@compute @workgroup_size(${cfg.wx}, ${cfg.wy})`);
  return { kernel: { key, source: finishSource(w.toString() + body.toString()), entryPoint: "main", label: spec.label }, count: groups };
}

/** Canonical key of the kernel that combines `spec`'s split-K partial products (see {@link matmulCombineKernel}). */
export function matmulCombineKey(spec: MatmulSpec, profile: DeviceProfile): string {
  return `matmul-combine:${matmulKey(spec, profile)}`;
}

/**
 * The second pass of a split-K product (`splitOf(spec.config) > 1`): one invocation per output
 * element adds its partial products in split order (`partial[0] + partial[1] + …`, the same order
 * for every element and every run) and applies the epilogue.
 *
 * @remarks **Binding layout:** the partial products (`[split, batch, M, N]`, accumulator dtype),
 * the epilogue's inputs, its outputs, then — when the epilogue has parameters — the uniform block
 * (`matmulUniforms`).
 */
export function matmulCombineKernel(spec: MatmulSpec, profile: DeviceProfile, key = matmulCombineKey(spec, profile)): KernelLaunchPlan {
  const split = splitOf(spec.config);
  invariant(split > 1, () => `matmul config ${configName(spec.config)} has no split-K to combine`);
  const rank = spec.outShape.length;
  const M = spec.outShape[rank - 2] ?? 1;
  const N = spec.outShape[rank - 1] ?? 1;
  const total = spec.outShape.reduce((a, b) => a * b, 1);
  const acc = spec.dtype === "f16" ? "f32" : spec.dtype;
  const helpers = new Preamble();
  const w = new WgslBuilder();
  if (spec.dtype === "f16" || spec.epilogue.outputs.some((o) => o.dtype === "f16")) w.line("enable f16;", "");
  w.line(storageBinding(0, "partial", wgslScalar(acc)));
  let binding = 1;
  spec.epilogue.inputs.forEach((input, slot) => w.line(storageBinding(binding++, `ep${slot}`, storageElement(input.dtype, 1))));
  spec.epilogue.outputs.forEach((o, k) => w.line(storageBinding(binding++, `out${k}`, storageElement(o.dtype, 1))));
  const params = new KernelParams();
  const param = params.add(spec.epilogue.graph);
  if (params.count > 0) w.line("");
  params.declare(w, binding);
  w.line("");
  const store = epilogueStore(spec, helpers, param, M, N, acc);
  const wg = profile.workgroupSize;
  const body = new WgslBuilder();
  body.block(`fn main(${ENTRY_PARAMS})`, (b) => {
    b.line(`let i = ${LINEAR_GROUP} * ${wg}u + lid;`, `if (i >= ${total}u) { return; }`);
    b.line(`let batch = i / ${M * N}u;`, `let row = (i / ${N}u) % ${M}u;`, `let col = i % ${N}u;`);
    b.line("var sum = partial[i];");
    for (let k = 1; k < split; k++) b.line(`sum = sum + partial[${k * total}u + i];`);
    store(b, "row", "col", "sum", false);
  });
  if (!helpers.empty) helpers.emit(w);
  w.line(`@compute @workgroup_size(${wg})`);
  return { kernel: { key, source: finishSource(w.toString() + body.toString()), entryPoint: "main", label: `${spec.label} (split-K sum)` }, count: dispatch1d(Math.ceil(total / wg), profile, spec.label) };
}

/** How {@link launchMatmul} runs kernels and makes its temporary. */
export interface MatmulRunner {
  /** The kernel for `key` (the runtime's cache), built by `build` on a miss. */
  plan(key: string, build: () => KernelLaunchPlan): KernelLaunchPlan;
  /** Launches `plan` with `bindings`; `uniforms` are the epilogue's parameters (undefined: none). */
  launch(plan: KernelLaunchPlan, bindings: readonly KernelBinding[], uniforms: Uint8Array | undefined): void;
  /** A fresh allocation of `bytes`, released by {@link launchMatmul} once its passes are launched. */
  empty(bytes: number): MemoryHandle;
}

/**
 * The kernel plans {@link launchMatmul} launches for `spec`, in launch order: the product's kernel,
 * then — with split-K — the kernel that adds the partials and runs the epilogue. From `plan` (the
 * runtime's plan cache), so asking costs a cache lookup once generated.
 */
export function matmulPlans(spec: MatmulSpec, profile: DeviceProfile, plan: MatmulRunner["plan"]): KernelLaunchPlan[] {
  const key = matmulKey(spec, profile);
  const main = plan(key, () => matmulKernel(spec, profile, key));
  if (splitOf(spec.config) === 1) return [main];
  const combineKey = matmulCombineKey(spec, profile);
  return [main, plan(combineKey, () => matmulCombineKernel(spec, profile, combineKey))];
}

/**
 * Launches the product `spec`: one kernel, or for a split-K config the partial products into a
 * temporary and the kernel that combines them. `inputs` are the epilogue's inputs and `outputs` its
 * outputs, as bindings (the binding layout of {@link MatmulSpec}). `plans` are `spec`'s
 * ({@link matmulPlans}), passed by a caller that already looked them up.
 */
export function launchMatmul(
  spec: MatmulSpec,
  profile: DeviceProfile,
  run: MatmulRunner,
  lhs: KernelBinding,
  rhs: KernelBinding,
  inputs: readonly KernelBinding[],
  outputs: readonly KernelBinding[],
  plans: readonly KernelLaunchPlan[] = matmulPlans(spec, profile, (key, build) => run.plan(key, build)),
): void {
  launchMatmulPlans(plans, splitOf(spec.config), elementCount(spec.outShape), run, lhs, rhs, inputs, outputs, matmulUniforms(spec));
}

/**
 * The launches of {@link launchMatmul} from what they need only: the plans (`[main]`, or
 * `[main, combine]` for a split-K config of factor `split`), the output's element count `total`
 * and the epilogue's encoded parameters. What the matmul launch cache replays.
 */
export function launchMatmulPlans(
  plans: readonly KernelLaunchPlan[],
  split: number,
  total: number,
  run: MatmulRunner,
  lhs: KernelBinding,
  rhs: KernelBinding,
  inputs: readonly KernelBinding[],
  outputs: readonly KernelBinding[],
  uniforms: Uint8Array | undefined,
): void {
  const [main, combine] = plans;
  invariant(main !== undefined, "a product has a main kernel");
  if (combine === undefined) {
    // `Array.of`, not literals: per-launch arrays stay off tracked allocation sites (docs/performance.md#allocation-sites).
    run.launch(main, Array.of(lhs, rhs, ...inputs, ...outputs), uniforms);
    return;
  }
  const partial = run.empty(split * total * 4);
  try {
    run.launch(main, Array.of(lhs, rhs, kernelBinding(partial.binding(), "write")), undefined);
    run.launch(combine, Array.of(kernelBinding(partial.binding(), "read"), ...inputs, ...outputs), uniforms);
  } finally {
    partial.release();
  }
}

/**
 * The WGSL read of epilogue input `slot` (binding `<name><slot>`, `ep<slot>` by default) at the
 * output element whose coordinates are `outCoords`, broadcast from the input's layout to
 * `outShape` (a `bool` as `!= 0u`): what an epilogue graph's loads are, in the matmul kernels and
 * the matmul chain's (one name per layer).
 */
export function epilogueLoad(inputs: readonly ElementwiseInput[], outShape: readonly number[], outCoords: readonly string[], name = "ep"): (slot: number) => string {
  return (slot) => {
    const input = inputs[slot];
    invariant(input !== undefined, () => `epilogue input slot ${slot} is not bound`);
    const raw = `${name}${slot}[${offsetExpr(outCoords, broadcastStrides(input.layout, outShape), input.layout.offset)}]`;
    return input.dtype === "bool" ? `(${raw} != 0u)` : raw;
  };
}

/** A writer of one output element's epilogue: `value` (acc type) is the product at (`row`, `col`) of `batch`. */
type ElementStore = (h: WgslBuilder, row: string, col: string, value: string, checked: boolean) => void;

/**
 * The epilogue store of `spec`: the product as `res` (a zero sum as +0), the epilogue graph over
 * its inputs broadcast to the output, every output written at the element. Reads the WGSL name
 * `batch`.
 */
function epilogueStore(spec: MatmulSpec, helpers: Preamble, param: (slot: number, t: ValueType) => string, M: number, N: number, acc: DType): ElementStore {
  const accT = { dtype: acc, width: 1 as const };
  const dT = { dtype: spec.dtype, width: 1 as const };
  return (h, row, col, value, checked) => {
    const emit = (x: WgslBuilder): void => {
      x.line(`let o = batch * ${M * N}u + ${row} * ${N}u + ${col};`);
      // A zero product sum is +0 whatever the compiler folded (docs/semantics.md, "Signed zeros").
      x.line(`let res = ${convert(acc === "f32" ? `${helpers.use("plusZero", accT)}(${value})` : value, accT, dT)};`);
      const outCoords = spec.epilogue.inputs.length > 0 ? emitCoords(x, "o", spec.outShape, "e") : [];
      const { lines, exprs } = emitExpressions(spec.epilogue.graph, spec.epilogue.outputs.map((o) => o.node), {
        width: 1,
        helpers,
        param,
        index: "o",
        load: epilogueLoad(spec.epilogue.inputs, spec.outShape, outCoords),
      });
      x.line(...lines);
      spec.epilogue.outputs.forEach((o, k) => {
        let v = convert(exprs[k] ?? "", { dtype: spec.epilogue.graph.node(o.node).dtype, width: 1 }, { dtype: o.dtype, width: 1 });
        if (o.dtype === "bool") v = convert(v, { dtype: "bool", width: 1 }, { dtype: "u32", width: 1 });
        x.line(`out${k}[o] = ${v};`);
      });
    };
    if (checked) h.block(`if (${row} < ${M}u && ${col} < ${N}u)`, emit);
    else h.block("", emit);
  };
}

/**
 * The store of a split-K partial product: element (`row`, `col`) of `batch` into the binding
 * `partial` at `[split, batch, row, col]` (reads the WGSL names `batch` and `split`).
 */
function partialStore(M: number, N: number, batches: number): ElementStore {
  return (h, row, col, value, checked) => {
    const line = `partial[split * ${batches * M * N}u + batch * ${M * N}u + ${row} * ${N}u + ${col}] = ${value};`;
    h.line(checked ? `if (${row} < ${M}u && ${col} < ${N}u) { ${line} }` : line);
  };
}

/** The split-K factor of a config (1: no split). */
export function splitOf(config: MatmulConfig): number {
  return config.kind === "vec4" ? Math.max(1, config.splitK ?? 1) : 1;
}

/**
 * Whether `config` can run a product with inner extent `k`: a split-K config needs at least one K
 * step per share and shares under Mesa's loop cap; every other config runs any `k` (the kernel
 * itself refuses what a tiled config cannot loop over).
 */
export function splitApplies(config: MatmulConfig, k: number): boolean {
  const split = splitOf(config);
  if (split === 1 || config.kind !== "vec4") return true;
  const steps = Math.ceil(k / config.tk);
  return steps >= split && Math.ceil(steps / split) < 65_535;
}

/** What {@link emitRegisterTiled} needs from {@link matmulKernel}. */
interface RegisterTiledContext {
  readonly M: number;
  readonly N: number;
  readonly K: number;
  /** Output tile rows/cols of one workgroup. */
  readonly tm: number;
  readonly tn: number;
  /** Accumulator dtype. */
  readonly acc: DType;
  readonly sam: number;
  readonly sak: number;
  readonly sbk: number;
  readonly sbn: number;
  readonly aAt: (m: string, k: string) => string;
  readonly bAt: (k: string, n: string) => string;
  readonly load: (x: string) => string;
  readonly store: (h: WgslBuilder, row: string, col: string, value: string, checked: boolean) => void;
}

/**
 * The body of a `register` config (see {@link MatmulConfig}): staging loops, the unrolled
 * `vec4` FMA block, and the stores. Loops: `ceil(K / tk)` K steps (bounded: `matmulKernel` rejects K ≥ 65,535, so
 * no loop reaches Mesa's cap), each with `(tm·tk)/threads` and `(tk·tn)/threads` staging iterations.
 */
function emitRegisterTiled(b: WgslBuilder, cfg: Extract<MatmulConfig, { kind: "register" }>, c: RegisterTiledContext): void {
  const { M, N, K, tm, tn, acc, tk } = { ...c, tk: cfg.tk };
  const steps = Math.ceil(K / tk);
  if (steps >= 65_535) {
    throw new UnsupportedError(`matmul with K = ${K} in config ${configName(cfg)}`, `more than 65,535 K steps of ${tk}; use a larger tk or split K`);
  }
  const threads = cfg.wx * cfg.wy;
  const v4 = `vec4<${wgslScalar(acc)}>`;
  const pm = cfg.rm / 4;
  const qn = cfg.rn / 4;
  const edgeM = M % tm !== 0;
  const edgeN = N % tn !== 0;
  const edgeK = K % tk !== 0;
  const zero = literal(0, { dtype: acc, width: 1 });
  const float = acc === "f32" || acc === "f16";
  // Row r of the register block (r = p·4 + i) is tile row p·4·wy + 4·y + i; column likewise.
  b.line(`let tx = lid3.x;`, `let ty = lid3.y;`, `let rowBase = wid.y * ${tm}u;`, `let colBase = wid.x * ${tn}u;`);
  for (let r = 0; r < cfg.rm; r++) b.line(`var acc${r}: array<${v4}, ${qn}>;`);
  /** Staging of one operand tile: `count` elements, the contiguous dimension fastest. */
  const stage = (l: WgslBuilder, what: "a" | "b"): void => {
    const count = what === "a" ? tm * tk : tk * tn;
    const iters = Math.ceil(count / threads);
    l.block(`for (var s = 0u; s < ${iters}u; s = s + 1u)`, (f) => {
      f.line(`let e = s * ${threads}u + lid;`);
      if (count % threads !== 0) f.line(`if (e >= ${count}u) { break; }`);
      if (what === "a") {
        // Coalesced along A's contiguous dimension: k fastest when A is row-major, else m.
        if (c.sam === 1 && c.sak !== 1) f.line(`let m = e % ${tm}u;`, `let k = e / ${tm}u;`);
        else f.line(`let m = e / ${tk}u;`, `let k = e % ${tk}u;`);
        f.line("let gm = rowBase + m;", "let gk = t * " + tk + "u + k;");
        const conds = [edgeM ? `gm < ${M}u` : "", edgeK ? `gk < ${K}u` : ""].filter((x) => x !== "");
        const value = c.load(c.aAt("gm", "gk"));
        f.line(`ta[(k * ${tm}u + m) / 4u][m % 4u] = ${conds.length > 0 ? `select(${zero}, ${value}, ${conds.join(" && ")})` : value};`);
      } else {
        if (c.sbk === 1 && c.sbn !== 1) f.line(`let k = e % ${tk}u;`, `let n = e / ${tk}u;`);
        else f.line(`let k = e / ${tn}u;`, `let n = e % ${tn}u;`);
        f.line("let gk = t * " + tk + "u + k;", "let gn = colBase + n;");
        const conds = [edgeK ? `gk < ${K}u` : "", edgeN ? `gn < ${N}u` : ""].filter((x) => x !== "");
        const value = c.load(c.bAt("gk", "gn"));
        f.line(`tb[(k * ${tn}u + n) / 4u][n % 4u] = ${conds.length > 0 ? `select(${zero}, ${value}, ${conds.join(" && ")})` : value};`);
      }
    });
  };
  b.block(`for (var t = 0u; t < ${steps}u; t = t + 1u)`, (l) => {
    stage(l, "a");
    stage(l, "b");
    l.line("workgroupBarrier();");
    l.block(`for (var kk = 0u; kk < ${tk}u; kk = kk + 1u)`, (f) => {
      for (let p = 0; p < pm; p++) f.line(`let a${p} = ta[kk * ${tm / 4}u + ${p * cfg.wy}u + ty];`);
      for (let q = 0; q < qn; q++) f.line(`let b${q} = tb[kk * ${tn / 4}u + ${q * cfg.wx}u + tx];`);
      for (let p = 0; p < pm; p++) {
        for (let i = 0; i < 4; i++) {
          const r = p * 4 + i;
          for (let q = 0; q < qn; q++) f.line(float ? `acc${r}[${q}] = fma(${v4}(a${p}[${i}]), b${q}, acc${r}[${q}]);` : `acc${r}[${q}] = acc${r}[${q}] + ${v4}(a${p}[${i}]) * b${q};`);
        }
      }
    });
    l.line("workgroupBarrier();");
  });
  for (let p = 0; p < pm; p++) {
    for (let i = 0; i < 4; i++) {
      const r = p * 4 + i;
      for (let q = 0; q < qn; q++) {
        for (let j = 0; j < 4; j++) {
          b.block("", (h) => {
            h.line(`let row = rowBase + ${p * 4 * cfg.wy}u + ty * 4u + ${i}u;`, `let col = colBase + ${q * 4 * cfg.wx}u + tx * 4u + ${j}u;`);
            c.store(h, "row", "col", `acc${r}[${q}][${j}]`, edgeM || edgeN);
          });
        }
      }
    }
  }
}
