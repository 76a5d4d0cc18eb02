/**
 * Test support for this package's Dawn-backed suites, shared so each helper is written once: the
 * device and fusion-context setup, a driver of the real fusion engine, the u32 WGSL kernels the
 * server suites launch, and the matmul suites' operands, float64 reference product and GPU runner.
 *
 * Not part of the published API: neither the package index nor `./testing` re-exports it, and it
 * imports no vitest (so it compiles with the library; assertions stay in the `*.test.ts` files).
 *
 * @module
 */
import type { StreamId } from "@weft/environment";
import { HandleContainer, type DType, type OperationIr, type TensorId, type TensorIr, type TensorStatus } from "@weft/fusion";
import { MultiStream, type ExecutionEnv } from "@weft/fusion/internal";
import { ExprGraph } from "../codegen/wgsl/expr.js";
import type { StridedLayout } from "../codegen/wgsl/indexing.js";
import { requestWebGpuDevice, type WebGpuDevice } from "../device/request-device.js";
import type { WebGpuRuntime } from "../fusion/webgpu-runtime.js";
import type { WebGpuHandle } from "../handle/webgpu-handle.js";
import type { WgslKernel } from "../kernel.js";
import { configName, launchMatmul, type MatmulConfig, type MatmulSpec } from "../kernels/matmul.js";
import type { KernelLaunchPlan } from "../kernels/elementwise.js";
import type { KernelBinding } from "@weft/server";

/**
 * The device the server suites run on: Vulkan when `WEFT_WEBGPU_BACKEND=vulkan` (a GPU machine),
 * else whatever Dawn picks (Mesa's software GLES here). The caller owns it and destroys it.
 */
export function requestTestDevice(): Promise<WebGpuDevice> {
  return requestWebGpuDevice({ backend: process.env["WEFT_WEBGPU_BACKEND"] === "vulkan" ? "vulkan" : "auto" });
}

/** The execution context the runtime's ops and optimizations take: handles plus one stream. */
export interface FusionTestContext {
  readonly handles: HandleContainer<WebGpuHandle>;
  readonly stream: StreamId;
}

/** A fresh context on `stream` whose handle container releases through `runtime` (nothing shared between tests). */
export function fusionContext(runtime: WebGpuRuntime, stream: StreamId): FusionTestContext {
  return { handles: new HandleContainer<WebGpuHandle>((h) => runtime.releaseHandle(h)), stream };
}

/**
 * The IR tensors a fusion suite writes its ops with: `t(shape)` a fresh `f32` tensor (ids from one
 * counter per call of this function, so per suite), `as(x, status)` the same tensor with another
 * status (a `ReadWrite` last use, a `drop`'s).
 */
export function irTensors(): { t: (shape: readonly number[], status?: TensorStatus) => TensorIr; as: (x: TensorIr, status: TensorStatus) => TensorIr } {
  let nextId = 1;
  return {
    t: (shape, status = "ReadOnly") => ({ id: nextId++ as TensorId, shape, dtype: "f32", status }),
    as: (x, status) => ({ ...x, status }),
  };
}

/** `n` seeded values in `[-scale, scale)` (an LCG: the same seed, the same values). */
export function seededValues(n: number, seed: number, scale = 1): number[] {
  let s = seed >>> 0;
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s / 2 ** 32 - 0.5) * 2 * scale;
  });
}

/** Uploads `values` as the f32 tensor `x` (its id and shape) on `ctx`'s stream and registers its handle; returns `x`. */
export function uploadF32(runtime: WebGpuRuntime, ctx: FusionTestContext, x: TensorIr, values: readonly number[]): TensorIr {
  ctx.handles.registerHandle(x.id, runtime.upload({ data: Float32Array.from(values), shape: [...x.shape], dtype: "f32" }, ctx.stream));
  return x;
}

/**
 * Runs `ops` through the fusion engine itself: the real `MultiStream` (queue, relative form,
 * `Processor`, policy, explorer, plan store) over `runtime`'s fusers, each op registered on
 * `ctx.stream` as a tensor method would, then the stream drained. Blocks are chosen exactly as in
 * production; afterwards `ctx.handles` holds every output still in use. A bug the engine caught is
 * rethrown, and so is the first failure it put on an output (these suites expect success).
 */
export function runFused(runtime: WebGpuRuntime, ctx: FusionTestContext, ops: readonly OperationIr[]): void {
  const streams = new MultiStream<WebGpuHandle>(() => runtime.fusers(), { queueLimit: Math.max(1, ops.length + 1) });
  const bugs: Error[] = [];
  const env: ExecutionEnv<WebGpuHandle> = { runtime, handles: ctx.handles, onBlock: () => undefined, onBug: (error) => bugs.push(error) };
  for (const op of ops) streams.register(ctx.stream, op, env);
  streams.drain(ctx.stream, env);
  const [bug] = bugs;
  if (bug !== undefined) throw bug;
  for (const op of ops) {
    const error = op.kind === "drop" ? undefined : ctx.handles.getError(op.out.id);
    if (error !== undefined) throw error;
  }
}

/** `values` as little-endian u32 bytes, the layout the u32 test kernels read. */
export const u32Bytes = (values: readonly number[]): Uint8Array => new Uint8Array(new Uint32Array(values).buffer);

/** The u32 values in `bytes` (a view, honouring its offset); a missing array is a test bug and throws. */
export function asU32(bytes: Uint8Array | undefined): number[] {
  if (bytes === undefined) throw new Error("a read returns one array per binding");
  return [...new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)];
}

/** `x[i] += 1` in place over u32; `key` keeps each suite's pipelines apart. */
export const incrementKernel = (key: string): WgslKernel => ({
  key,
  source: `
@group(0) @binding(0) var<storage, read_write> x: array<u32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < arrayLength(&x)) { x[g.x] = x[g.x] + 1u; }
}`,
});

/** `out[i] = a[i] * 2u` over u32; `key` keeps each suite's pipelines apart. */
export const doubleKernel = (key: string): WgslKernel => ({
  key,
  source: `
@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < arrayLength(&out)) { out[g.x] = a[g.x] * 2u; }
}`,
});

/** A kernel labelled "broken" that does not compile (it names the undeclared `undeclaredName`). */
export const brokenKernel = (key: string, undeclaredName: string): WgslKernel => ({
  key,
  label: "broken",
  source: `
@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) { out[g.x] = a[g.x] + ${undeclaredName}; }`,
});

/** A logical matmul operand, its strided view and the storage uploaded for it. */
export interface Operand {
  /** Logical row-major values (what the reference product reads). */
  readonly values: Float32Array | Int32Array;
  readonly layout: StridedLayout;
  /** What is uploaded: `values` behind `layout.offset` padding elements, transposed if asked. */
  readonly storage: Float32Array | Int32Array;
}

/** How {@link operand} stores its values. */
export interface OperandOptions {
  /** Store the last two axes swapped (a strided, transposed view). */
  readonly transposed?: boolean | undefined;
  /** Padding elements before the operand (a view into a larger buffer). */
  readonly offset?: number | undefined;
}

/**
 * A deterministic operand of logical `shape` (small integers for i32, values in [-1, 1) for f32,
 * varied by `seed`); `options` choose a transposed and/or offset storage of the same values.
 */
export function operand(shape: number[], dtype: DType, seed: number, options: OperandOptions = {}): Operand {
  const n = shape.reduce((a, b) => a * b, 1);
  const gen = (i: number): number => (dtype === "i32" ? ((i * 31 + seed) % 7) - 3 : (((i * 7919 + seed * 104729) % 1009) / 1009 - 0.5) * 2);
  const make = (len: number): Float32Array | Int32Array => (dtype === "i32" ? new Int32Array(len) : new Float32Array(len));
  const values = make(n);
  values.forEach((_, i) => (values[i] = gen(i)));
  const rank = shape.length;
  const rows = shape[rank - 2] ?? 1;
  const cols = shape[rank - 1] ?? 1;
  const plane = rows * cols;
  const offset = options.offset ?? 0;
  const storage = make(n + offset);
  const batchStrides = shape.slice(0, -2).map((_, d) => shape.slice(d + 1, -2).reduce((a, b) => a * b, 1) * plane);
  for (let b = 0; b < n / plane; b++) {
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const at = options.transposed === true ? c * rows + r : r * cols + c;
        storage[offset + b * plane + at] = values[b * plane + r * cols + c] ?? 0;
      }
    }
  }
  const strides = options.transposed === true ? [...batchStrides, 1, rows] : [...batchStrides, cols, 1];
  return { values, layout: { shape, strides, offset }, storage };
}

/** The reference product `a · b` in float64, batch dims broadcast, row-major over `outShape`. */
export function product(a: Operand, b: Operand, outShape: number[]): number[] {
  const rank = outShape.length;
  const [M, N] = [outShape[rank - 2] ?? 1, outShape[rank - 1] ?? 1];
  const K = a.layout.shape[a.layout.shape.length - 1] ?? 1;
  const batchShape = outShape.slice(0, -2);
  const batches = batchShape.reduce((x, y) => x * y, 1);
  const batchIndex = (shape: readonly number[], batch: number): number => {
    const own = shape.slice(0, -2);
    let index = 0;
    let rest = batch;
    let mul = 1;
    for (let d = batchShape.length - 1; d >= 0; d--) {
      const coord = rest % (batchShape[d] ?? 1);
      rest = Math.floor(rest / (batchShape[d] ?? 1));
      const od = d - (batchShape.length - own.length);
      if (od >= 0) {
        const size = own[od] ?? 1;
        index += (size === 1 ? 0 : coord) * mul;
        mul *= size;
      }
    }
    return index;
  };
  const out: number[] = [];
  for (let bt = 0; bt < batches; bt++) {
    const ab = batchIndex(a.layout.shape, bt) * M * K;
    const bb = batchIndex(b.layout.shape, bt) * K * N;
    for (let m = 0; m < M; m++) {
      for (let n = 0; n < N; n++) {
        let s = 0;
        for (let k = 0; k < K; k++) s += (a.values[ab + m * K + k] ?? 0) * (b.values[bb + k * N + n] ?? 0);
        out.push(s);
      }
    }
  }
  return out;
}

/** A matmul spec with no epilogue (the product is the output), labelled with the config's name. */
export function plainSpec(config: MatmulConfig, a: StridedLayout, b: StridedLayout, outShape: number[], dtype: DType): MatmulSpec {
  const graph = new ExprGraph();
  const res = graph.add({ kind: "value", name: "res", dtype });
  return { lhs: a, rhs: b, dtype, outShape, config, epilogue: { graph, inputs: [], outputs: [{ node: res, dtype }] }, label: `test ${configName(config)}` };
}

/** Runs the `config` kernel for `a · b` on `runtime`'s client and reads the product back; frees every buffer it made. */
export async function runMatmulOnGpu(runtime: WebGpuRuntime, config: MatmulConfig, a: Operand, b: Operand, outShape: number[], dtype: DType): Promise<number[]> {
  const client = runtime.client;
  const lhs = client.create(new Uint8Array(a.storage.buffer));
  const rhs = client.create(new Uint8Array(b.storage.buffer));
  const count = outShape.reduce((x, y) => x * y, 1);
  const out = client.empty(count * 4);
  const run = {
    plan: (_key: string, build: () => KernelLaunchPlan) => build(),
    launch: (p: KernelLaunchPlan, bindings: readonly KernelBinding[]) => client.launch(p.kernel, p.count, bindings),
    empty: (bytes: number) => client.empty(Math.max(4, bytes)),
  };
  launchMatmul(plainSpec(config, a.layout, b.layout, outShape, dtype), runtime.profile, run, { binding: lhs.binding(), access: "read" }, { binding: rhs.binding(), access: "read" }, [], [{ binding: out.binding(), access: "write" }]);
  const [bytes] = await client.read([out.binding()]);
  lhs.release();
  rhs.release();
  out.release();
  const copy = (bytes ?? new Uint8Array(0)).slice();
  return [...(dtype === "i32" ? new Int32Array(copy.buffer) : new Float32Array(copy.buffer))];
}

/**
 * The worst relative error of `got` against `want` (scaled by max(1, |want|)) and where it is;
 * a missing or NaN element counts as the worst (`worst` NaN). `at` is -1 when every element matches.
 */
export function worstRelativeError(got: readonly number[], want: readonly number[]): { worst: number; at: number } {
  let worst = 0;
  let at = -1;
  want.forEach((w, i) => {
    const err = Math.abs((got[i] ?? NaN) - w) / Math.max(1, Math.abs(w));
    if (!(err <= worst)) {
      worst = err;
      at = i;
    }
  });
  return { worst, at };
}
