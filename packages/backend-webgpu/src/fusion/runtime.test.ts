import { StreamId } from "@weft/environment";
import { type DType, type OperationIr, type TensorId, type TensorIr, type TensorStatus } from "@weft/fusion";
import { beforeAll, describe, expect, it } from "vitest";
import { fusionContext, runFused as runFusedOn, type FusionTestContext } from "../testing/gpu-test-support.js";
import { createWebGpuRuntime } from "./create-runtime.js";
import type { WebGpuRuntime } from "./webgpu-runtime.js";

process.env["EGL_PLATFORM"] ??= "surfaceless";

let runtime: WebGpuRuntime;
let nextId = 1;
const stream = StreamId.DEFAULT;

beforeAll(async () => {
  runtime = await createWebGpuRuntime({ autotune: false });
});

function t(shape: number[], dtype: DType = "f32", status: TensorStatus = "ReadOnly", id?: number): TensorIr {
  return { id: (id ?? nextId++) as TensorId, shape, dtype, status };
}
const as = (x: TensorIr, status: TensorStatus): TensorIr => ({ ...x, status });

const newContext = (): FusionTestContext => fusionContext(runtime, stream);
const runFused = (ctx: FusionTestContext, ops: OperationIr[]): void => runFusedOn(runtime, ctx, ops);

function upload(ctx: ReturnType<typeof newContext>, values: number[], shape: number[], dtype: DType = "f32"): TensorIr {
  const x = t(shape, dtype);
  const data = dtype === "i32" ? Int32Array.from(values) : dtype === "u32" ? Uint32Array.from(values) : dtype === "bool" ? Uint8Array.from(values) : Float32Array.from(values);
  ctx.handles.registerHandle(x.id, runtime.upload({ data, shape, dtype } as never, stream));
  return x;
}

async function read(ctx: ReturnType<typeof newContext>, x: TensorIr): Promise<number[]> {
  return [...(await runtime.read(ctx.handles.getHandle(x), x, stream))];
}


function close(actual: number[], expected: number[], tol = 1e-5): void {
  expect(actual.length, "same number of elements").toBe(expected.length);
  actual.forEach((v, i) => {
    const e = expected[i] ?? NaN;
    if (Number.isNaN(e)) expect(Number.isNaN(v), `element ${i} should be NaN`).toBe(true);
    else expect(Math.abs(v - e), `element ${i}: got ${v}, want ${e}`).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(e)));
  });
}

describe("WebGpuRuntime on the software adapter", () => {
  it("a fused 8-op chain runs as ONE launch with the CPU's values", async () => {
    const ctx = newContext();
    const xs = [-2, -0.5, 0, 0.25, 1, 1.5, 3, 4];
    const a = upload(ctx, xs, [8]);
    const b = upload(ctx, [1, 2, 3, 4, 5, 6, 7, 8], [8]);
    const ids = Array.from({ length: 8 }, () => t([8]));
    const [c1, c2, c3, c4, c5, c6, c7, c8] = ids as [TensorIr, TensorIr, TensorIr, TensorIr, TensorIr, TensorIr, TensorIr, TensorIr];
    const ops: OperationIr[] = [
      { kind: "binary", op: "add", lhs: a, rhs: b, out: c1 },
      { kind: "binary-scalar", op: "mul", lhs: as(c1, "ReadWrite"), scalar: 0.5, scalarFirst: false, out: c2 },
      { kind: "unary", op: "exp", input: as(c2, "ReadWrite"), out: c3 },
      { kind: "unary", op: "log", input: as(c3, "ReadWrite"), out: c4 },
      { kind: "unary", op: "tanh", input: as(c4, "ReadWrite"), out: c5 },
      { kind: "binary", op: "sub", lhs: as(c5, "ReadWrite"), rhs: a, out: c6 },
      { kind: "unary", op: "abs", input: as(c6, "ReadWrite"), out: c7 },
      { kind: "unary", op: "sqrt", input: as(c7, "ReadWrite"), out: c8 },
    ];
    runtime.resetCounters();
    runFused(ctx, ops);
    expect(runtime.counters.launches, "the whole chain is one kernel").toBe(1);
    expect(runtime.counters.fusedLaunches).toBe(1);
    expect(runtime.counters.elidedWrites, "c1..c7 die inside the block").toBe(7);
    const want = xs.map((x, i) => Math.sqrt(Math.abs(Math.tanh(Math.log(Math.exp((x + (i + 1)) * 0.5))) - x)));
    close(await read(ctx, c8), want);
  });

  it("in place only when the consumed input is the sole owner of its memory", async () => {
    const ctx = newContext();
    const a = upload(ctx, [1, 2, 3, 4], [4]);
    const out = t([4]);
    runtime.resetCounters();
    runFused(ctx, [{ kind: "unary", op: "neg", input: as(a, "ReadWrite"), out }]);
    expect(runtime.counters.inPlaceWrites, "a's last use may reuse its buffer").toBe(1);
    expect(await read(ctx, out)).toEqual([-1, -2, -3, -4]);

    const b = upload(ctx, [5, 6, 7, 8], [4]);
    const alias = t([4]);
    ctx.handles.registerHandle(alias.id, runtime.aliasHandle(ctx.handles.getHandle(b), StreamId.DEFAULT));
    const out2 = t([4]);
    runtime.resetCounters();
    runFused(ctx, [{ kind: "unary", op: "neg", input: as(b, "ReadWrite"), out: out2 }]);
    expect(runtime.counters.inPlaceWrites, "a shared buffer is never written in place").toBe(0);
    expect(await read(ctx, alias), "the alias keeps its values").toEqual([5, 6, 7, 8]);
    expect(await read(ctx, out2)).toEqual([-5, -6, -7, -8]);
  });

  it("a sum over 2^20 elements is exact on the software adapter (multi-pass, bounded loops)", async () => {
    const ctx = newContext();
    const n = 1 << 20;
    const values = Array.from({ length: n }, (_, i) => (i % 7) - 3);
    const x = upload(ctx, values, [n]);
    const out = t([]);
    runtime.resetCounters();
    runtime.executeOperation({ kind: "reduce", op: "sum", input: x, axes: [0], keepDims: false, out }, ctx);
    expect(runtime.counters.launches, "2^20 > one pass: a partial pass then a final pass").toBe(2);
    const want = values.reduce((a, b) => a + b, 0);
    expect(await read(ctx, out)).toEqual([want]);
  });

  it("matmul 64×96×80 matches a CPU loop", async () => {
    const ctx = newContext();
    const [M, K, N] = [64, 96, 80];
    const av = Array.from({ length: M * K }, (_, i) => ((i * 37) % 11) / 11 - 0.5);
    const bv = Array.from({ length: K * N }, (_, i) => ((i * 13) % 17) / 17 - 0.5);
    const a = upload(ctx, av, [M, K]);
    const b = upload(ctx, bv, [K, N]);
    const out = t([M, N]);
    runtime.executeOperation({ kind: "matmul", lhs: a, rhs: b, out }, ctx);
    const want: number[] = [];
    for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += (av[m * K + k] ?? 0) * (bv[k * N + n] ?? 0);
      want.push(s);
    }
    close(await read(ctx, out), want, 1e-4);
  });

  const unaryCases: [string, (x: number) => number][] = [
    ["neg", (x) => -x], ["abs", Math.abs], ["exp", Math.exp], ["log", Math.log], ["log1p", Math.log1p], ["expm1", Math.expm1],
    ["sqrt", Math.sqrt], ["rsqrt", (x) => 1 / Math.sqrt(x)], ["sin", Math.sin], ["cos", Math.cos], ["tan", Math.tan], ["tanh", Math.tanh],
    ["sigmoid", (x) => 1 / (1 + Math.exp(-x))], ["relu", (x) => Math.max(x, 0)], ["silu", (x) => x / (1 + Math.exp(-x))],
    ["floor", Math.floor], ["ceil", Math.ceil], ["sign", Math.sign], ["reciprocal", (x) => 1 / x], ["square", (x) => x * x],
  ];
  it.each(unaryCases)("unary %s matches its CPU definition", async (op, f) => {
    const ctx = newContext();
    const xs = [0.3, 1.7, 2.5, 0.01];
    const x = upload(ctx, xs, [4]);
    const out = t([4]);
    runtime.executeOperation({ kind: "unary", op: op as never, input: x, out }, ctx);
    close(await read(ctx, out), xs.map((v) => Math.fround(f(v))), 2e-6);
  });

  it("gelu (exact erf form), erf and round half-to-even", async () => {
    const ctx = newContext();
    const x = upload(ctx, [-1, 0.5, 2, 2.5], [4]);
    const [g, e, r] = [t([4]), t([4]), t([4])];
    runtime.executeOperation({ kind: "unary", op: "gelu", input: x, out: g }, ctx);
    runtime.executeOperation({ kind: "unary", op: "erf", input: x, out: e }, ctx);
    runtime.executeOperation({ kind: "unary", op: "round", input: x, out: r }, ctx);
    // erf(-1/√2) = -0.682689492, erf(0.5/√2) = 0.382924923, erf(√2) = 0.954499736, erf(2.5/√2) = 0.987580669
    close(await read(ctx, g), [-1 * 0.5 * (1 - 0.682689492), 0.5 * 0.5 * 1.382924923, 2 * 0.5 * 1.954499736, 2.5 * 0.5 * 1.987580669], 1e-6);
    close(await read(ctx, e), [-0.842700793, 0.520499878, 0.995322265, 0.999593048], 1e-6);
    expect(await read(ctx, r), "round is half-to-even").toEqual([-1, 0, 2, 2]);
  });

  it("integer div truncates, integer mod is floored, f32→i32 truncates, compares give bool", async () => {
    const ctx = newContext();
    const a = upload(ctx, [7, -7, 7, -7], [4], "i32");
    const b = upload(ctx, [2, 2, -2, -2], [4], "i32");
    const [d, m, lt] = [t([4], "i32"), t([4], "i32"), t([4], "bool")];
    runtime.executeOperation({ kind: "binary", op: "div", lhs: a, rhs: b, out: d }, ctx);
    runtime.executeOperation({ kind: "binary", op: "mod", lhs: a, rhs: b, out: m }, ctx);
    runtime.executeOperation({ kind: "binary", op: "lt", lhs: a, rhs: b, out: lt }, ctx);
    expect(await read(ctx, d)).toEqual([3, -3, -3, 3]);
    expect(await read(ctx, m), "mod takes the divisor's sign").toEqual([1, 1, -1, -1]);
    expect(await read(ctx, lt)).toEqual([0, 1, 0, 1]);
    const f = upload(ctx, [-2.7, 2.7, -0.5, 3], [4]);
    const c = t([4], "i32");
    runtime.executeOperation({ kind: "cast", input: f, out: c }, ctx);
    expect(await read(ctx, c)).toEqual([-2, 2, 0, 3]);
    const p = t([4]);
    runtime.executeOperation({ kind: "binary-scalar", op: "pow", lhs: f, scalar: 2, scalarFirst: false, out: p }, ctx);
    close(await read(ctx, p), [7.29, 7.29, 0.25, 9], 1e-6);
  });

  it("broadcast binary, where, clamp, full and arange", async () => {
    const ctx = newContext();
    const a = upload(ctx, [1, 2, 3, 4, 5, 6], [2, 3]);
    const row = upload(ctx, [10, 20, 30], [3]);
    const cond = upload(ctx, [1, 0], [2, 1], "bool");
    const [s, w, c, f, r] = [t([2, 3]), t([2, 3]), t([2, 3]), t([2, 2]), t([5])];
    runtime.executeOperation({ kind: "binary", op: "add", lhs: a, rhs: row, out: s }, ctx);
    runtime.executeOperation({ kind: "where", condition: cond, lhs: a, rhs: row, out: w }, ctx);
    runtime.executeOperation({ kind: "clamp", input: a, min: 2, max: 4, out: c }, ctx);
    runtime.executeOperation({ kind: "full", value: 1.5, out: f }, ctx);
    runtime.executeOperation({ kind: "arange", start: 1, step: 0.5, out: r }, ctx);
    expect(await read(ctx, s)).toEqual([11, 22, 33, 14, 25, 36]);
    expect(await read(ctx, w), "row 0 takes a, row 1 takes the broadcast row").toEqual([1, 2, 3, 10, 20, 30]);
    expect(await read(ctx, c)).toEqual([2, 2, 3, 4, 4, 4]);
    expect(await read(ctx, f)).toEqual([1.5, 1.5, 1.5, 1.5]);
    expect(await read(ctx, r)).toEqual([1, 1.5, 2, 2.5, 3]);
  });

  it("random uses the shared PCG definition", async () => {
    const ctx = newContext();
    const out = t([3]);
    runtime.executeOperation({ kind: "random", distribution: "uniform", seed: 42, a: 0, b: 1, out }, ctx);
    const { pcg } = await import("../codegen/wgsl/expr.js");
    const k = pcg(42);
    const want = [0, 1, 2].map((i) => (pcg((2 * i) ^ k) >>> 8) / 16777216);
    close(await read(ctx, out), want, 1e-7);
  });

  it("views (permute, slice with steps, expand, reshape of a view) read through strides", async () => {
    const ctx = newContext();
    const a = upload(ctx, [0, 1, 2, 3, 4, 5], [2, 3]);
    const [p, sl, ex, rs] = [t([3, 2]), t([2, 2]), t([2, 2, 3]), t([6])];
    runtime.executeOperation({ kind: "permute", input: a, axes: [1, 0], out: p }, ctx);
    runtime.executeOperation({ kind: "slice", input: a, ranges: [{ start: 0, end: 2, step: 1 }, { start: 0, end: 3, step: 2 }], out: sl }, ctx);
    runtime.executeOperation({ kind: "expand", input: upload(ctx, [7, 8, 9], [1, 1, 3]), out: ex }, ctx);
    runtime.executeOperation({ kind: "reshape", input: p, out: rs }, ctx);
    expect(await read(ctx, p)).toEqual([0, 3, 1, 4, 2, 5]);
    expect(await read(ctx, sl)).toEqual([0, 2, 3, 5]);
    expect(await read(ctx, ex)).toEqual([7, 8, 9, 7, 8, 9, 7, 8, 9, 7, 8, 9]);
    expect(await read(ctx, rs), "reshape of a transposed view copies first").toEqual([0, 3, 1, 4, 2, 5]);
  });

  it("concat, gather and pad", async () => {
    const ctx = newContext();
    const a = upload(ctx, [1, 2, 3, 4], [2, 2]);
    const b = upload(ctx, [5, 6], [2, 1]);
    const [c, g, p] = [t([2, 3]), t([2, 2]), t([3, 4])];
    runtime.executeOperation({ kind: "concat", inputs: [a, b], axis: 1, out: c }, ctx);
    runtime.executeOperation({ kind: "gather", input: a, indices: upload(ctx, [1, 0, -1, 1], [2, 2], "i32"), axis: 1, out: g }, ctx);
    runtime.executeOperation({ kind: "pad", input: a, padding: [[1, 0], [1, 1]], value: 9, out: p }, ctx);
    expect(await read(ctx, c)).toEqual([1, 2, 5, 3, 4, 6]);
    expect(await read(ctx, g), "-1 is the last index").toEqual([2, 1, 4, 4]);
    expect(await read(ctx, p)).toEqual([9, 9, 9, 9, 9, 1, 2, 9, 9, 3, 4, 9]);
  });

  it.each([
    ["sum", [0], [5, 7, 9]], ["mean", [1], [2, 5]], ["max", [1], [3, 6]], ["min", [0], [1, 2, 3]], ["prod", [1], [6, 120]],
    ["argmax", [1], [2, 2]], ["argmin", [0], [0, 0, 0]], ["sum", [0, 1], [21]],
  ] as const)("reduce %s over %j", async (op, axes, want) => {
    const ctx = newContext();
    const x = upload(ctx, [1, 2, 3, 4, 5, 6], [2, 3]);
    const shape = [2, 3].filter((_, d) => !(axes as readonly number[]).includes(d));
    const out = t(shape, op === "argmax" || op === "argmin" ? "i32" : "f32");
    runtime.executeOperation({ kind: "reduce", op, input: x, axes: [...axes], keepDims: false, out }, ctx);
    expect(await read(ctx, out)).toEqual([...want]);
  });

  it("a reduce with prologue and epilogue is one launch; a matmul with epilogue too", async () => {
    const ctx = newContext();
    const x = upload(ctx, [1, 2, 3, 4, 5, 6], [2, 3]);
    const [sq, s, r] = [t([2, 3]), t([2]), t([2])];
    runtime.resetCounters();
    runFused(ctx, [
      { kind: "binary", op: "mul", lhs: x, rhs: x, out: sq },
      { kind: "reduce", op: "sum", input: as(sq, "ReadWrite"), axes: [1], keepDims: false, out: s },
      { kind: "unary", op: "sqrt", input: as(s, "ReadWrite"), out: r },
    ]);
    expect(runtime.counters.launches, "prologue + reduce + epilogue in one kernel").toBe(1);
    close(await read(ctx, r), [Math.sqrt(14), Math.sqrt(77)]);
    const [mm, relu] = [t([2, 2]), t([2, 2])];
    const w = upload(ctx, [1, -1, 0, 1, -1, 0], [3, 2]);
    runtime.resetCounters();
    runFused(ctx, [
      { kind: "matmul", lhs: x, rhs: w, out: mm },
      { kind: "unary", op: "relu", input: as(mm, "ReadWrite"), out: relu },
    ]);
    expect(runtime.counters.launches, "matmul + relu in one kernel").toBe(1);
    expect(await read(ctx, relu)).toEqual([0, 1, 0, 1]);
  });
});
