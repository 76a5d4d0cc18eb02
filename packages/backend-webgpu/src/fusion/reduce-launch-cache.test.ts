import { StreamId } from "@weft/environment";
import { type DType, type OperationIr, type ReduceOp, type TensorId, type TensorIr, type TensorStatus } from "@weft/fusion";
import { beforeAll, describe, expect, it } from "vitest";
import { fusionContext, type FusionTestContext } from "../testing/gpu-test-support.js";
import { createWebGpuRuntime } from "./create-runtime.js";
import type { WebGpuOptimization } from "./optimization.js";
import { MAX_REDUCE_LAUNCH_ENTRIES } from "./reduce-launch-cache.js";
import { REDUCE_ITERATIONS } from "../kernels/reduce.js";
import type { WebGpuRuntime } from "./webgpu-runtime.js";

process.env["EGL_PLATFORM"] ??= "surfaceless";

let runtime: WebGpuRuntime;
let nextId = 1;
const stream = StreamId.DEFAULT;
/** More elements than one reduce pass takes: two passes. */
let long = 0;

beforeAll(async () => {
  runtime = await createWebGpuRuntime({ autotune: false });
  long = runtime.profile.workgroupSize * REDUCE_ITERATIONS * 3 + 5;
});

type Ctx = FusionTestContext;
const newContext = (): Ctx => fusionContext(runtime, stream);
const t = (shape: readonly number[], dtype: DType = "f32", status: TensorStatus = "ReadOnly"): TensorIr => ({ id: nextId++ as TensorId, shape, dtype, status });
const as = (x: TensorIr, status: TensorStatus): TensorIr => ({ ...x, status });

function upload(ctx: Ctx, values: ArrayLike<number>, shape: number[], dtype: DType = "f32"): TensorIr {
  const x = t(shape, dtype);
  const data = dtype === "i32" ? Int32Array.from(values) : Float32Array.from(values);
  ctx.handles.registerHandle(x.id, runtime.upload({ data, shape, dtype }, stream));
  return x;
}

async function read(ctx: Ctx, x: TensorIr): Promise<number[]> {
  return [...(await runtime.read(ctx.handles.getHandle(x), x, stream))];
}

/**
 * `op(x * s, axes) + c` with fresh ids: a prologue with a parameter, the reduction, an epilogue
 * with a parameter (the two parameters go to different passes when the reduction takes two).
 */
function block(x: TensorIr, s: number, c: number, axes: number[], op: ReduceOp = "sum"): { ops: OperationIr[]; out: TensorIr } {
  const scaled = t(x.shape, x.dtype);
  const outShape = x.shape.map((d, k) => (axes.includes(k) ? 1 : d));
  const r = t(outShape, op === "argmax" || op === "argmin" ? "i32" : x.dtype);
  const out = t(outShape, r.dtype);
  const ops: OperationIr[] = [
    { kind: "binary-scalar", op: "mul", lhs: as(x, "ReadOnly"), scalar: s, scalarFirst: false, out: scaled },
    { kind: "reduce", op, input: as(scaled, "ReadWrite"), axes, keepDims: true, out: r },
    { kind: "binary-scalar", op: "add", lhs: as(r, "ReadWrite"), scalar: c, scalarFirst: false, out },
  ];
  return { ops, out };
}

/** The reduce optimization the runtime's fuser builds for `ops`. */
function optimize(ops: OperationIr[]): WebGpuOptimization {
  const fuser = runtime.fusers()[1];
  if (fuser === undefined) throw new Error("the runtime offers a reduce fuser");
  for (const op of ops) fuser.fuse(op);
  const opt = fuser.finish();
  expect(opt.name, "a reduce block").toBe("reduce");
  expect(opt.len, "prologue, reduction and epilogue fuse into one block").toBe(ops.length);
  return opt;
}

/** Row sums (float64) of `rows × cols` values scaled by `s`, plus `c`. */
function rowSums(values: ArrayLike<number>, rows: number, cols: number, s: number, c: number): number[] {
  return Array.from({ length: rows }, (_, r) => {
    let acc = 0;
    for (let k = 0; k < cols; k++) acc += (values[r * cols + k] as number) * s;
    return acc + c;
  });
}

function close(actual: number[], want: number[], why: string): void {
  expect(actual.length, why).toBe(want.length);
  actual.forEach((v, i) => {
    const w = want[i] ?? NaN;
    if (Number.isNaN(w)) expect(v, `${why} (element ${i})`).toBeNaN();
    else if (!Number.isFinite(w)) expect(v, `${why} (element ${i})`).toBe(w);
    else expect(Math.abs(v - w), `${why} (element ${i}: ${v} vs ${w})`).toBeLessThanOrEqual(1e-4 * Math.max(1, Math.abs(w)));
  });
}

describe("reduce launch cache", () => {
  it("a repeated two-pass reduction replays its passes, each execution with its own parameters", async () => {
    const ctx = newContext();
    const values = Array.from({ length: long }, (_, i) => ((i * 7) % 13) / 13);
    const x = upload(ctx, values, [long]);
    const opt = optimize(block(x, 1, 0, [0]).ops);
    runtime.resetCounters();
    const cases: [number, number][] = [
      [1, 0],
      [0.5, 2],
      [-2, -1],
      [1, 0],
      [Number.NaN, 1],
      [1, Number.POSITIVE_INFINITY],
    ];
    for (const [s, c] of cases) {
      const { ops, out } = block(x, s, c, [0]);
      opt.execute(ctx, ops);
      close(await read(ctx, out), rowSums(values, 1, long, s, c), `sum(x * ${s}) + ${c}`);
      ctx.handles.removeHandle(out.id);
    }
    expect(runtime.counters.launches, "two passes per execution").toBe(2 * cases.length);
    expect(runtime.counters.kernelsGenerated, "at most the first execution generates the two passes").toBeLessThanOrEqual(2);
    expect(runtime.counters.fusedLaunches, "every replay still counts as a fused launch").toBe(cases.length);
    expect(runtime.counters.elidedWrites, "the prologue's product and the reduction's result are elided each time").toBe(2 * cases.length);
  });

  it("new shapes, axes layouts and dtypes get their own plans; more than the cap stay correct", async () => {
    const ctx = newContext();
    const first = upload(ctx, [1, 2, 3, 4], [2, 2]);
    const opt = optimize(block(first, 1, 0, [1]).ops);
    for (let round = 0; round < 2; round++) {
      for (let n = 1; n <= MAX_REDUCE_LAUNCH_ENTRIES + 3; n++) {
        const cols = n === MAX_REDUCE_LAUNCH_ENTRIES + 3 ? long : n * 3;
        const values = Array.from({ length: 2 * cols }, (_, i) => (i % 5) - 1.5);
        const x = upload(ctx, values, [2, cols]);
        const { ops, out } = block(x, 2, 1, [1]);
        opt.execute(ctx, ops);
        close(await read(ctx, out), rowSums(values, 2, cols, 2, 1), `[2, ${cols}], round ${round}`);
        ctx.handles.removeHandle(out.id);
      }
    }
    // The same block structure over i32 (a foreign block for this plan): never the f32 plan.
    const ints = upload(ctx, [1, 2, 3, 4, 5, 6], [2, 3], "i32");
    const { ops, out } = block(ints, 3, 1, [1]);
    opt.execute(ctx, ops);
    expect(await read(ctx, out), "i32 sums with i32 parameters").toEqual([19, 46]);
  });

  it("a strided view and a dense input of the same shape do not share a plan", async () => {
    const ctx = newContext();
    const values = [1, 2, 3, 4, 5, 6];
    const dense = upload(ctx, values, [2, 3]);
    const opt = optimize(block(dense, 1, 0, [1]).ops);
    for (let i = 0; i < 2; i++) {
      const { ops, out } = block(dense, 1, 0, [1]);
      opt.execute(ctx, ops);
      expect(await read(ctx, out), `dense rows, execution ${i}`).toEqual([6, 15]);
    }
    // The transpose of a [3, 2] tensor holding the same numbers is a [2, 3] view with strides [1, 2].
    const base = upload(ctx, [1, 4, 2, 5, 3, 6], [3, 2]);
    const view = t([2, 3]);
    runtime.executeOperation({ kind: "permute", input: base, axes: [1, 0], out: view }, ctx);
    for (let i = 0; i < 2; i++) {
      const { ops, out } = block(view, 1, 0, [1]);
      opt.execute(ctx, ops);
      expect(await read(ctx, out), `transposed rows, execution ${i}`).toEqual([6, 15]);
    }
  });

  it("an empty reduced axis gives the identity on every execution; an empty output launches nothing", async () => {
    const ctx = newContext();
    const empty = upload(ctx, [], [3, 0]);
    const opt = optimize(block(empty, 1, 0.5, [1]).ops);
    for (let i = 0; i < 2; i++) {
      const { ops, out } = block(empty, 1, 0.5, [1]);
      opt.execute(ctx, ops);
      expect(await read(ctx, out), `sum over nothing is 0 (+ 0.5), execution ${i}`).toEqual([0.5, 0.5, 0.5]);
    }
    const none = upload(ctx, [], [0, 4]);
    for (let i = 0; i < 2; i++) {
      runtime.resetCounters();
      const { ops, out } = block(none, 1, 0.5, [1]);
      opt.execute(ctx, ops);
      expect(runtime.counters.launches, "no output element: no reduction pass").toBeLessThanOrEqual(1);
      expect(await read(ctx, out), "an empty result").toEqual([]);
    }
  });

  it("argmax replays its index passes; a NaN wins wherever it is", async () => {
    const ctx = newContext();
    const opt = optimize(block(upload(ctx, [0, 1], [2]), 1, 0, [0], "argmax").ops);
    for (const at of [long - 1, 3, long - 1]) {
      const values = Array.from({ length: long }, (_, i) => (i === at ? Number.NaN : i % 1000));
      const x = upload(ctx, values, [long]);
      const { ops, out } = block(x, 1, 0, [0], "argmax");
      opt.execute(ctx, ops);
      expect(await read(ctx, out), `the NaN at ${at}`).toEqual([at]);
    }
  });
});
