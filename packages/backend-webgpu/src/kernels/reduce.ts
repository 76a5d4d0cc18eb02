import { invariant } from "@weft/environment";
import type { DType, ReduceOp } from "@weft/fusion";
import { WgslBuilder } from "../codegen/wgsl/builder.js";
import { emitExpressions, type ExprGraph, type NodeId } from "../codegen/wgsl/expr.js";
import { broadcastStrides, checkIndexRange, emitCoords, isIdentityLayout, offsetExpr } from "../codegen/wgsl/indexing.js";
import { convert } from "../codegen/wgsl/ops.js";
import { encodeParams, KernelParams } from "../codegen/wgsl/params.js";
import { Preamble } from "../codegen/wgsl/preamble.js";
import { checkDType, literal, storageElement, wgslScalar, wgslType, finishSource, type DeviceProfile, type ValueType } from "../codegen/wgsl/types.js";
import { storageBinding } from "../codegen/wgsl/bindings.js";
import { dispatch1d, ENTRY_PARAMS, LINEAR_GROUP } from "./dispatch.js";
import type { ElementwiseInput, KernelLaunchPlan } from "./elementwise.js";

/**
 * Elements each invocation accumulates in one pass (a workgroup reduces a contiguous chunk of
 * `workgroupSize × this` elements). Far below Mesa's silent 65,535-iteration cut-off
 * (docs/design.md#where-webgpu-runs); a reduction longer than one chunk runs in several passes (each ≥ 8192× smaller
 * than the last with 128-thread workgroups, so 2^31 elements take at most 3 passes).
 *
 * @remarks
 * **Why 64.** A full reduction of 2^26 f32 then starts 4096 workgroups (256 threads each, 16
 * `vec4` loads per thread on the dense path), enough to keep every SM of a large GPU streaming;
 * the second pass reduces 4096 partials in one workgroup. Fewer, longer workgroups (256 iterations
 * before) left a large GPU a quarter occupied. Row reductions up to 16K columns stay one pass.
 */
export const REDUCE_ITERATIONS = 64;

/** What a reduction pass reads. */
export type ReduceSource =
  /** The first pass: an elementwise prologue evaluated at each element of the reduce input. */
  | { readonly kind: "graph"; readonly graph: ExprGraph; readonly node: NodeId; readonly inputs: readonly ElementwiseInput[] }
  /** A later pass: the partial results `[outer, chunks]` of the previous pass (and their indices). */
  | { readonly kind: "partial"; readonly chunks: number };

/** What a reduction pass writes. */
export type ReduceSink =
  /** Partial results `[outer, chunks]` (values, and indices for arg ops). */
  | { readonly kind: "partial"; readonly chunks: number }
  /**
   * The final values through an elementwise epilogue over the output shape: `graph` reads the
   * reduction's result as the value `res` and writes `outputs` (contiguous, index = output element).
   */
  | {
      readonly kind: "final";
      readonly outShape: readonly number[];
      readonly graph: ExprGraph;
      readonly inputs: readonly ElementwiseInput[];
      readonly outputs: readonly { readonly node: NodeId; readonly dtype: DType }[];
      /** The dtype of `res` (the reduce op's output dtype). */
      readonly resultDtype: DType;
    };

/**
 * One pass of a workgroup tree reduction: workgroup `g` reduces chunk `g % chunks` of output
 * element `g / chunks` — each invocation accumulates at most {@link REDUCE_ITERATIONS} elements,
 * then the workgroup combines its partials in workgroup memory (log₂ steps).
 *
 * @remarks
 * **Binding layout.** Source inputs (the prologue's inputs, or the partial values then, for arg ops,
 * the partial indices), then the epilogue's inputs (final pass), then the outputs (partial values
 * [+ indices], or the epilogue's outputs), in order; then, when the prologue (first pass) or the
 * epilogue (final pass) has parameters, the uniform block (`reducePassUniforms`).
 * **Empty extents.** A reduction over zero elements never enters its loop: every output is the
 * op's identity (`sum` 0, `prod` 1, `any` false, `all` true) and `mean` is NaN (0/0).
 * `max`/`min`/`argmax`/`argmin` of an empty axis are refused at the API (no identity).
 */
export interface ReducePassSpec {
  readonly op: ReduceOp;
  /** The reduce input's shape (pass 1), whose `axes` are reduced. */
  readonly inputShape: readonly number[];
  readonly axes: readonly number[];
  /** Dtype of the reduced values (the prologue's result). */
  readonly valueDtype: DType;
  readonly source: ReduceSource;
  readonly sink: ReduceSink;
  readonly label: string;
}

/** The accumulator's dtype for `op` over values of `dtype`. */
export function accumulatorDtype(op: ReduceOp, dtype: DType): DType {
  if (op === "any" || op === "all") return "u32";
  if (op === "mean" || dtype === "f16") return "f32";
  if (dtype === "bool") return "u32";
  return dtype;
}

/** The identity of `op` for an accumulator of `acc`, as a WGSL literal. */
export function identity(op: ReduceOp, acc: DType): string {
  const t = { dtype: acc, width: 1 as const };
  switch (op) {
    case "sum":
    case "mean":
    case "any":
      return literal(0, t);
    case "prod":
    case "all":
      return literal(1, t);
    case "max":
    case "argmax":
      return acc === "i32" ? literal(-2147483648, t) : acc === "u32" ? "0u" : literal(-Infinity, t);
    case "min":
    case "argmin":
      return acc === "i32" ? literal(2147483647, t) : acc === "u32" ? "4294967295u" : literal(Infinity, t);
    default:
      return op satisfies never;
  }
}

/**
 * WGSL statements combining (`av`, `ai`) with (`bv`, `bi`) into `av`/`ai`, for accumulators of
 * type `t` (scalar, or `vec4` for the non-arg ops of the dense path).
 *
 * @remarks
 * **NaN** follows the CPU oracle: float `max`/`min` go through the preamble's `maxNan`/`minNan`
 * (a NaN operand wins: WGSL's `max` may drop it); `argmax`/`argmin` treat NaN as beyond every
 * number, so the result is the first NaN's index (ties and NaNs: the smaller index wins).
 */
export function combine(op: ReduceOp, av: string, bv: string, ai: string, bi: string, t: ValueType, helpers: Preamble): string {
  const float = t.dtype === "f32" || t.dtype === "f16";
  switch (op) {
    case "sum":
    case "mean":
      return `${av} = ${av} + ${bv};`;
    case "prod":
      return `${av} = ${av} * ${bv};`;
    case "max":
      return float ? `${av} = ${helpers.use("maxNan", t)}(${av}, ${bv});` : `${av} = max(${av}, ${bv});`;
    case "any":
      return `${av} = max(${av}, ${bv});`;
    case "min":
      return float ? `${av} = ${helpers.use("minNan", t)}(${av}, ${bv});` : `${av} = min(${av}, ${bv});`;
    case "all":
      return `${av} = min(${av}, ${bv});`;
    case "argmax":
    case "argmin": {
      invariant(t.width === 1, "arg reductions combine scalars");
      const better = op === "argmax" ? ">" : "<";
      const ordered = `(${bv} ${better} ${av} || (${bv} == ${av} && ${bi} < ${ai}))`;
      if (!float) return `if ${ordered} { ${av} = ${bv}; ${ai} = ${bi}; }`;
      const isNan = helpers.use("isNan", t);
      return `if ((${isNan}(${bv}) && (!${isNan}(${av}) || ${bi} < ${ai})) || (!${isNan}(${av}) && !${isNan}(${bv}) && ${ordered})) { ${av} = ${bv}; ${ai} = ${bi}; }`;
    }
    default:
      return op satisfies never;
  }
}

/**
 * Whether pass 1 of `spec` can read its input as `vec4`s: a non-arg op over f32/i32/u32 values
 * whose prologue inputs are all dense in the input's shape (offsets multiples of 4), the reduced
 * axes are the trailing ones (each output's elements are contiguous), their extent is a multiple
 * of 4, and no prologue node reads the element index.
 */
export function reduceVectorizable(spec: ReducePassSpec): boolean {
  const source = spec.source;
  if (source.kind !== "graph" || isArgOp(spec.op)) return false;
  if (!["f32", "i32", "u32"].includes(spec.valueDtype)) return false;
  const rank = spec.inputShape.length;
  const axes = [...spec.axes].sort((a, b) => a - b);
  if (!axes.every((a, i) => a === rank - axes.length + i)) return false;
  const total = axes.reduce((p, d) => p * (spec.inputShape[d] ?? 1), 1);
  if (total === 0 || total % 4 !== 0 || source.graph.usesIndex()) return false;
  return source.inputs.every((i) => ["f32", "i32", "u32"].includes(i.dtype) && isIdentityLayout(i.layout, spec.inputShape) && i.layout.offset % 4 === 0);
}

/** Whether `op` tracks an index. */
export function isArgOp(op: ReduceOp): boolean {
  return op === "argmax" || op === "argmin";
}

/** The graphs whose parameters a pass reads: the prologue on the first pass, the epilogue on the final one. */
function passGraphs(spec: ReducePassSpec): ExprGraph[] {
  const graphs: ExprGraph[] = [];
  if (spec.source.kind === "graph") graphs.push(spec.source.graph);
  if (spec.sink.kind === "final") graphs.push(spec.sink.graph);
  return graphs;
}

/** The uniform bytes of one pass's parameters (prologue, then epilogue), or `undefined` for none. */
export function reducePassUniforms(spec: ReducePassSpec): Uint8Array | undefined {
  return encodeParams(passGraphs(spec).flatMap((g) => g.params));
}

/** Canonical key of a reduce pass (structure only: parameters are uniforms). */
export function reducePassKey(spec: ReducePassSpec, profile: DeviceProfile): string {
  const src =
    spec.source.kind === "partial"
      ? `p${spec.source.chunks}`
      : `g{${spec.source.graph.key()}}n${spec.source.node}(${spec.source.inputs.map((i) => `${i.dtype}:${i.layout.shape}:${i.layout.strides}:${i.layout.offset}`).join("|")})`;
  const sink =
    spec.sink.kind === "partial"
      ? `p${spec.sink.chunks}`
      : `f[${spec.sink.outShape}]{${spec.sink.graph.key()}}(${spec.sink.inputs.map((i) => `${i.dtype}:${i.layout.shape}:${i.layout.strides}:${i.layout.offset}`).join("|")})->(${spec.sink.outputs.map((o) => `${o.node}:${o.dtype}`).join("|")})r${spec.sink.resultDtype}`;
  return `reduce:${spec.op}[${spec.inputShape}]/${spec.axes}:${spec.valueDtype}:${src}:${sink}#${profile.key}`;
}

/** Generates one reduction pass. */
export function reducePassKernel(spec: ReducePassSpec, profile: DeviceProfile, key = reducePassKey(spec, profile)): KernelLaunchPlan {
  const wg = profile.workgroupSize;
  const keptDims = spec.inputShape.map((_, d) => d).filter((d) => !spec.axes.includes(d));
  const keptShape = keptDims.map((d) => spec.inputShape[d] ?? 1);
  const reducedShape = spec.axes.map((d) => spec.inputShape[d] ?? 1);
  const outer = keptShape.reduce((a, b) => a * b, 1);
  /** Elements each output reduces in the original reduction (the `mean` divisor, every pass). */
  const extent = reducedShape.reduce((a, b) => a * b, 1);
  const total = spec.source.kind === "partial" ? spec.source.chunks : extent;
  const chunk = wg * REDUCE_ITERATIONS;
  const chunks = spec.sink.kind === "partial" ? spec.sink.chunks : 1;
  invariant(chunks === Math.max(1, Math.ceil(total / chunk)), () => `reduce pass of ${total} elements must use ${Math.ceil(total / chunk)} chunks, got ${chunks}`);
  checkIndexRange(outer * Math.max(total, 1), spec.label);
  const iterations = Math.ceil(Math.min(chunk, total) / wg);
  const vec = reduceVectorizable(spec);
  const acc = accumulatorDtype(spec.op, spec.valueDtype);
  const accT = { dtype: acc, width: 1 as const };
  const arg = isArgOp(spec.op);
  const helpers = new Preamble();
  const w = new WgslBuilder();
  let binding = 0;
  const dtypes: DType[] = [spec.valueDtype];
  if (spec.sink.kind === "final") dtypes.push(...spec.sink.outputs.map((o) => o.dtype), ...spec.sink.inputs.map((i) => i.dtype));
  dtypes.forEach((d) => checkDType(d, profile, spec.label));
  if (dtypes.includes("f16")) w.line("enable f16;", "");

  if (spec.source.kind === "graph") {
    spec.source.inputs.forEach((input, slot) => w.line(storageBinding(binding++, `in${slot}`, storageElement(input.dtype, vec ? 4 : 1))));
  } else {
    w.line(storageBinding(binding++, "pv", wgslScalar(acc)));
    if (arg) w.line(storageBinding(binding++, "pi", "u32"));
  }
  if (spec.sink.kind === "final") {
    spec.sink.inputs.forEach((input, slot) => w.line(storageBinding(binding++, `ep${slot}`, storageElement(input.dtype, 1))));
    spec.sink.outputs.forEach((o, k) => w.line(storageBinding(binding++, `out${k}`, storageElement(o.dtype, 1))));
  } else {
    w.line(storageBinding(binding++, "ov", wgslScalar(acc)));
    if (arg) w.line(storageBinding(binding++, "oi", "u32"));
  }
  w.line("");
  const params = new KernelParams();
  const prologueParam = spec.source.kind === "graph" ? params.add(spec.source.graph) : undefined;
  const epilogueParam = spec.sink.kind === "final" ? params.add(spec.sink.graph) : undefined;
  params.declare(w, binding);
  const noParam = (): string => {
    throw new Error("internal: a reduce pass read a parameter of a graph it does not evaluate");
  };
  w.line(`var<workgroup> sv: array<${wgslScalar(acc)}, ${wg}>;`);
  if (arg) w.line(`var<workgroup> si: array<u32, ${wg}>;`);
  w.line("");

  const body = new WgslBuilder();
  body.block(`fn main(${ENTRY_PARAMS})`, (b) => {
    b.line(`let g = ${LINEAR_GROUP};`);
    b.line(`if (g >= ${outer * chunks}u) { return; }`);
    b.line(`let o = g / ${chunks}u;`, `let k = g % ${chunks}u;`);
    if (!vec) b.line(`var av = ${identity(spec.op, acc)};`);
    if (arg) b.line("var ai = 4294967295u;");
    if (vec && spec.source.kind === "graph" && total > 0) {
      // Dense path: each output's `total` elements are contiguous; read them as vec4s, keep a
      // vec4 accumulator (four independent chains), fold it at the end.
      const source = spec.source;
      const total4 = total / 4;
      const acc4 = { dtype: acc, width: 4 as const };
      const iterations4 = Math.max(1, Math.ceil(Math.min(chunk, total) / 4 / wg));
      b.line(`var a4 = ${wgslType(acc4)}(${identity(spec.op, acc)});`);
      b.block(`for (var j = 0u; j < ${iterations4}u; j = j + 1u)`, (l) => {
        l.line(`let r = k * ${chunk / 4}u + j * ${wg}u + lid;`);
        l.block(`if (r < ${total4}u)`, (c) => {
          c.line(`let e = o * ${total4}u + r;`);
          const { lines, exprs } = emitExpressions(source.graph, [source.node], {
            width: 4,
            helpers,
            param: prologueParam ?? noParam,
            index: "e",
            load: (slot) => {
              const input = source.inputs[slot];
              invariant(input !== undefined, () => `reduce input slot ${slot} is not bound`);
              const off = input.layout.offset / 4;
              return `in${slot}[${off === 0 ? "e" : `e + ${off}u`}]`;
            },
          });
          c.line(...lines);
          const vt = { dtype: spec.valueDtype, width: 4 as const };
          const bool4 = { dtype: "bool" as const, width: 4 as const };
          const value = exprs[0] ?? "";
          c.line(`let b4 = ${spec.op === "any" || spec.op === "all" ? convert(convert(value, vt, bool4), bool4, acc4) : convert(value, vt, acc4)};`);
          c.line(combine(spec.op, "a4", "b4", "", "", acc4, helpers));
        });
      });
      b.line("var av = a4.x;");
      for (const lane of ["y", "z", "w"]) b.line(combine(spec.op, "av", `a4.${lane}`, "", "", accT, helpers));
    }
    const keptCoords = spec.source.kind === "graph" && !vec && total > 0 ? emitCoords(b, "o", keptShape, "q") : [];
    // An empty extent never enters the loop (its shape has a 0 dim: no coordinates to emit).
    if (!vec && total > 0) b.block(`for (var j = 0u; j < ${iterations}u; j = j + 1u)`, (l) => {
      l.line(`let r = k * ${chunk}u + j * ${wg}u + lid;`);
      l.block(`if (r < ${total}u)`, (c) => {
        let value: string;
        let index = "r";
        if (spec.source.kind === "graph") {
          const source = spec.source;
          const reducedCoords = emitCoords(c, "r", reducedShape, "p");
          const coords = spec.inputShape.map((_, d) => {
            const kept = keptDims.indexOf(d);
            return kept >= 0 ? (keptCoords[kept] ?? "0u") : (reducedCoords[spec.axes.indexOf(d)] ?? "0u");
          });
          const { lines, exprs } = emitExpressions(source.graph, [source.node], {
            width: 1,
            helpers,
            param: prologueParam ?? noParam,
            index: "0u",
            load: (slot) => {
              const input = source.inputs[slot];
              invariant(input !== undefined, () => `reduce input slot ${slot} is not bound`);
              const raw = `in${slot}[${offsetExpr(coords, broadcastStrides(input.layout, spec.inputShape), input.layout.offset)}]`;
              return input.dtype === "bool" ? `(${raw} != 0u)` : raw;
            },
          });
          c.line(...lines);
          value = exprs[0] ?? "";
          const vt = { dtype: spec.valueDtype, width: 1 as const };
          value = spec.op === "any" || spec.op === "all" ? convert(convert(value, vt, { dtype: "bool", width: 1 }), { dtype: "bool", width: 1 }, accT) : convert(value, vt, accT);
        } else {
          value = `pv[o * ${total}u + r]`;
          if (arg) index = `pi[o * ${total}u + r]`;
        }
        c.line(`let bv = ${value};`);
        if (arg) c.line(`let bi = ${index};`);
        c.line(combine(spec.op, "av", "bv", "ai", "bi", accT, helpers));
      });
    });
    b.line("sv[lid] = av;");
    if (arg) b.line("si[lid] = ai;");
    b.line("workgroupBarrier();");
    b.block(`for (var s = ${wg / 2}u; s > 0u; s = s >> 1u)`, (l) => {
      l.block("if (lid < s)", (c) => {
        if (arg) c.line("var xv = sv[lid];", "var xi = si[lid];", combine(spec.op, "xv", "sv[lid + s]", "xi", "si[lid + s]", accT, helpers), "sv[lid] = xv;", "si[lid] = xi;");
        else c.line("var xv = sv[lid];", combine(spec.op, "xv", "sv[lid + s]", "", "", accT, helpers), "sv[lid] = xv;");
      });
      l.line("workgroupBarrier();");
    });
    b.block("if (lid == 0u)", (c) => {
      if (spec.sink.kind === "partial") {
        c.line(`ov[o * ${chunks}u + k] = sv[0];`);
        if (arg) c.line(`oi[o * ${chunks}u + k] = si[0];`);
        return;
      }
      const sink = spec.sink;
      const resT = { dtype: sink.resultDtype, width: 1 as const };
      let res: string;
      if (arg) res = convert("i32(si[0])", { dtype: "i32", width: 1 }, resT);
      // The divisor is the original extent, not this pass's (a later pass reduces partial sums).
      else if (spec.op === "mean") res = convert(extent === 0 ? literal(Number.NaN, accT) : (accT.dtype === "f32" || accT.dtype === "f16" ? `${helpers.use("divIeee", accT)}(sv[0], ${literal(extent, accT)})` : `sv[0] / ${literal(extent, accT)}`), accT, resT);
      else if (spec.op === "any" || spec.op === "all") res = convert("(sv[0] != 0u)", { dtype: "bool", width: 1 }, resT);
      else res = convert("sv[0]", accT, resT);
      c.line(`let res = ${res};`);
      const outCoords = sink.inputs.length > 0 ? emitCoords(c, "o", sink.outShape, "e") : [];
      const { lines, exprs } = emitExpressions(sink.graph, sink.outputs.map((o) => o.node), {
        width: 1,
        helpers,
        param: epilogueParam ?? noParam,
        index: "o",
        load: (slot) => {
          const input = sink.inputs[slot];
          invariant(input !== undefined, () => `epilogue input slot ${slot} is not bound`);
          const raw = `ep${slot}[${offsetExpr(outCoords, broadcastStrides(input.layout, sink.outShape), input.layout.offset)}]`;
          return input.dtype === "bool" ? `(${raw} != 0u)` : raw;
        },
      });
      c.line(...lines);
      sink.outputs.forEach((o, k) => {
        let v = convert(exprs[k] ?? "", { dtype: sink.graph.node(o.node).dtype, width: 1 }, { dtype: o.dtype, width: 1 });
        if (o.dtype === "bool") v = convert(v, { dtype: "bool", width: 1 }, { dtype: "u32", width: 1 });
        c.line(`out${k}[o] = ${v};`);
      });
    });
  });
  if (!helpers.empty) helpers.emit(w);
  w.line(`@compute @workgroup_size(${wg})`);
  return {
    kernel: { key, source: finishSource(w.toString() + body.toString()), entryPoint: "main", label: spec.label },
    count: dispatch1d(outer * chunks, profile, spec.label),
  };
}
