/**
 * `softmax(a · b + bias)` through the fusion engine on the WebGPU runtime: one kernel
 * (`MatmulSoftmaxFuser`, `matmulChainKernel` with one layer) where the product fits one workgroup per row, the
 * matmul block and the softmax block past that; the values of the float64 formula either way.
 */
import { StreamId } from "@weft/environment";
import type { OperationIr, TensorIr } from "@weft/fusion";
import { beforeAll, describe, expect, it } from "vitest";
import { permuteView } from "../handle/webgpu-handle.js";
import { MAX_MATMUL_CHAIN_MACS } from "../kernels/matmul-chain.js";
import { fusionContext, irTensors, runFused, seededValues as values, uploadF32, type FusionTestContext } from "../testing/gpu-test-support.js";
import { createWebGpuRuntime } from "./create-runtime.js";
import { Launcher } from "./launcher.js";
import { MatmulChainLaunchCache } from "./matmul-chain-launch-cache.js";
import { MatmulSoftmaxOptimization } from "./optimization.js";
import type { WebGpuRuntime } from "./webgpu-runtime.js";

process.env["EGL_PLATFORM"] ??= "surfaceless";

let runtime: WebGpuRuntime;
const stream = StreamId.DEFAULT;
const { t, as } = irTensors();

beforeAll(async () => {
  runtime = await createWebGpuRuntime({ autotune: false });
});

const upload = (ctx: FusionTestContext, v: readonly number[], shape: readonly number[]): TensorIr => uploadF32(runtime, ctx, t(shape), v);

/** How the block's operands are given: dense, or `b` as the transposed view of a dense `[n, k]`. */
type Layout = "dense" | "b transposed";

/**
 * The ops of `tidy(() => softmax(a · b + bias))` (bias optional; `times` scales before the bias, a
 * parameter of the epilogue): the product, the epilogue, the five softmax ops with the drops of
 * their intermediates, then the drops of the product and the epilogue's results (the `tidy`'s end).
 */
function headOps(a: TensorIr, b: TensorIr, bias: TensorIr | undefined, times: number | undefined, outShape: readonly number[]): { ops: OperationIr[]; out: TensorIr } {
  const rows = outShape.slice(0, -1);
  const kept = [...rows, 1];
  const axis = outShape.length - 1;
  const ops: OperationIr[] = [];
  const products: TensorIr[] = [];
  let x = t(outShape);
  ops.push({ kind: "matmul", lhs: a, rhs: b, out: x });
  products.push(x);
  if (times !== undefined) {
    const scaled = t(outShape);
    ops.push({ kind: "binary-scalar", op: "mul", lhs: x, scalar: times, scalarFirst: false, out: scaled });
    products.push((x = scaled));
  }
  if (bias !== undefined) {
    const biased = t(outShape);
    ops.push({ kind: "binary", op: "add", lhs: x, rhs: bias, out: biased });
    products.push((x = biased));
  }
  const [m, d, e, s, out] = [t(kept), t(outShape), t(outShape), t(kept), t(outShape)];
  ops.push(
    { kind: "reduce", op: "max", input: x, axes: [axis], keepDims: true, out: m },
    { kind: "binary", op: "sub", lhs: x, rhs: m, out: d },
    { kind: "unary", op: "exp", input: d, out: e },
    { kind: "reduce", op: "sum", input: e, axes: [axis], keepDims: true, out: s },
    { kind: "binary", op: "div", lhs: e, rhs: s, out },
  );
  for (const dead of [m, d, e, s, ...products]) ops.push({ kind: "drop", tensor: as(dead, "ReadWrite") });
  return { ops, out };
}

/** Float64 `softmax(a · b · times + bias)` per row (a, b dense row-major; b of `[k, n]`). */
function reference(a: readonly number[], b: readonly number[], bias: readonly number[] | undefined, times: number | undefined, batches: number, m: number, k: number, n: number, bBatched: boolean): number[] {
  const f = Math.fround;
  const out: number[] = [];
  for (let q = 0; q < batches; q++) {
    for (let r = 0; r < m; r++) {
      const row: number[] = [];
      for (let c = 0; c < n; c++) {
        let acc = 0;
        for (let j = 0; j < k; j++) acc += f(a[(q * m + r) * k + j] as number) * f(b[(bBatched ? q * k * n : 0) + j * n + c] as number);
        let v = acc;
        if (times !== undefined) v *= f(times);
        if (bias !== undefined) v += f(bias[c] as number);
        row.push(v);
      }
      const mx = row.some(Number.isNaN) ? NaN : Math.max(...row);
      const e = row.map((v) => Math.exp(v - mx));
      const s = e.reduce((p, v) => p + v, 0);
      out.push(...e.map((v) => v / s));
    }
  }
  return out;
}

function close(actual: ArrayLike<number>, want: readonly number[], why: string): void {
  expect(actual.length, why).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const [a, w] = [actual[i] as number, want[i] as number];
    if (Number.isNaN(w)) expect(a, `${why} (element ${i})`).toBeNaN();
    else expect(Math.abs(a - w), `${why} (element ${i}: ${a} vs ${w})`).toBeLessThanOrEqual(1e-6 + 1e-4 * Math.abs(w));
  }
}

describe("matmul + softmax fusion", () => {
  it.each([
    // [batches, m, k, n, bias, times, layout]
    [1, 8, 128, 10, true, undefined, "dense"],
    [1, 1, 1, 1, false, undefined, "dense"],
    [1, 5, 33, 7, true, 0.5, "dense"],
    [2, 3, 17, 12, true, undefined, "dense"],
    [1, 4, 64, 256, true, undefined, "dense"],
    [1, 6, 40, 9, true, undefined, "b transposed"],
  ] as const)("%i batch(es) of %i×%i · %i columns (bias %s, times %s, %s): one kernel, the formula's values", async (batches, m, k, n, withBias, times, layout) => {
    expect(n, "the case fits one workgroup per row").toBeLessThanOrEqual(runtime.profile.workgroupSize);
    const ctx = fusionContext(runtime, stream);
    const av = values(batches * m * k, 11 + m * k);
    const bv = values((batches > 1 ? batches : 1) * k * n, 23 + n);
    const aShape = batches > 1 ? [batches, m, k] : [m, k];
    const a = upload(ctx, av, aShape);
    let b: TensorIr;
    if (layout === "dense") b = upload(ctx, bv, batches > 1 ? [batches, k, n] : [k, n]);
    else {
      // The same values as a [n, k] tensor, read through its transposed view [k, n].
      const tv: number[] = [];
      for (let c = 0; c < n; c++) for (let j = 0; j < k; j++) tv.push(bv[j * n + c] as number);
      const stored = upload(ctx, tv, [n, k]);
      b = t([k, n]);
      ctx.handles.registerHandle(b.id, permuteView(ctx.handles.getHandle(stored), [1, 0]));
      ctx.handles.removeHandle(stored.id);
    }
    const biasValues = withBias ? values(n, 5) : undefined;
    const bias = biasValues === undefined ? undefined : upload(ctx, biasValues, [n]);
    const outShape = batches > 1 ? [batches, m, n] : [m, n];
    const { ops, out } = headOps(a, b, bias, times, outShape);
    runtime.resetCounters();
    runFused(runtime, ctx, ops);
    expect(runtime.counters.launches, "the head is one kernel").toBe(1);
    close(await runtime.read(ctx.handles.getHandle(out), out, stream), reference(av, bv, biasValues, times, batches, m, k, n, batches > 1), "softmax(a·b+bias)");
    for (const x of [out, a, b, ...(bias === undefined ? [] : [bias])]) ctx.handles.removeHandle(x.id);
    expect(ctx.handles.size, "only the output was written").toBe(0);
  });

  it.each([
    ["a row wider than the workgroup", 2, 8, 300],
    ["more multiply-adds than one launch takes", 64, 1024, 128],
  ] as const)("%s: the matmul block and the softmax block, the same values", async (_why, m, k, n) => {
    const fits = n <= runtime.profile.workgroupSize && m * n * k <= MAX_MATMUL_CHAIN_MACS;
    expect(fits, "the case does not fit the fused kernel").toBe(false);
    const ctx = fusionContext(runtime, stream);
    const av = values(m * k, 3);
    const bv = values(k * n, 4, 0.2);
    const biasValues = values(n, 6);
    const [a, b, bias] = [upload(ctx, av, [m, k]), upload(ctx, bv, [k, n]), upload(ctx, biasValues, [n])];
    const { ops, out } = headOps(a, b, bias, undefined, [m, n]);
    runtime.resetCounters();
    runFused(runtime, ctx, ops);
    expect(runtime.counters.launches, "a matmul kernel and a softmax kernel").toBe(2);
    close(await runtime.read(ctx.handles.getHandle(out), out, stream), reference(av, bv, biasValues, undefined, 1, m, k, n, false), "softmax(a·b+bias), two launches");
    for (const x of [out, a, b, bias]) ctx.handles.removeHandle(x.id);
    expect(ctx.handles.size, "only the output was written; the logits are gone").toBe(0);
  });

  it("on a device with WebGPU's default 8 storage buffers: still one kernel (the block holds 7 live products until the drops)", async () => {
    const small = await createWebGpuRuntime({ maxStorageBuffers: 8, autotune: false });
    try {
      const ctx = fusionContext(small, stream);
      const [m, k, n] = [8, 128, 10];
      const av = values(m * k, 31);
      const bv = values(k * n, 32);
      const biasValues = values(n, 33);
      const up = (v: number[], shape: number[]): TensorIr => {
        const x = t(shape);
        ctx.handles.registerHandle(x.id, small.upload({ data: Float32Array.from(v), shape, dtype: "f32" }, stream));
        return x;
      };
      const [a, b, bias] = [up(av, [m, k]), up(bv, [k, n]), up(biasValues, [n])];
      const { ops, out } = headOps(a, b, bias, 2, [m, n]);
      small.resetCounters();
      runFused(small, ctx, ops);
      expect(small.counters.launches, "one kernel binding a, b, bias and the output").toBe(1);
      close(await small.read(ctx.handles.getHandle(out), out, stream), reference(av, bv, biasValues, 2, 1, m, k, n, false), "8 storage buffers");
      for (const x of [out, a, b, bias]) ctx.handles.removeHandle(x.id);
    } finally {
      small.dispose();
    }
  });

  it("on 8 storage buffers, a head binding 8 (a, b, five biases, the output): still one kernel, every buffer used", async () => {
    const small = await createWebGpuRuntime({ maxStorageBuffers: 8, autotune: false });
    try {
      const ctx = fusionContext(small, stream);
      const [m, k, n] = [4, 24, 10];
      const av = values(m * k, 61);
      const bv = values(k * n, 62);
      const biases = Array.from({ length: 5 }, (_, i) => values(n, 63 + i, 0.2));
      const up = (v: number[], shape: number[]): TensorIr => uploadF32(small, ctx, t(shape), v);
      const [a, b] = [up(av, [m, k]), up(bv, [k, n])];
      const es = biases.map((v) => up(v, [n]));
      const ops: OperationIr[] = [];
      const dead: TensorIr[] = [];
      let x = t([m, n]);
      ops.push({ kind: "matmul", lhs: a, rhs: b, out: x });
      dead.push(x);
      for (const e of es) {
        const y = t([m, n]);
        ops.push({ kind: "binary", op: "add", lhs: x, rhs: e, out: y });
        dead.push((x = y));
      }
      const [mx, d, ex, sm, out] = [t([m, 1]), t([m, n]), t([m, n]), t([m, 1]), t([m, n])];
      ops.push(
        { kind: "reduce", op: "max", input: x, axes: [1], keepDims: true, out: mx },
        { kind: "binary", op: "sub", lhs: x, rhs: mx, out: d },
        { kind: "unary", op: "exp", input: d, out: ex },
        { kind: "reduce", op: "sum", input: ex, axes: [1], keepDims: true, out: sm },
        { kind: "binary", op: "div", lhs: ex, rhs: sm, out },
      );
      for (const z of [mx, d, ex, sm, ...dead]) ops.push({ kind: "drop", tensor: as(z, "ReadWrite") });
      small.resetCounters();
      runFused(small, ctx, ops);
      expect(small.counters.launches, "one kernel binding all 8 storage buffers").toBe(1);
      const summed = Array.from({ length: n }, (_, c) => biases.reduce((acc, v) => acc + Math.fround(v[c] as number), 0));
      close(await small.read(ctx.handles.getHandle(out), out, stream), reference(av, bv, summed, undefined, 1, m, k, n, false), "five biases");
      for (const z of [out, a, b, ...es]) ctx.handles.removeHandle(z.id);
      expect(ctx.handles.size, "only the output was written").toBe(0);
    } finally {
      small.dispose();
    }
  });

  it("a launch cache replays executions with the same layouts: a new scale each time, the counters of the full path", async () => {
    const launcher = new Launcher(runtime.client, runtime.profile, runtime.counters);
    const cache = new MatmulChainLaunchCache();
    const [m, k, n] = [8, 32, 10];
    const av = values(m * k, 41);
    const bv = values(k * n, 42);
    const biasValues = values(n, 43);
    const counts: string[] = [];
    for (const [step, times] of [1.5, 2, -0.5].entries()) {
      const ctx = fusionContext(runtime, stream);
      const [a, b, bias] = [upload(ctx, av, [m, k]), upload(ctx, bv, [k, n]), upload(ctx, biasValues, [n])];
      const { ops, out } = headOps(a, b, bias, times, [m, n]);
      const at = ops.findIndex((o) => o.kind === "reduce");
      runtime.resetCounters();
      expect(cache.run(launcher, ctx, ops, { starts: [0], at }), "the head fits one kernel").toBe(true);
      counts.push(JSON.stringify({ ...runtime.counters, pipelineCacheHits: 0, kernelsGenerated: 0 }));
      expect(cache.size, step === 0 ? "the first execution is remembered" : "replayed: still one signature").toBe(1);
      close(await runtime.read(ctx.handles.getHandle(out), out, stream), reference(av, bv, biasValues, times, 1, m, k, n, false), `execution ${step} (times ${times})`);
      for (const x of [out, a, b, bias]) ctx.handles.removeHandle(x.id);
      expect(ctx.handles.size, "only the output was written, and it is gone").toBe(0);
    }
    expect(new Set(counts).size, "a replay counts what the full path counts").toBe(1);
  });

  it("a head past the fused kernel's bounds, executed again: two launches each time, the matmul replayed with a new scale", async () => {
    const launcher = new Launcher(runtime.client, runtime.profile, runtime.counters);
    const [m, k, n] = [2, 8, 300];
    const av = values(m * k, 51);
    const bv = values(k * n, 52, 0.2);
    const biasValues = values(n, 53);
    let optimization: MatmulSoftmaxOptimization | undefined;
    for (const times of [1.5, -2]) {
      const ctx = fusionContext(runtime, stream);
      const [a, b, bias] = [upload(ctx, av, [m, k]), upload(ctx, bv, [k, n]), upload(ctx, biasValues, [n])];
      const { ops, out } = headOps(a, b, bias, times, [m, n]);
      optimization ??= new MatmulSoftmaxOptimization(launcher, ops.length, runtime.fallbackPort);
      runtime.resetCounters();
      optimization.execute(ctx, ops);
      expect(runtime.counters.launches, "a matmul kernel and a softmax kernel").toBe(2);
      close(await runtime.read(ctx.handles.getHandle(out), out, stream), reference(av, bv, biasValues, times, 1, m, k, n, false), `times ${times}`);
      for (const x of [out, a, b, bias]) ctx.handles.removeHandle(x.id);
      expect(ctx.handles.size, "only the output was written; the logits are gone").toBe(0);
    }
  });

  it("NaN, ±Inf and a row of -Inf logits give the formula's values", async () => {
    const ctx = fusionContext(runtime, stream);
    // a = identity rows, so the logits are rows of b; bias 0.
    const m = 4;
    const n = 4;
    const av = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1];
    const bv = [1, 2, NaN, 3, 0, Infinity, 1, 2, -Infinity, -Infinity, -Infinity, -Infinity, 0, 0, 0, 0];
    const [a, b] = [upload(ctx, av, [m, 4]), upload(ctx, bv, [4, n])];
    const { ops, out } = headOps(a, b, undefined, undefined, [m, n]);
    runFused(runtime, ctx, ops);
    // 0 · ±Inf and 0 · NaN are NaN: every logit of a column holding a non-finite value is NaN, as in the formula.
    close(await runtime.read(ctx.handles.getHandle(out), out, stream), reference(av, bv, undefined, undefined, 1, m, 4, n, false), "special logits");
    for (const x of [out, a, b]) ctx.handles.removeHandle(x.id);
  });

  it("operands whose last use is the product are freed by the block; a logit still used after it keeps the two blocks", async () => {
    const ctx = fusionContext(runtime, stream);
    const [m, k, n] = [3, 8, 5];
    const av = values(m * k, 8);
    const bv = values(k * n, 9);
    const a = upload(ctx, av, [m, k]);
    const b = upload(ctx, bv, [k, n]);
    const { ops, out } = headOps(as(a, "ReadWrite"), b, undefined, undefined, [m, n]);
    runtime.resetCounters();
    runFused(runtime, ctx, ops);
    expect(runtime.counters.launches).toBe(1);
    expect(ctx.handles.size, "a was freed with the product: b and the output are left").toBe(2);
    close(await runtime.read(ctx.handles.getHandle(out), out, stream), reference(av, bv, undefined, undefined, 1, m, k, n, false), "a dying");
    for (const x of [out, b]) ctx.handles.removeHandle(x.id);

    // The logits alive after the block (no drop of them): they must be written, so the head is not one kernel.
    const ctx2 = fusionContext(runtime, stream);
    const [a2, b2] = [upload(ctx2, av, [m, k]), upload(ctx2, bv, [k, n])];
    const head = headOps(a2, b2, undefined, undefined, [m, n]);
    const logits = (head.ops[0] as Extract<OperationIr, { kind: "matmul" }>).out;
    const kept = head.ops.filter((op) => !(op.kind === "drop" && op.tensor.id === logits.id));
    runtime.resetCounters();
    runFused(runtime, ctx2, kept);
    expect(runtime.counters.launches, "the logits are written by the matmul kernel, then the softmax kernel").toBe(2);
    close(await runtime.read(ctx2.handles.getHandle(head.out), head.out, stream), reference(av, bv, undefined, undefined, 1, m, k, n, false), "logits kept");
    for (const x of [head.out, logits, a2, b2]) ctx2.handles.removeHandle(x.id);
    expect(ctx2.handles.size).toBe(0);
  });
});
