import { invariant } from "@weft/environment";
import type { DType, ReduceOp } from "@weft/fusion";
import { WgslBuilder } from "../codegen/wgsl/builder.js";
import { emitExpressions, type ExprGraph, type NodeId } from "../codegen/wgsl/expr.js";
import { broadcastStrides, checkIndexRange, emitCoords, offsetExpr } from "../codegen/wgsl/indexing.js";
import { convert } from "../codegen/wgsl/ops.js";
import { Preamble } from "../codegen/wgsl/preamble.js";
import { checkDType, literal, storageElement, wgslScalar, finishSource, type DeviceProfile } from "../codegen/wgsl/types.js";
import { dispatch1d, ENTRY_PARAMS, LINEAR_GROUP } from "./dispatch.js";
import type { ElementwiseInput, KernelLaunchPlan } from "./elementwise.js";

/**
 * Iterations of each invocation's accumulation loop in one pass. Far below Mesa's silent
 * 65,535-iteration cut-off (DESIGN.md §5); a reduction longer than `workgroupSize × this` runs in
 * several passes.
 */
export const REDUCE_ITERATIONS = 256;

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
 * [+ indices], or the epilogue's outputs), in order.
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

function identity(op: ReduceOp, acc: DType): string {
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

/** WGSL statements combining (`av`, `ai`) with (`bv`, `bi`) into `av`/`ai`. */
function combine(op: ReduceOp, av: string, bv: string, ai: string, bi: string): string {
  switch (op) {
    case "sum":
    case "mean":
      return `${av} = ${av} + ${bv};`;
    case "prod":
      return `${av} = ${av} * ${bv};`;
    case "max":
    case "any":
      return `${av} = max(${av}, ${bv});`;
    case "min":
    case "all":
      return `${av} = min(${av}, ${bv});`;
    case "argmax":
      return `if (${bv} > ${av} || (${bv} == ${av} && ${bi} < ${ai})) { ${av} = ${bv}; ${ai} = ${bi}; }`;
    case "argmin":
      return `if (${bv} < ${av} || (${bv} == ${av} && ${bi} < ${ai})) { ${av} = ${bv}; ${ai} = ${bi}; }`;
    default:
      return op satisfies never;
  }
}

/** Whether `op` tracks an index. */
export function isArgOp(op: ReduceOp): boolean {
  return op === "argmax" || op === "argmin";
}

/** Canonical key of a reduce pass. */
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
  const total = spec.source.kind === "partial" ? spec.source.chunks : reducedShape.reduce((a, b) => a * b, 1);
  const chunk = wg * REDUCE_ITERATIONS;
  const chunks = spec.sink.kind === "partial" ? spec.sink.chunks : 1;
  invariant(chunks === Math.max(1, Math.ceil(total / chunk)), () => `reduce pass of ${total} elements must use ${Math.ceil(total / chunk)} chunks, got ${chunks}`);
  checkIndexRange(outer * Math.max(total, 1), spec.label);
  const iterations = Math.max(1, Math.ceil(Math.min(chunk, total) / wg));
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
    spec.source.inputs.forEach((input, slot) => w.line(`@group(0) @binding(${binding++}) var<storage, read> in${slot}: array<${storageElement(input.dtype, 1)}>;`));
  } else {
    w.line(`@group(0) @binding(${binding++}) var<storage, read> pv: array<${wgslScalar(acc)}>;`);
    if (arg) w.line(`@group(0) @binding(${binding++}) var<storage, read> pi: array<u32>;`);
  }
  if (spec.sink.kind === "final") {
    spec.sink.inputs.forEach((input, slot) => w.line(`@group(0) @binding(${binding++}) var<storage, read> ep${slot}: array<${storageElement(input.dtype, 1)}>;`));
    spec.sink.outputs.forEach((o, k) => w.line(`@group(0) @binding(${binding++}) var<storage, read_write> out${k}: array<${storageElement(o.dtype, 1)}>;`));
  } else {
    w.line(`@group(0) @binding(${binding++}) var<storage, read_write> ov: array<${wgslScalar(acc)}>;`);
    if (arg) w.line(`@group(0) @binding(${binding++}) var<storage, read_write> oi: array<u32>;`);
  }
  w.line("", `var<workgroup> sv: array<${wgslScalar(acc)}, ${wg}>;`);
  if (arg) w.line(`var<workgroup> si: array<u32, ${wg}>;`);
  w.line("");

  const body = new WgslBuilder();
  body.block(`fn main(${ENTRY_PARAMS})`, (b) => {
    b.line(`let g = ${LINEAR_GROUP};`);
    b.line(`if (g >= ${outer * chunks}u) { return; }`);
    b.line(`let o = g / ${chunks}u;`, `let k = g % ${chunks}u;`);
    b.line(`var av = ${identity(spec.op, acc)};`);
    if (arg) b.line("var ai = 4294967295u;");
    const keptCoords = spec.source.kind === "graph" ? emitCoords(b, "o", keptShape, "q") : [];
    b.block(`for (var j = 0u; j < ${iterations}u; j = j + 1u)`, (l) => {
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
        c.line(combine(spec.op, "av", "bv", "ai", "bi"));
      });
    });
    b.line("sv[lid] = av;");
    if (arg) b.line("si[lid] = ai;");
    b.line("workgroupBarrier();");
    b.block(`for (var s = ${wg / 2}u; s > 0u; s = s >> 1u)`, (l) => {
      l.block("if (lid < s)", (c) => {
        if (arg) c.line("var xv = sv[lid];", "var xi = si[lid];", combine(spec.op, "xv", "sv[lid + s]", "xi", "si[lid + s]"), "sv[lid] = xv;", "si[lid] = xi;");
        else c.line("var xv = sv[lid];", combine(spec.op, "xv", "sv[lid + s]", "", ""), "sv[lid] = xv;");
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
      else if (spec.op === "mean") res = convert(`sv[0] / ${literal(total, accT)}`, accT, resT);
      else if (spec.op === "any" || spec.op === "all") res = convert("(sv[0] != 0u)", { dtype: "bool", width: 1 }, resT);
      else res = convert("sv[0]", accT, resT);
      c.line(`let res = ${res};`);
      const outCoords = sink.inputs.length > 0 ? emitCoords(c, "o", sink.outShape, "e") : [];
      const { lines, exprs } = emitExpressions(sink.graph, sink.outputs.map((o) => o.node), {
        width: 1,
        helpers,
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
