/**
 * Every matmul configuration that fits the software adapter against a JavaScript product: odd
 * sizes (edge tiles in M, N and K), batches, broadcast batches, transposed (strided) operands,
 * exact tile multiples (the kernel without bounds checks) and integers.
 */
import type { DType } from "@weft/fusion";
import { beforeAll, describe, expect, it } from "vitest";
import { ExprGraph } from "../codegen/wgsl/expr.js";
import type { StridedLayout } from "../codegen/wgsl/indexing.js";
import { createWebGpuRuntime } from "../fusion/create-runtime.js";
import type { WebGpuRuntime } from "../fusion/web-gpu-runtime.js";
import { configFits, configName, configTile, MATMUL_CONFIGS, matmulKernel, type MatmulConfig, type MatmulSpec } from "./matmul.js";

process.env["EGL_PLATFORM"] ??= "surfaceless";

let runtime: WebGpuRuntime;

beforeAll(async () => {
  runtime = await createWebGpuRuntime({ autotune: false });
});

/** A logical `shape` stored with its last two axes swapped when `transposed` (a strided view). */
interface Operand {
  readonly values: Float32Array | Int32Array; // logical row-major values
  readonly layout: StridedLayout;
  readonly storage: Float32Array | Int32Array; // what is uploaded
}

function operand(shape: number[], dtype: DType, seed: number, transposed = false): Operand {
  const n = shape.reduce((a, b) => a * b, 1);
  const gen = (i: number): number => (dtype === "i32" ? ((i * 31 + seed) % 7) - 3 : (((i * 7919 + seed * 104729) % 1009) / 1009 - 0.5) * 2);
  const values = dtype === "i32" ? Int32Array.from({ length: n }, (_, i) => gen(i)) : Float32Array.from({ length: n }, (_, i) => gen(i));
  const rank = shape.length;
  const rows = shape[rank - 2] ?? 1;
  const cols = shape[rank - 1] ?? 1;
  if (!transposed) {
    const strides = shape.map((_, d) => shape.slice(d + 1).reduce((a, b) => a * b, 1));
    return { values, layout: { shape, strides, offset: 0 }, storage: values };
  }
  // Storage is [..., cols, rows] row-major; the view reads it as [..., rows, cols].
  const storage = dtype === "i32" ? new Int32Array(n) : new Float32Array(n);
  const plane = rows * cols;
  for (let b = 0; b < n / plane; b++) for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) storage[b * plane + c * rows + r] = values[b * plane + r * cols + c] ?? 0;
  const batchStrides = shape.slice(0, -2).map((_, d) => shape.slice(d + 1, -2).reduce((a, b) => a * b, 1) * plane);
  return { values, layout: { shape, strides: [...batchStrides, 1, rows], offset: 0 }, storage };
}

/** The product in float64 (batch dims broadcast). */
function product(a: Operand, b: Operand, outShape: number[]): number[] {
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
    for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += (a.values[ab + m * K + k] ?? 0) * (b.values[bb + k * N + n] ?? 0);
      out.push(s);
    }
  }
  return out;
}

async function runOnGpu(config: MatmulConfig, a: Operand, b: Operand, outShape: number[], dtype: DType): Promise<number[]> {
  const graph = new ExprGraph();
  const res = graph.add({ kind: "value", name: "res", dtype });
  const spec: MatmulSpec = { lhs: a.layout, rhs: b.layout, dtype, outShape, config, epilogue: { graph, inputs: [], outputs: [{ node: res, dtype }] }, label: `test ${configName(config)}` };
  const plan = matmulKernel(spec, runtime.profile);
  const client = runtime.client;
  const lhs = client.create(new Uint8Array(a.storage.buffer));
  const rhs = client.create(new Uint8Array(b.storage.buffer));
  const count = outShape.reduce((x, y) => x * y, 1);
  const out = client.empty(count * 4);
  client.launch(plan.kernel, plan.count, [
    { binding: lhs.binding(), access: "read" },
    { binding: rhs.binding(), access: "read" },
    { binding: out.binding(), access: "write" },
  ]);
  const [bytes] = await client.read([out.binding()]);
  lhs.release();
  rhs.release();
  out.release();
  const copy = (bytes ?? new Uint8Array(0)).slice();
  return [...(dtype === "i32" ? new Int32Array(copy.buffer) : new Float32Array(copy.buffer))];
}

function expectProduct(got: number[], want: number[], what: string, exact: boolean): void {
  expect(got.length, `${what}: element count`).toBe(want.length);
  let worst = 0;
  let at = -1;
  want.forEach((w, i) => {
    const err = Math.abs((got[i] ?? NaN) - w) / Math.max(1, Math.abs(w));
    if (!(err <= worst)) {
      worst = err;
      at = i;
    }
  });
  expect(worst, `${what}: worst relative error at element ${at} (got ${got[at]}, want ${want[at]})`).toBeLessThanOrEqual(exact ? 0 : 1e-4);
}

/** Shapes covering the edge cases; each is run with every fitting config. */
const CASES: readonly { name: string; lhs: number[]; rhs: number[]; out: number[]; ta?: boolean; tb?: boolean; dtype?: DType }[] = [
  { name: "odd 65×97·97×33", lhs: [65, 97], rhs: [97, 33], out: [65, 33] },
  { name: "exact tiles 128×32·32×128", lhs: [128, 32], rhs: [32, 128], out: [128, 128] },
  { name: "batched 3×(40×24·24×36)", lhs: [3, 40, 24], rhs: [3, 24, 36], out: [3, 40, 36] },
  { name: "broadcast batch [2,1]×[3]", lhs: [2, 1, 20, 17], rhs: [3, 17, 12], out: [2, 3, 20, 12] },
  { name: "transposed lhs", lhs: [70, 45], rhs: [45, 66], out: [70, 66], ta: true },
  { name: "transposed rhs, batched", lhs: [2, 33, 64], rhs: [2, 64, 65], out: [2, 33, 65], tb: true },
  { name: "both transposed", lhs: [64, 16], rhs: [16, 64], out: [64, 64], ta: true, tb: true },
  { name: "i32 (exact)", lhs: [37, 29], rhs: [29, 41], out: [37, 41], dtype: "i32" },
];

describe("matmul kernels", () => {
  it("the register-tiled configs fit the software adapter's limits, larger tiles last", () => {
    const fitting = MATMUL_CONFIGS.filter((c) => configFits(c, runtime.profile));
    expect(fitting.some((c) => c.kind === "register"), `at least one register config fits ${runtime.profile.maxInvocations} invocations`).toBe(true);
    for (const c of fitting) expect(c.wx * c.wy, `${configName(c)} respects maxComputeInvocationsPerWorkgroup`).toBeLessThanOrEqual(runtime.profile.maxInvocations);
    const areas = MATMUL_CONFIGS.filter((c) => c.kind === "register").map((c) => configTile(c)[0] * configTile(c)[1]);
    expect(areas, "the heuristic takes the last fitting config: tiles grow along the list").toEqual([...areas].sort((x, y) => x - y));
  });

  for (const c of CASES) {
    it(`every fitting register config computes ${c.name}`, async () => {
      const dtype = c.dtype ?? "f32";
      const a = operand(c.lhs, dtype, 1, c.ta);
      const b = operand(c.rhs, dtype, 2, c.tb);
      const want = product(a, b, c.out);
      // The register configs (the simple and scalar-tiled ones are covered by the autotune tests).
      for (const config of MATMUL_CONFIGS.filter((x) => x.kind === "register" && configFits(x, runtime.profile))) {
        expectProduct(await runOnGpu(config, a, b, c.out, dtype), want, `${c.name} with ${configName(config)}`, dtype === "i32");
      }
    });
  }
});
