import { StreamId } from "@weft/environment";
import type { OperationIr, TensorId, TensorIr, TensorStatus } from "@weft/fusion";
import { beforeAll, describe, expect, it } from "vitest";
import { fusionContext, runFused, type FusionTestContext } from "../testing/gpu-test-support.js";
import { createWebGpuRuntime } from "./create-runtime.js";
import type { WebGpuRuntime } from "./webgpu-runtime.js";

process.env["EGL_PLATFORM"] ??= "surfaceless";

let runtime: WebGpuRuntime;
let nextId = 1;
const stream = StreamId.DEFAULT;

beforeAll(async () => {
  runtime = await createWebGpuRuntime({ autotune: false });
});

const t = (shape: readonly number[], status: TensorStatus = "ReadOnly"): TensorIr => ({ id: nextId++ as TensorId, shape, dtype: "f32", status });
const as = (x: TensorIr, status: TensorStatus): TensorIr => ({ ...x, status });

function upload(ctx: FusionTestContext, values: number[], shape: number[]): TensorIr {
  const x = t(shape);
  ctx.handles.registerHandle(x.id, runtime.upload({ data: Float32Array.from(values), shape, dtype: "f32" }, stream));
  return x;
}

/** The ops `Tensor.softmax(x)` records (last axis), with the drops of its intermediates, as `release` orders them. */
function softmaxOps(x: TensorIr): { ops: OperationIr[]; out: TensorIr } {
  const rows = x.shape.slice(0, -1);
  const kept = [...rows, 1];
  const [m, d, e, s, out] = [t(kept), t(x.shape), t(x.shape), t(kept), t(x.shape)];
  const axis = x.shape.length - 1;
  const ops: OperationIr[] = [
    { kind: "reduce", op: "max", input: x, axes: [axis], keepDims: true, out: m },
    { kind: "binary", op: "sub", lhs: x, rhs: m, out: d },
    { kind: "unary", op: "exp", input: d, out: e },
    { kind: "reduce", op: "sum", input: e, axes: [axis], keepDims: true, out: s },
    { kind: "binary", op: "div", lhs: e, rhs: s, out },
    { kind: "drop", tensor: as(m, "ReadWrite") },
    { kind: "drop", tensor: as(d, "ReadWrite") },
    { kind: "drop", tensor: as(e, "ReadWrite") },
    { kind: "drop", tensor: as(s, "ReadWrite") },
  ];
  return { ops, out };
}

/** Float64 softmax of each row, the composite's formula (NaN for a row whose max is ±Inf or NaN where the formula gives it). */
function reference(values: number[], n: number): number[] {
  const out: number[] = [];
  for (let r = 0; r < values.length / n; r++) {
    const row = values.slice(r * n, (r + 1) * n).map(Math.fround);
    const m = row.some(Number.isNaN) ? NaN : Math.max(...row);
    const e = row.map((v) => Math.exp(v - m));
    const s = e.reduce((a, b) => a + b, 0);
    out.push(...e.map((v) => v / s));
  }
  return out;
}

function close(actual: ArrayLike<number>, want: number[], why: string): void {
  expect(actual.length, why).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const [a, w] = [actual[i] as number, want[i] as number];
    if (Number.isNaN(w)) expect(a, `${why} (element ${i})`).toBeNaN();
    else expect(Math.abs(a - w), `${why} (element ${i}: ${a} vs ${w})`).toBeLessThanOrEqual(1e-6 + 1e-5 * Math.abs(w));
  }
}

function values(n: number, seed: number, scale = 3): number[] {
  let s = seed >>> 0;
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s / 2 ** 32 - 0.5) * 2 * scale;
  });
}

describe("softmax fusion", () => {
  it.each([
    [8, 10],
    [3, 1],
    [2, 300],
    [1, 4096],
    [2, 4100],
  ])("%i rows of %i: one kernel up to 4096 per row, the ops one by one past it; the values of the formula", async (rows, n) => {
    const ctx = fusionContext(runtime, stream);
    const v = values(rows * n, rows * 1000 + n);
    const x = upload(ctx, v, [rows, n]);
    const { ops, out } = softmaxOps(x);
    runtime.resetCounters();
    runFused(runtime, ctx, ops);
    if (n <= 4096) expect(runtime.counters.launches, "one fused kernel").toBe(1);
    else expect(runtime.counters.launches, "the ops one by one").toBeGreaterThanOrEqual(5);
    close(await runtime.read(ctx.handles.getHandle(out), out, stream), reference(v, n), `softmax of ${rows}×${n}`);
    ctx.handles.removeHandle(out.id);
    ctx.handles.removeHandle(x.id);
    expect(ctx.handles.size, "only the output was written, and it is gone").toBe(0);
  });

  it("rows with NaN, +Inf and all -Inf give the formula's NaNs; a row of zeros is uniform", async () => {
    const ctx = fusionContext(runtime, stream);
    const v = [1, 2, NaN, 3, 0, Infinity, 1, 2, -Infinity, -Infinity, -Infinity, -Infinity, 0, 0, 0, 0, -Infinity, 5, -Infinity, 5];
    const x = upload(ctx, v, [5, 4]);
    const { ops, out } = softmaxOps(x);
    runFused(runtime, ctx, ops);
    close(await runtime.read(ctx.handles.getHandle(out), out, stream), reference(v, 4), "special rows");
    ctx.handles.removeHandle(out.id);
    ctx.handles.removeHandle(x.id);
  });

  it("an input whose last use is in the block is freed by it", async () => {
    const ctx = fusionContext(runtime, stream);
    const v = values(6 * 10, 77);
    const x = upload(ctx, v, [6, 10]);
    const { ops, out } = softmaxOps(x);
    const sub = ops[1] as Extract<OperationIr, { kind: "binary" }>;
    ops[1] = { ...sub, lhs: as(x, "ReadWrite") };
    runFused(runtime, ctx, ops);
    expect(ctx.handles.size, "x was freed with its last use: only the output is left").toBe(1);
    close(await runtime.read(ctx.handles.getHandle(out), out, stream), reference(v, 10), "softmax, x dying");
    ctx.handles.removeHandle(out.id);
    expect(ctx.handles.size).toBe(0);
  });
});
