/**
 * Every matmul configuration that fits the software adapter against a JavaScript product: odd
 * sizes (edge tiles in M, N and K), batches, broadcast batches, transposed (strided) operands,
 * exact tile multiples (the kernel without bounds checks) and integers.
 */
import type { DType } from "@weft/fusion";
import { beforeAll, describe, expect, it } from "vitest";
import { createWebGpuRuntime } from "../fusion/create-runtime.js";
import type { WebGpuRuntime } from "../fusion/webgpu-runtime.js";
import { operand, product, runMatmulOnGpu, worstRelativeError, type Operand } from "../testing/gpu-test-support.js";
import { configFits, configName, configTile, MATMUL_CONFIGS, type MatmulConfig } from "./matmul.js";

process.env["EGL_PLATFORM"] ??= "surfaceless";

let runtime: WebGpuRuntime;

beforeAll(async () => {
  runtime = await createWebGpuRuntime({ autotune: false });
});

const runOnGpu = (config: MatmulConfig, a: Operand, b: Operand, outShape: number[], dtype: DType): Promise<number[]> => runMatmulOnGpu(runtime, config, a, b, outShape, dtype);

function expectProduct(got: number[], want: number[], what: string, exact: boolean): void {
  expect(got.length, `${what}: element count`).toBe(want.length);
  const { worst, at } = worstRelativeError(got, want);
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
      const a = operand(c.lhs, dtype, 1, { transposed: c.ta });
      const b = operand(c.rhs, dtype, 2, { transposed: c.tb });
      const want = product(a, b, c.out);
      // The register configs (the simple and scalar-tiled ones are covered by the autotune tests).
      for (const config of MATMUL_CONFIGS.filter((x) => x.kind === "register" && configFits(x, runtime.profile))) {
        expectProduct(await runOnGpu(config, a, b, c.out, dtype), want, `${c.name} with ${configName(config)}`, dtype === "i32");
      }
    });
  }
});
