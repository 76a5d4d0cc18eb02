/**
 * A small MLP's layers — `softmax(act(act(x · W1 + b1) · W2 + b2) · W3 + b3)`, the ops a `tidy`
 * records, its drops at the end — through the fusion engine on the WebGPU runtime: one kernel
 * (`MatmulChainFuser`, `matmulChainKernel`) where every layer fits one workgroup per row, the
 * layers as their own blocks past that; the values of the float64 formula either way.
 */
import { StreamId } from "@weft/environment";
import type { OperationIr, TensorIr } from "@weft/fusion";
import { beforeAll, describe, expect, it } from "vitest";
import { fusionContext, irTensors, runFused, seededValues as values, uploadF32, type FusionTestContext } from "../testing/gpu-test-support.js";
import { createWebGpuRuntime } from "./create-runtime.js";
import { Launcher } from "./launcher.js";
import { MatmulChainOptimization } from "./optimization.js";
import type { WebGpuRuntime } from "./webgpu-runtime.js";

process.env["EGL_PLATFORM"] ??= "surfaceless";

let runtime: WebGpuRuntime;
const stream = StreamId.DEFAULT;
const { t, as } = irTensors();

beforeAll(async () => {
  runtime = await createWebGpuRuntime({ autotune: false });
});

const upload = (rt: WebGpuRuntime, ctx: FusionTestContext, v: readonly number[], shape: readonly number[]): TensorIr => uploadF32(rt, ctx, t(shape), v);

/** One layer: its weights `[k, n]`, an optional bias `[n]`, an optional scale before the bias, an optional activation. */
interface Layer {
  readonly w: readonly number[];
  readonly n: number;
  readonly bias?: readonly number[];
  readonly times?: number;
  readonly act?: "relu" | "tanh";
}

/**
 * The ops of `tidy(() => [softmax](layers(x)))`: per layer the matmul, the scale, the bias and the
 * activation; the softmax's five ops with the drops of its four intermediates; then the drops of
 * every other intermediate (the `tidy`'s end), and, with `dropInput`, the input's.
 */
function chainOps(x: TensorIr, weights: readonly TensorIr[], biases: readonly (TensorIr | undefined)[], layers: readonly Layer[], m: number, softmax: boolean, keep?: number): { ops: OperationIr[]; out: TensorIr; kept: TensorIr | undefined } {
  const ops: OperationIr[] = [];
  const dead: TensorIr[] = [];
  let h = x;
  let kept: TensorIr | undefined;
  layers.forEach((layer, l) => {
    const shape = [m, layer.n];
    let p = t(shape);
    ops.push({ kind: "matmul", lhs: h, rhs: weights[l] as TensorIr, out: p });
    dead.push(p);
    if (layer.times !== undefined) {
      const q = t(shape);
      ops.push({ kind: "binary-scalar", op: "mul", lhs: p, scalar: layer.times, scalarFirst: false, out: q });
      dead.push((p = q));
    }
    const bias = biases[l];
    if (bias !== undefined) {
      const q = t(shape);
      ops.push({ kind: "binary", op: "add", lhs: p, rhs: bias, out: q });
      dead.push((p = q));
    }
    if (layer.act !== undefined) {
      const q = t(shape);
      ops.push({ kind: "unary", op: layer.act, input: p, out: q });
      dead.push((p = q));
    }
    if (keep === l) kept = p;
    h = p;
  });
  let out = h;
  if (softmax) {
    const n = (layers[layers.length - 1] as Layer).n;
    const [mx, d, e, s, y] = [t([m, 1]), t([m, n]), t([m, n]), t([m, 1]), t([m, n])];
    ops.push(
      { kind: "reduce", op: "max", input: h, axes: [1], keepDims: true, out: mx },
      { kind: "binary", op: "sub", lhs: h, rhs: mx, out: d },
      { kind: "unary", op: "exp", input: d, out: e },
      { kind: "reduce", op: "sum", input: e, axes: [1], keepDims: true, out: s },
      { kind: "binary", op: "div", lhs: e, rhs: s, out: y },
    );
    for (const z of [mx, d, e, s]) ops.push({ kind: "drop", tensor: as(z, "ReadWrite") });
    out = y;
  } else dead.pop();
  for (const z of dead) if (z !== kept) ops.push({ kind: "drop", tensor: as(z, "ReadWrite") });
  return { ops, out, kept };
}

/** Float64 layers (and softmax) per row, from f32-rounded inputs; also each layer's values. */
function reference(xv: readonly number[], layers: readonly Layer[], m: number, softmax: boolean): { out: number[]; perLayer: number[][] } {
  const f = Math.fround;
  let h = xv.map(f);
  let k = h.length / m;
  const perLayer: number[][] = [];
  for (const layer of layers) {
    const next: number[] = [];
    for (let r = 0; r < m; r++) {
      for (let c = 0; c < layer.n; c++) {
        let acc = 0;
        for (let j = 0; j < k; j++) acc += (h[r * k + j] as number) * f(layer.w[j * layer.n + c] as number);
        let v = acc;
        if (layer.times !== undefined) v *= f(layer.times);
        if (layer.bias !== undefined) v += f(layer.bias[c] as number);
        if (layer.act === "relu") v = Number.isNaN(v) ? v : Math.max(v, 0);
        if (layer.act === "tanh") v = Math.tanh(v);
        next.push(v);
      }
    }
    perLayer.push(next);
    h = next;
    k = layer.n;
  }
  if (!softmax) return { out: h, perLayer };
  const out: number[] = [];
  for (let r = 0; r < m; r++) {
    const row = h.slice(r * k, (r + 1) * k);
    const mx = row.some(Number.isNaN) ? NaN : Math.max(...row);
    const e = row.map((v) => Math.exp(v - mx));
    const s = e.reduce((p, v) => p + v, 0);
    out.push(...e.map((v) => v / s));
  }
  return { out, perLayer };
}

function close(actual: ArrayLike<number>, want: readonly number[], why: string): void {
  expect(actual.length, why).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const [a, w] = [actual[i] as number, want[i] as number];
    if (a === w) continue; // equal infinities included
    if (Number.isNaN(w)) expect(a, `${why} (element ${i})`).toBeNaN();
    else expect(Math.abs(a - w), `${why} (element ${i}: ${a} vs ${w})`).toBeLessThanOrEqual(1e-5 + 1e-4 * Math.abs(w));
  }
}

/** The layers of an MLP `dims[0] → … → dims[L]` (seeded weights scaled by 1/√fan-in, biases, `act` between layers). */
function mlp(dims: readonly number[], act: Layer["act"], extra: Partial<Layer> = {}): Layer[] {
  return dims.slice(1).map((n, l) => ({
    w: values((dims[l] as number) * n, 70 + l, 1.7 / Math.sqrt(dims[l] as number)),
    n,
    bias: values(n, 80 + l, 0.1),
    ...(l < dims.length - 2 && act !== undefined ? { act } : {}),
    ...extra,
  }));
}

/** Runs the chain on `rt`; returns the launches and the output's values, and checks what is left. */
async function run(rt: WebGpuRuntime, xv: readonly number[], layers: readonly Layer[], m: number, softmax: boolean, keep?: number): Promise<{ launches: number; values: ArrayLike<number>; kept: ArrayLike<number> | undefined }> {
  const ctx = fusionContext(rt, stream);
  const k0 = xv.length / m;
  const x = upload(rt, ctx, xv, [m, k0]);
  let k = k0;
  const weights = layers.map((layer) => {
    const w = upload(rt, ctx, layer.w, [k, layer.n]);
    k = layer.n;
    return w;
  });
  const biases = layers.map((layer) => (layer.bias === undefined ? undefined : upload(rt, ctx, layer.bias, [layer.n])));
  const { ops, out, kept } = chainOps(x, weights, biases, layers, m, softmax, keep);
  rt.resetCounters();
  runFused(rt, ctx, ops);
  const launches = rt.counters.launches;
  const got = await rt.read(ctx.handles.getHandle(out), out, stream);
  const keptValues = kept === undefined ? undefined : await rt.read(ctx.handles.getHandle(kept), kept, stream);
  const inputs = [x, ...weights, ...biases.filter((b): b is TensorIr => b !== undefined)];
  for (const z of [out, ...(kept === undefined ? [] : [kept]), ...inputs]) ctx.handles.removeHandle(z.id);
  expect(ctx.handles.size, "only the output (and what was kept) was written").toBe(0);
  return { launches, values: got, kept: keptValues };
}

describe("matmul chain fusion", () => {
  it.each([
    // [what, dims, m, act, softmax]
    ["the served MLP 64→128→128→10, batch 8, softmax", [64, 128, 128, 10], 8, "relu", true],
    ["two layers, no softmax", [32, 48, 16], 5, "tanh", false],
    ["three layers, one row, no activation, softmax", [7, 3, 9, 2], 1, undefined, true],
    ["four layers of one column", [4, 1, 1, 1, 1], 3, "relu", false],
  ] as const)("%s: one kernel, the formula's values", async (_what, dims, m, act, softmax) => {
    const layers = mlp(dims, act);
    const bindings = 1 + 2 * layers.length + 1;
    expect(bindings, "the case fits this adapter's storage buffers").toBeLessThanOrEqual(runtime.profile.maxStorageBuffers - 1);
    const xv = values(m * (dims[0] as number), 1000 + m);
    const got = await run(runtime, xv, layers, m, softmax);
    expect(got.launches, "the whole chain is one kernel").toBe(1);
    close(got.values, reference(xv, layers, m, softmax).out, "the chain");
  });

  it("scaled layers: each layer's scale is its own uniform, values right on a replay with other scales", async () => {
    for (const times of [0.5, -2]) {
      const layers = mlp([16, 24, 8], "relu", { times });
      const xv = values(4 * 16, 7);
      const got = await run(runtime, xv, layers, 4, true);
      expect(got.launches, `one kernel (scale ${times})`).toBe(1);
      close(got.values, reference(xv, layers, 4, true).out, `scale ${times}`);
    }
  });

  it("an optimization executed again replays its launch: new scales each time, the counters of the full path, fused and in parts", async () => {
    const launcher = new Launcher(runtime.client, runtime.profile, runtime.counters);
    for (const [dims, launches] of [
      [[16, 24, 8], 1],
      [[8, runtime.profile.workgroupSize + 4, 6], 3],
    ] as const) {
      let optimization: MatmulChainOptimization | undefined;
      const counts: string[] = [];
      for (const times of [1.5, -0.5, 2]) {
        const layers = mlp(dims, "relu", { times });
        const ctx = fusionContext(runtime, stream);
        const xv = values(3 * (dims[0] as number), 17);
        const x = upload(runtime, ctx, xv, [3, dims[0] as number]);
        const weights = layers.map((layer, l) => upload(runtime, ctx, layer.w, [dims[l] as number, layer.n]));
        const biases = layers.map((layer) => upload(runtime, ctx, layer.bias ?? [], [layer.n]));
        const { ops, out } = chainOps(x, weights, biases, layers, 3, true);
        optimization ??= new MatmulChainOptimization(launcher, ops.length, runtime.fallbackPort);
        runtime.resetCounters();
        optimization.execute(ctx, ops);
        expect(runtime.counters.launches, `[${dims}] scale ${times}`).toBe(launches);
        counts.push(JSON.stringify({ ...runtime.counters, pipelineCacheHits: 0, kernelsGenerated: 0 }));
        close(await runtime.read(ctx.handles.getHandle(out), out, stream), reference(xv, layers, 3, true).out, `[${dims}] scale ${times}`);
        for (const z of [out, x, ...weights, ...biases]) ctx.handles.removeHandle(z.id);
        expect(ctx.handles.size, "only the output was written, and it is gone").toBe(0);
      }
      expect(new Set(counts).size, `[${dims}]: a replay counts what the first execution counted`).toBe(1);
    }
  });

  it("NaN and ±Inf in a row: the unfused path's values (a NaN row stays NaN, other rows are untouched)", async () => {
    const layers = mlp([8, 6, 5], undefined);
    const xv = values(3 * 8, 9);
    xv[0] = Number.NaN;
    xv[8 + 3] = Number.POSITIVE_INFINITY;
    const got = await run(runtime, xv, layers, 3, true);
    expect(got.launches).toBe(1);
    close(got.values, reference(xv, layers, 3, true).out, "NaN and Inf rows");
  });

  it("a hidden layer wider than the workgroup: one matmul block per layer and the softmax block, no intermediate written", async () => {
    const wide = runtime.profile.workgroupSize + 44;
    const layers = mlp([16, wide, 10], "relu");
    const xv = values(2 * 16, 3);
    const got = await run(runtime, xv, layers, 2, true);
    expect(got.launches, "two matmul kernels and the softmax kernel").toBe(3);
    close(got.values, reference(xv, layers, 2, true).out, "in parts");
  });

  it("an intermediate still used after the block: not the chain's (it would have to be written); the same values", async () => {
    const layers = mlp([12, 20, 6], "relu");
    const xv = values(4 * 12, 5);
    const got = await run(runtime, xv, layers, 4, true, 0);
    expect(got.launches, "more than one kernel").toBeGreaterThan(1);
    const want = reference(xv, layers, 4, true);
    close(got.values, want.out, "the output");
    close(got.kept ?? [], want.perLayer[0] ?? [], "the kept first layer");
  });

  it("random chains (seeded): 1–4 layers of 1–300 columns, 1–9 rows, scales, activations, softmax or not, a NaN now and then: the formula's values", async () => {
    let seed = 20261201;
    const next = (n: number): number => {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      return seed % n;
    };
    const widths = [1, 2, 3, 7, 10, 16, 33, 64, 128, runtime.profile.workgroupSize, runtime.profile.workgroupSize + 44];
    for (let program = 0; program < 24; program++) {
      const depth = 1 + next(4);
      const dims = [1 + next(40), ...Array.from({ length: depth }, () => widths[next(widths.length)] as number)];
      const m = 1 + next(9);
      const softmax = next(2) === 0 && depth >= 1;
      const acts = [undefined, "relu", "tanh"] as const;
      const layers: Layer[] = dims.slice(1).map((n, l) => ({
        w: values((dims[l] as number) * n, 300 + program * 7 + l, 1.5 / Math.sqrt(dims[l] as number)),
        n,
        ...(next(3) > 0 ? { bias: values(n, 400 + program * 7 + l, 0.2) } : {}),
        ...(next(3) === 0 ? { times: [0.5, -1.25, 2][next(3)] as number } : {}),
        ...(l < depth - 1 && acts[next(3)] !== undefined ? { act: acts[next(3)] ?? "relu" } : {}),
      }));
      const xv = values(m * (dims[0] as number), 500 + program);
      if (next(4) === 0) xv[next(xv.length)] = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY][next(3)] as number;
      const got = await run(runtime, xv, layers, m, softmax);
      close(got.values, reference(xv, layers, m, softmax).out, `program ${program}: dims [${dims}], ${m} rows, softmax ${softmax}, layers ${JSON.stringify(layers.map((l) => ({ n: l.n, bias: l.bias !== undefined, times: l.times, act: l.act })))}`);
    }
  });

  it("on a device with WebGPU's default 8 storage buffers: the served MLP's 8 bindings fit one kernel, 9 do not; the same values", async () => {
    const small = await createWebGpuRuntime({ maxStorageBuffers: 8, autotune: false });
    try {
      const xv = values(8 * 64, 11);
      const layers = mlp([64, 128, 128, 10], "relu");
      const got = await run(small, xv, layers, 8, true);
      expect(got.launches, "x, three weights, three biases and the output: one kernel").toBe(1);
      close(got.values, reference(xv, layers, 8, true).out, "8 storage buffers");
      const four = mlp([64, 32, 16, 12, 10], "relu");
      const got4 = await run(small, xv, four, 8, true);
      expect(got4.launches, "four layers with biases take 10 bindings: not one kernel").toBeGreaterThan(1);
      close(got4.values, reference(xv, four, 8, true).out, "four layers on 8 storage buffers");
    } finally {
      small.dispose();
    }
  });

  it("one weight in two layers (bound twice): fused where every binding fits, in parts where the second binding does not; the same values", async () => {
    // x · Wa → tanh → · Wa → tanh → · W3 → tanh → · W4, biases on the first three, softmax: 8 distinct
    // tensors with the output, 9 bindings (Wa twice).
    const xv = values(4 * 16, 13);
    const wa = values(16 * 16, 14, 0.25);
    const layers: Layer[] = [
      { w: wa, n: 16, bias: values(16, 15, 0.1), act: "tanh" },
      { w: wa, n: 16, bias: values(16, 16, 0.1), act: "tanh" },
      { w: values(16 * 12, 17, 0.25), n: 12, bias: values(12, 18, 0.1), act: "tanh" },
      { w: values(12 * 10, 19, 0.25), n: 10 },
    ];
    const runShared = async (rt: WebGpuRuntime): Promise<{ launches: number; values: ArrayLike<number> }> => {
      const ctx = fusionContext(rt, stream);
      const x = upload(rt, ctx, xv, [4, 16]);
      const w = upload(rt, ctx, wa, [16, 16]);
      const w3 = upload(rt, ctx, (layers[2] as Layer).w, [16, 12]);
      const w4 = upload(rt, ctx, (layers[3] as Layer).w, [12, 10]);
      const biases = layers.map((layer) => (layer.bias === undefined ? undefined : upload(rt, ctx, layer.bias, [layer.n])));
      const { ops, out } = chainOps(x, [w, w, w3, w4], biases, layers, 4, true);
      rt.resetCounters();
      runFused(rt, ctx, ops);
      const launches = rt.counters.launches;
      const got = await rt.read(ctx.handles.getHandle(out), out, stream);
      for (const z of [out, x, w, w3, w4, ...biases.filter((b): b is TensorIr => b !== undefined)]) ctx.handles.removeHandle(z.id);
      expect(ctx.handles.size, "only the output was written").toBe(0);
      return { launches, values: got };
    };
    const want = reference(xv, layers, 4, true).out;
    close((await runShared(runtime)).values, want, "a shared weight");
    const narrow = await createWebGpuRuntime({ maxStorageBuffers: 8, autotune: false });
    try {
      const got = await runShared(narrow);
      expect(got.launches, "9 bindings on 8 storage buffers: the chain in parts (four matmul kernels and the softmax)").toBe(5);
      close(got.values, want, "a shared weight on 8 storage buffers");
    } finally {
      narrow.dispose();
    }
  });
});
