/**
 * Reductions on the software adapter against plain JavaScript: every op, the dense `vec4` path and
 * the strided path, multi-pass sizes (every loop stays under Mesa's 65,535-iteration cap), NaN.
 */
import { StreamId } from "@weft/environment";
import { HandleContainer, type DType, type ReduceOp, type TensorId, type TensorIr } from "@weft/fusion";
import { beforeAll, describe, expect, it } from "vitest";
import { createWebGpuRuntime } from "../fusion/create-runtime.js";
import type { WebGpuRuntime } from "../fusion/webgpu-runtime.js";
import type { WebGpuHandle } from "../handle/webgpu-handle.js";
import { reduceVectorizable, REDUCE_ITERATIONS, type ReducePassSpec } from "./reduce.js";
import { ExprGraph } from "../codegen/wgsl/expr.js";

process.env["EGL_PLATFORM"] ??= "surfaceless";

const stream = StreamId.DEFAULT;
let runtime: WebGpuRuntime;
let nextId = 1;

beforeAll(async () => {
  runtime = await createWebGpuRuntime({ autotune: false });
});

const t = (shape: number[], dtype: DType = "f32"): TensorIr => ({ id: nextId++ as TensorId, shape, dtype, status: "ReadOnly" });
const newCtx = () => ({ handles: new HandleContainer<WebGpuHandle>((h) => runtime.releaseHandle(h)), stream });

/** The CPU oracle's definition of each op over one row (NaN wins max/min; arg: first NaN, first tie). */
function reference(op: ReduceOp, row: number[]): number {
  switch (op) {
    case "sum":
      return row.reduce((a, b) => a + b, 0);
    case "mean":
      return row.reduce((a, b) => a + b, 0) / row.length;
    case "prod":
      return row.reduce((a, b) => a * b, 1);
    case "max":
      return row.reduce((a, b) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.max(a, b)), -Infinity);
    case "min":
      return row.reduce((a, b) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.min(a, b)), Infinity);
    case "argmax":
    case "argmin": {
      const nan = row.findIndex((v) => Number.isNaN(v));
      if (nan >= 0) return nan;
      let best = 0;
      row.forEach((v, i) => {
        if (op === "argmax" ? v > (row[best] ?? 0) : v < (row[best] ?? 0)) best = i;
      });
      return best;
    }
    case "any":
      return row.some((v) => v !== 0) ? 1 : 0;
    case "all":
      return row.every((v) => v !== 0) ? 1 : 0;
    default:
      return op satisfies never;
  }
}

const outDtype = (op: ReduceOp): DType => (op === "argmax" || op === "argmin" ? "i32" : op === "any" || op === "all" ? "bool" : "f32");

/** Reduces `values` of `shape` over `axes` on the GPU; returns the output's values. */
async function reduceOnGpu(op: ReduceOp, values: Float32Array, shape: number[], axes: number[]): Promise<number[]> {
  const ctx = newCtx();
  const x = t(shape);
  ctx.handles.registerHandle(x.id, runtime.upload({ data: values, shape, dtype: "f32" } as never, stream));
  const outShape = shape.filter((_, d) => !axes.includes(d));
  const out = t(outShape, outDtype(op));
  runtime.executeOperation({ kind: "reduce", op, input: x, axes, keepDims: false, out }, ctx);
  return [...(await runtime.read(ctx.handles.getHandle(out), out, stream))];
}

/** The reference of `op` over `axes` of a row-major `shape`. */
function referenceOf(op: ReduceOp, values: Float32Array, shape: number[], axes: number[]): number[] {
  const kept = shape.map((_, d) => d).filter((d) => !axes.includes(d));
  const strides = shape.map((_, d) => shape.slice(d + 1).reduce((a, b) => a * b, 1));
  const outer = kept.reduce((p, d) => p * (shape[d] ?? 1), 1);
  const inner = axes.reduce((p, d) => p * (shape[d] ?? 1), 1);
  const result: number[] = [];
  for (let o = 0; o < outer; o++) {
    const row: number[] = [];
    for (let r = 0; r < inner; r++) {
      let offset = 0;
      let rest = o;
      for (let k = kept.length - 1; k >= 0; k--) {
        const d = kept[k] as number;
        offset += (rest % (shape[d] ?? 1)) * (strides[d] ?? 0);
        rest = Math.floor(rest / (shape[d] ?? 1));
      }
      rest = r;
      for (let k = axes.length - 1; k >= 0; k--) {
        const d = axes[k] as number;
        offset += (rest % (shape[d] ?? 1)) * (strides[d] ?? 0);
        rest = Math.floor(rest / (shape[d] ?? 1));
      }
      row.push(values[offset] ?? NaN);
    }
    result.push(reference(op, row));
  }
  return result;
}

function expectClose(got: number[], want: number[], what: string, tol = 1e-4): void {
  expect(got.length, `${what}: element count`).toBe(want.length);
  want.forEach((w, i) => {
    const g = got[i] ?? NaN;
    if (Number.isNaN(w)) expect(Number.isNaN(g), `${what}[${i}] must be NaN, got ${g}`).toBe(true);
    else if (!Number.isFinite(w)) expect(g, `${what}[${i}]`).toBe(w);
    else expect(Math.abs(g - w), `${what}[${i}]: got ${g}, want ${w}`).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(w)));
  });
}

const OPS: readonly ReduceOp[] = ["sum", "mean", "max", "min", "prod", "argmax", "argmin", "any", "all"];

describe("reductions", () => {
  it("every op matches JavaScript on the dense (vec4) path and the strided path, for each axis", async () => {
    const shape = [6, 20, 12];
    const values = Float32Array.from({ length: 6 * 20 * 12 }, (_, i) => (((i * 7919) % 23) - 11) / 8 + (i % 5 === 0 ? 0 : 0.0625));
    for (const op of OPS) {
      for (const axes of [[2], [1, 2], [0], [1], [0, 2], [0, 1, 2]]) {
        const data = op === "prod" ? values.map((v) => 1 + v / 64) : values;
        const want = referenceOf(op, data, shape, axes);
        expectClose(await reduceOnGpu(op, data, shape, axes), want, `${op} over [${axes}]`, op === "prod" ? 1e-3 : 1e-4);
      }
    }
  });

  it("a full sum of 2^22 + 12 elements runs in several passes and is exact for small integers", async () => {
    const n = (1 << 22) + 12;
    const values = Float32Array.from({ length: n }, (_, i) => (i % 9) - 4);
    const want = referenceOf("sum", values, [n], [0]);
    runtime.resetCounters();
    expect(await reduceOnGpu("sum", values, [n], [0]), "every chunk is counted once").toEqual(want);
    expect(runtime.counters.launches, "2^22 elements need more than one pass").toBeGreaterThanOrEqual(2);
    const odd = values.subarray(0, n - 1);
    expect(await reduceOnGpu("max", Float32Array.from(odd), [n - 1], [0]), "a length that is not a multiple of 4 takes the scalar path").toEqual([4]);
  });

  it("NaN wins max/min and the arg ops report the first NaN, on both paths", async () => {
    for (const length of [4096, 4095]) {
      const values = Float32Array.from({ length }, (_, i) => Math.sin(i));
      values[1000] = NaN;
      values[3000] = NaN;
      values[17] = Infinity;
      values[18] = -Infinity;
      for (const op of ["max", "min", "argmax", "argmin", "sum", "any"] as const) {
        expectClose(await reduceOnGpu(op, values, [length], [0]), referenceOf(op, values, [length], [0]), `${op} of ${length} with NaN`);
      }
      const rows = Float32Array.from({ length: 8 * 16 }, (_, i) => i % 16);
      rows[2 * 16 + 5] = NaN;
      for (const op of ["max", "argmin"] as const) {
        expectClose(await reduceOnGpu(op, rows, [8, 16], [1]), referenceOf(op, rows, [8, 16], [1]), `${op} per row, one NaN in row 2`);
      }
    }
  });

  it("the dense path applies exactly when the reduced elements are contiguous vec4s", () => {
    const graph = new ExprGraph();
    const node = graph.add({ kind: "input", slot: 0, dtype: "f32" });
    const dense = { dtype: "f32" as const, access: "read" as const, layout: { shape: [4, 8], strides: [8, 1], offset: 0 } };
    const base: ReducePassSpec = { op: "sum", inputShape: [4, 8], axes: [1], valueDtype: "f32", source: { kind: "graph", graph, node, inputs: [dense] }, sink: { kind: "partial", chunks: 1 }, label: "t" };
    expect(reduceVectorizable(base), "trailing axis, dense input").toBe(true);
    expect(reduceVectorizable({ ...base, axes: [0] }), "a leading axis is strided").toBe(false);
    expect(reduceVectorizable({ ...base, op: "argmax" }), "arg ops track scalar indices").toBe(false);
    expect(reduceVectorizable({ ...base, source: { kind: "graph", graph, node, inputs: [{ ...dense, layout: { shape: [4, 8], strides: [1, 4], offset: 0 } }] } }), "a transposed input").toBe(false);
    expect(reduceVectorizable({ ...base, source: { kind: "graph", graph, node, inputs: [{ ...dense, layout: { ...dense.layout, offset: 2 } }] } }), "an offset that is not a multiple of 4").toBe(false);
    expect(REDUCE_ITERATIONS * 4, "a pass's loops stay far under Mesa's 65,535 iterations").toBeLessThan(65_535);
  });
});
