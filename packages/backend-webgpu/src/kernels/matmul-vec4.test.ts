/**
 * The `vec4` matmul kernel on the software adapter against a float64 JavaScript product: odd sizes
 * (edge tiles in M, N and K), row and column vectors, exact tiles (no bounds checks), batches and
 * broadcast batches, each operand transposed (the `x`/`k` vec4 accesses and the scalar fallback),
 * i32, a K loop longer than Mesa's 65,535-iteration cap, and the fused epilogue through the fusers.
 */
import { StreamId } from "@weft/environment";
import { HandleContainer, type DType, type OperationIr, type TensorId, type TensorIr, type TensorStatus } from "@weft/fusion";
import { beforeAll, describe, expect, it } from "vitest";
import type { StridedLayout } from "../codegen/wgsl/indexing.js";
import { deviceProfile } from "../codegen/wgsl/types.js";
import { createWebGpuRuntime } from "../fusion/create-runtime.js";
import { chooseMatmulConfig, runMatmulBlock } from "../fusion/run-matmul.js";
import { Launcher } from "../fusion/launcher.js";
import type { WebGpuRuntime } from "../fusion/webgpu-runtime.js";
import type { WebGpuHandle } from "../handle/webgpu-handle.js";
import { operand, plainSpec, product, runMatmulOnGpu, worstRelativeError, type Operand } from "../testing/gpu-test-support.js";
import { configFits, configName, MATMUL_CONFIGS, matmulKernel, splitApplies, splitOf, type MatmulConfig } from "./matmul.js";
import { operandAxes, vec4Access, type Vec4Config } from "./matmul-vec4.js";

process.env["EGL_PLATFORM"] ??= "surfaceless";

let runtime: WebGpuRuntime;
/** Kernel keys of every launch on the runtime's client since the last reset. */
let launched: string[] = [];

beforeAll(async () => {
  runtime = await createWebGpuRuntime({ autotune: false });
  const client = runtime.client;
  const launch = client.launch.bind(client);
  client.launch = (kernel, count, bindings, uniforms) => {
    launched.push(kernel.key);
    return uniforms === undefined ? launch(kernel, count, bindings) : launch(kernel, count, bindings, uniforms);
  };
});

const runOnGpu = (config: MatmulConfig, a: Operand, b: Operand, outShape: number[], dtype: DType): Promise<number[]> => runMatmulOnGpu(runtime, config, a, b, outShape, dtype);

function expectProduct(got: number[], want: number[], what: string, exact: boolean): void {
  expect(got.length, `${what}: element count`).toBe(want.length);
  const { worst, at } = worstRelativeError(got, want);
  expect(worst, `${what}: worst relative error at element ${at} (got ${got[at]}, want ${want[at]})`).toBeLessThanOrEqual(exact ? 0 : 1e-4);
}

/** The vec4 configs without split-K that fit this adapter: the smallest tile and the largest (both edge paths). */
function vec4Configs(): Vec4Config[] {
  const fitting = MATMUL_CONFIGS.filter((c): c is Vec4Config => c.kind === "vec4" && splitOf(c) === 1 && configFits(c, runtime.profile));
  const first = fitting[0];
  const last = fitting[fitting.length - 1];
  if (first === undefined || last === undefined) throw new Error(`no vec4 config fits ${runtime.profile.key}`);
  return first === last ? [first] : [first, last];
}

/** The split-K configs that fit this adapter, and the smallest vec4 tile split 2 and 3 ways (short shares, edge tiles). */
function splitConfigs(): Vec4Config[] {
  const listed = MATMUL_CONFIGS.filter((c): c is Vec4Config => c.kind === "vec4" && splitOf(c) > 1 && configFits(c, runtime.profile));
  const small = vec4Configs()[0];
  if (small === undefined) throw new Error("a vec4 config fits");
  return [...listed, { ...small, splitK: 2 }, { ...small, splitK: 3 }];
}

interface Case {
  readonly name: string;
  readonly lhs: number[];
  readonly rhs: number[];
  readonly out: number[];
  readonly ta?: boolean;
  readonly tb?: boolean;
  readonly offset?: number;
  readonly dtype?: DType;
}

const CASES: readonly Case[] = [
  { name: "odd 65×97·97×33 (edges in M, N and K; K not a multiple of 4: scalar lhs loads)", lhs: [65, 97], rhs: [97, 33], out: [65, 33] },
  { name: "a row vector 1×40·40×132", lhs: [1, 40], rhs: [40, 132], out: [1, 132] },
  { name: "a column vector 132×40·40×1", lhs: [132, 40], rhs: [40, 1], out: [132, 1] },
  { name: "exact tiles 128×128·128×128", lhs: [128, 128], rhs: [128, 128], out: [128, 128] },
  { name: "batched 3×(40×24·24×36)", lhs: [3, 40, 24], rhs: [3, 24, 36], out: [3, 40, 36] },
  { name: "broadcast batch [2,1]×[3]", lhs: [2, 1, 20, 16], rhs: [3, 16, 12], out: [2, 3, 20, 12] },
  { name: "transposed lhs, aligned (vec4 along M)", lhs: [68, 48], rhs: [48, 64], out: [68, 64], ta: true },
  { name: "transposed rhs, batched, aligned (vec4 along K)", lhs: [2, 36, 64], rhs: [2, 64, 68], out: [2, 36, 68], tb: true },
  { name: "both transposed, odd (scalar loads)", lhs: [70, 45], rhs: [45, 66], out: [70, 66], ta: true, tb: true },
  { name: "views at an unaligned offset (scalar loads)", lhs: [64, 32], rhs: [32, 64], out: [64, 64], offset: 1 },
  { name: "i32 (exact)", lhs: [37, 29], rhs: [29, 41], out: [37, 41], dtype: "i32" },
];

describe("vec4 matmul kernel", () => {
  it("picks vec4 loads along each operand's contiguous axis and scalar loads only where unaligned", () => {
    const axes = (l: StridedLayout, which: "lhs" | "rhs") => vec4Access(operandAxes(l, which, []));
    const row = (r: number, c: number): StridedLayout => ({ shape: [r, c], strides: [c, 1], offset: 0 });
    const col = (r: number, c: number): StridedLayout => ({ shape: [r, c], strides: [1, r], offset: 0 });
    expect(axes(row(64, 32), "lhs"), "a row-major lhs is contiguous along K").toBe("k");
    expect(axes(col(64, 32), "lhs"), "a transposed lhs is contiguous along M").toBe("x");
    expect(axes(row(32, 64), "rhs"), "a row-major rhs is contiguous along N").toBe("x");
    expect(axes(col(32, 64), "rhs"), "a transposed rhs is contiguous along K").toBe("k");
    expect(axes(row(64, 33), "lhs"), "K = 33 breaks 16-byte alignment of the rows").toBe("scalar-k");
    expect(axes({ ...row(64, 32), offset: 2 }, "lhs"), "an offset of 2 elements breaks alignment").toBe("scalar-k");
  });

  it("an exact-tile product compiles to straight-line vec4 loads without bounds checks", () => {
    const h200 = deviceProfile(
      { maxComputeInvocationsPerWorkgroup: 1024, maxComputeWorkgroupSizeX: 1024, maxComputeWorkgroupsPerDimension: 65_535, maxStorageBuffersPerShaderStage: 10, maxComputeWorkgroupStorageSize: 49_152 },
      { has: () => false },
    );
    const config = chooseMatmulConfig(2048, 2048, h200);
    expect(config.kind, "the heuristic prefers the vec4 kernel for a large dense f32 product").toBe("vec4");
    const dense = (n: number): StridedLayout => ({ shape: [n, n], strides: [n, 1], offset: 0 });
    const source = matmulKernel(plainSpec(config, dense(2048), dense(2048), [2048, 2048], "f32"), h200).kernel.source;
    expect(source, "both operands are read as vec4s").toContain("var<storage, read_write> lhs: array<vec4<f32>>");
    expect(source).toContain("var<storage, read_write> rhs: array<vec4<f32>>");
    expect(source.includes("< 2048u"), "no bounds check on M, N or K when tiles divide them").toBe(false);
    const edge = matmulKernel(plainSpec(config, dense(2047), dense(2047), [2047, 2047], "f32"), h200).kernel.source;
    expect(edge.includes("< 2047u"), "the control case: an edge size keeps its checks").toBe(true);
  });

  it("the heuristic takes the largest vec4 tile that still launches enough workgroups to fill the GPU", () => {
    const h200 = deviceProfile(
      { maxComputeInvocationsPerWorkgroup: 1024, maxComputeWorkgroupSizeX: 1024, maxComputeWorkgroupsPerDimension: 65_535, maxStorageBuffersPerShaderStage: 10, maxComputeWorkgroupStorageSize: 49_152 },
      { has: () => false },
    );
    const pick = (m: number, n: number, batches = 1) => configName(chooseMatmulConfig(m, n, h200, batches));
    expect(pick(2048, 2048), "2048²: 128×128 tiles give 256 workgroups").toBe("vec416x16r8x8k16");
    expect(pick(4096, 4096), "4096²: the same tile").toBe("vec416x16r8x8k16");
    expect(pick(1024, 1024), "1024²: 128×128 would give 64 workgroups, 128×64 gives 128").toBe("vec416x16r8x4k16");
    expect(pick(1024, 1024, 4), "a batch of 4 fills the GPU with 128×128 tiles").toBe("vec416x16r8x8k16");
    expect(pick(32, 32), "a small output keeps the reference kernel").toBe("simple8x8");
    expect(chooseMatmulConfig(2048, 2048, h200, 1, "bool").kind, "bool keeps the scalar tiled kernel").toBe("tiled");
    const soft = chooseMatmulConfig(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, runtime.profile);
    expect(soft.kind === "vec4" && soft.wx * soft.wy <= runtime.profile.maxInvocations, `this adapter's pick ${configName(soft)} fits its invocation limit`).toBe(true);
  });

  for (const c of CASES) {
    it(`computes ${c.name}`, async () => {
      const dtype = c.dtype ?? "f32";
      const opts = (transposed: boolean | undefined) => ({ ...(transposed === undefined ? {} : { transposed }), ...(c.offset === undefined ? {} : { offset: c.offset }) });
      const a = operand(c.lhs, dtype, 1, opts(c.ta));
      const b = operand(c.rhs, dtype, 2, opts(c.tb));
      const want = product(a, b, c.out);
      for (const config of vec4Configs()) expectProduct(await runOnGpu(config, a, b, c.out, dtype), want, `${c.name} with ${configName(config)}`, dtype === "i32");
      const k = c.lhs[c.lhs.length - 1] ?? 1;
      for (const config of splitConfigs().filter((s) => splitApplies(s, k))) {
        expectProduct(await runOnGpu(config, a, b, c.out, dtype), want, `${c.name} with split-K ${configName(config)}`, dtype === "i32");
      }
    });
  }

  it("split-K sums every share: uneven shares, an edge K step, every split of the list", async () => {
    // K = 520: 33 steps of 16 (the last one partial), shared 2, 3, 4 and 8 ways (shares of 4 or 5 steps).
    const a = operand([33, 520], "f32", 7);
    const b = operand([520, 70], "f32", 8);
    const want = product(a, b, [33, 70]);
    for (const config of splitConfigs()) expectProduct(await runOnGpu(config, a, b, [33, 70], "f32"), want, `33×520·520×70 with ${configName(config)}`, false);
    const ai = operand([3, 24, 72], "i32", 9, { transposed: true });
    const bi = operand([3, 72, 20], "i32", 10);
    const wantI = product(ai, bi, [3, 24, 20]);
    for (const config of splitConfigs().filter((s) => splitApplies(s, 72))) expectProduct(await runOnGpu(config, ai, bi, [3, 24, 20], "i32"), wantI, `batched i32 with ${configName(config)}`, true);
    const s8 = splitConfigs().find((c) => splitOf(c) === 8);
    if (s8 !== undefined) {
      expect(splitApplies(s8, 100), "7 steps of 16 cannot be shared 8 ways").toBe(false);
      expect(() => matmulKernel(plainSpec(s8, operand([4, 100], "f32", 1).layout, operand([100, 4], "f32", 2).layout, [4, 4], "f32"), runtime.profile), "a split with an empty share is refused, not run").toThrow(/split 8 ways/);
    }
  });

  it("a K loop of 65,536 steps sums every step (nested under Mesa's 65,535-iteration cap)", async () => {
    const config: Vec4Config = { kind: "vec4", wx: 4, wy: 4, rm: 4, rn: 4, tk: 4 };
    const K = 65_536 * config.tk;
    const a = operand([4, K], "i32", 3);
    const b = operand([K, 4], "i32", 5);
    const source = matmulKernel(plainSpec(config, a.layout, b.layout, [4, 4], "i32"), runtime.profile).kernel.source;
    expect(source, "the K loop runs 2 steps per iteration, 32,768 iterations").toContain("for (var tu = 0u; tu < 32768u;");
    expectProduct(await runOnGpu(config, a, b, [4, 4], "i32"), product(a, b, [4, 4]), `K = ${K}`, true);
  });

  it("the simple reference sums a K of 70,000 completely and the scalar tiled kernels refuse it", async () => {
    const K = 70_000;
    const a = operand([2, K], "i32", 3);
    const b = operand([K, 3], "i32", 5);
    const simple: MatmulConfig = { kind: "simple", wx: 8, wy: 8 };
    expectProduct(await runOnGpu(simple, a, b, [2, 3], "i32"), product(a, b, [2, 3]), `simple with K = ${K}`, true);
    const tiled = MATMUL_CONFIGS.find((c) => c.kind === "tiled");
    if (tiled === undefined) throw new Error("a tiled config exists");
    expect(() => matmulKernel(plainSpec(tiled, a.layout, b.layout, [2, 3], "i32"), runtime.profile), "its per-k loops would exceed Mesa's cap: an UnsupportedError, not a wrong sum").toThrow(/65,535/);
  });
});

describe("vec4 matmul with a fused epilogue", () => {
  let nextId = 1;
  const stream = StreamId.DEFAULT;
  const t = (shape: number[], status: TensorStatus = "ReadOnly"): TensorIr => ({ id: nextId++ as TensorId, shape, dtype: "f32", status });
  /** Uploads f32 `data` of `shape` as a fresh tensor registered in `ctx`. */
  const uploader =
    (ctx: { readonly handles: HandleContainer<WebGpuHandle> }) =>
    (data: Float32Array, shape: number[]): TensorIr => {
      const x = t(shape);
      ctx.handles.registerHandle(x.id, runtime.upload({ data, shape, dtype: "f32" } as never, stream));
      return x;
    };

  it("matmul then add bias then relu runs as ONE vec4 launch with the CPU's values", async () => {
    const ctx = { handles: new HandleContainer<WebGpuHandle>((h) => runtime.releaseHandle(h)), stream };
    const [M, K, N] = [72, 40, 68];
    const a = operand([M, K], "f32", 1);
    const b = operand([K, N], "f32", 2);
    const biasValues = Float32Array.from({ length: N }, (_, i) => ((i % 5) - 2) * 0.75);
    const upload = uploader(ctx);
    const [lhs, rhs, bias] = [upload(a.values as Float32Array, [M, K]), upload(b.values as Float32Array, [K, N]), upload(biasValues, [N])];
    const [prod, biased, out] = [t([M, N]), t([M, N]), t([M, N])];
    const ops: OperationIr[] = [
      { kind: "matmul", lhs, rhs, out: prod },
      { kind: "binary", op: "add", lhs: { ...prod, status: "ReadWrite" }, rhs: bias, out: biased },
      { kind: "unary", op: "relu", input: { ...biased, status: "ReadWrite" }, out },
    ];
    runtime.resetCounters();
    launched = [];
    // The engine's loop: the best ready fuser takes the ops (here the matmul fuser, all three).
    const fusers = runtime.fusers();
    for (const op of ops) for (const f of fusers) f.fuse(op);
    let best: (typeof fusers)[number] | undefined;
    for (const f of fusers) if (f.properties().ready && (best === undefined || f.properties().score > best.properties().score)) best = f;
    if (best === undefined) throw new Error("a fuser accepts matmul + add + relu");
    const optimization = best.finish();
    expect(optimization.len, "the fuser takes the matmul and its whole epilogue").toBe(3);
    optimization.execute(ctx, ops);
    expect(runtime.counters.launches, "matmul, bias and relu are one kernel").toBe(1);
    expect(launched[0]?.startsWith("matmul:vec4"), `the heuristic's vec4 kernel ran (${launched[0] ?? "none"})`).toBe(true);
    const got = [...(await runtime.read(ctx.handles.getHandle(out), out, stream))];
    const want = product(a, b, [M, N]).map((v, i) => Math.max(0, v + (biasValues[i % N] ?? 0)));
    expectProduct(got, want, "relu(a·b + bias)", false);
  });

  it("a split-K product runs its epilogue (an input, a parameter, relu) in the combining kernel", async () => {
    const ctx = { handles: new HandleContainer<WebGpuHandle>((h) => runtime.releaseHandle(h)), stream };
    const [M, K, N] = [40, 96, 36];
    const a = operand([M, K], "f32", 3);
    const b = operand([K, N], "f32", 4);
    const biasValues = Float32Array.from({ length: N }, (_, i) => ((i % 7) - 3) * 0.5);
    const upload = uploader(ctx);
    const [lhs, rhs, bias] = [upload(a.values as Float32Array, [M, K]), upload(b.values as Float32Array, [K, N]), upload(biasValues, [N])];
    const [prod, scaled, biased, out] = [t([M, N]), t([M, N]), t([M, N]), t([M, N])];
    const ops: OperationIr[] = [
      { kind: "matmul", lhs, rhs, out: prod },
      { kind: "binary-scalar", op: "mul", lhs: { ...prod, status: "ReadWrite" }, scalar: 0.5, scalarFirst: false, out: scaled },
      { kind: "binary", op: "add", lhs: { ...scaled, status: "ReadWrite" }, rhs: bias, out: biased },
      { kind: "unary", op: "relu", input: { ...biased, status: "ReadWrite" }, out },
    ];
    const small = vec4Configs()[0];
    if (small === undefined) throw new Error("a vec4 config fits");
    const split: Vec4Config = { ...small, splitK: 3 };
    launched = [];
    runMatmulBlock(new Launcher(runtime.client, runtime.profile, runtime.counters), ctx, ops, true, { choose: () => ({ config: split }), generation: 0 });
    expect(launched.map((k) => k.split(":")[0]), "the partial products, then their sum with the epilogue").toEqual(["matmul", "matmul-combine"]);
    const got = [...(await runtime.read(ctx.handles.getHandle(out), out, stream))];
    const want = product(a, b, [M, N]).map((v, i) => Math.max(0, Math.fround(v * 0.5) + (biasValues[i % N] ?? 0)));
    expectProduct(got, want, "relu(split-K a·b · 0.5 + bias)", false);
    for (const x of [lhs, rhs, bias, out]) ctx.handles.removeHandle(x.id);
  });

  it("a winner whose kernel is still compiling never stalls the block: the ready stand-in launches, and the winner takes over once compiled", async () => {
    const [M, K, N] = [24, 40, 20];
    const a = operand([M, K], "f32", 5);
    const b = operand([K, N], "f32", 6);
    const biasValues = Float32Array.from({ length: N }, (_, i) => (i % 5) - 2);
    const want = product(a, b, [M, N]).map((v, i) => Math.max(0, v + (biasValues[i % N] ?? 0)));
    const [standIn, winner] = vec4Configs().length > 1 ? vec4Configs() : [MATMUL_CONFIGS[0], vec4Configs()[0]];
    if (winner?.kind !== "vec4") throw new Error("a vec4 config fits");
    if (standIn === undefined || winner === undefined) throw new Error("two configs fit");
    const launcher = new Launcher(runtime.client, runtime.profile, runtime.counters);
    /** One execution of relu(a·b + bias) with `choose`; the key prefix of the product's kernel. */
    const once = async (choose: () => { config: MatmulConfig; standIn?: MatmulConfig }): Promise<string> => {
      const ctx = { handles: new HandleContainer<WebGpuHandle>((h) => runtime.releaseHandle(h)), stream };
      const upload = uploader(ctx);
      const [lhs, rhs, bias] = [upload(a.values as Float32Array, [M, K]), upload(b.values as Float32Array, [K, N]), upload(biasValues, [N])];
      const [prod, biased, out] = [t([M, N]), t([M, N]), t([M, N])];
      launched = [];
      runMatmulBlock(launcher, ctx, [
        { kind: "matmul", lhs, rhs, out: prod },
        { kind: "binary", op: "add", lhs: { ...prod, status: "ReadWrite" }, rhs: bias, out: biased },
        { kind: "unary", op: "relu", input: { ...biased, status: "ReadWrite" }, out },
      ], true, { choose, generation: 0 });
      const key = launched[0] ?? "none";
      expectProduct([...(await runtime.read(ctx.handles.getHandle(out), out, stream))], want, `relu(a·b + bias) by ${key.split("(")[0]}`, false);
      for (const x of [lhs, rhs, bias, out]) ctx.handles.removeHandle(x.id);
      return key.split("(")[0] ?? key;
    };
    const standInKey = `matmul:${configName(standIn)}:f32`;
    const winnerKey = `matmul:${configName(winner)}:f32`;
    expect(await once(() => ({ config: standIn })), "the heuristic's kernel (compiled by this run and its read)").toBe(standInKey);
    expect(await once(() => ({ config: winner, standIn })), "the winner's kernel is not compiled yet: the stand-in runs").toBe(standInKey);
    // The winner's compile started with that execution; wait for it (the software device compiles inside the call).
    for (let i = 0; i < 200 && (await once(() => ({ config: winner, standIn }))) !== winnerKey; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await once(() => ({ config: winner, standIn })), "compiled: the winner runs").toBe(winnerKey);
    // Neither ready: the winner itself launches (and waits for its compile), never an uncompiled stand-in.
    const fresh: Vec4Config = { ...winner, splitK: 2 };
    const never = MATMUL_CONFIGS.find((c) => c.kind === "tiled" && configFits(c, runtime.profile)) ?? MATMUL_CONFIGS[0];
    if (never === undefined) throw new Error("a tiled config fits");
    expect(await once(() => ({ config: fresh, standIn: never })), "a stand-in that is not ready is never used").toBe(`matmul:${configName(fresh)}:f32`);
  });
});
