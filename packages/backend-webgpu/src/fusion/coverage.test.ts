/**
 * The paths the first test suite left out: any/all, multi-pass arg reductions, the 2-D dispatch of
 * big tensors, blocks cut at the storage-binding limit, and f16 (or its typed refusal).
 */
import { StreamId, UnsupportedError } from "@weft/environment";
import { type DType, type OperationIr, type TensorId, type TensorIr, type TensorStatus } from "@weft/fusion";
import { beforeAll, describe, expect, it } from "vitest";
import { REDUCE_ITERATIONS } from "../kernels/reduce.js";
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

const t = (shape: number[], dtype: DType = "f32", status: TensorStatus = "ReadOnly"): TensorIr => ({ id: nextId++ as TensorId, shape, dtype, status });
const as = (x: TensorIr, status: TensorStatus): TensorIr => ({ ...x, status });
const newContext = (): FusionTestContext => fusionContext(runtime, stream);
type Ctx = FusionTestContext;
const runFused = (ctx: Ctx, ops: OperationIr[]): void => runFusedOn(runtime, ctx, ops);

function upload(ctx: Ctx, data: Float32Array | Int32Array | Uint8Array | Uint16Array, shape: number[], dtype: DType): TensorIr {
  const x = t(shape, dtype);
  ctx.handles.registerHandle(x.id, runtime.upload({ data, shape, dtype } as never, stream));
  return x;
}

const read = async (ctx: Ctx, x: TensorIr) => runtime.read(ctx.handles.getHandle(x), x, stream);


describe("WebGpuRuntime coverage", () => {
  it.each([
    ["any", "a single true at the very end", 1],
    ["all", "a single false at the very end", 0],
  ] as const)("%s over 2^17 bools finds %s (multi-pass)", async (op, _what, want) => {
    const ctx = newContext();
    const n = 1 << 17;
    const chunk = runtime.profile.workgroupSize * REDUCE_ITERATIONS;
    expect(n, "the reduction needs more than one pass").toBeGreaterThan(chunk);
    const values = new Uint8Array(n).fill(op === "any" ? 0 : 1);
    values[n - 1] = op === "any" ? 1 : 0;
    const x = upload(ctx, values, [n], "bool");
    const out = t([], "bool");
    runtime.resetCounters();
    runtime.executeOperation({ kind: "reduce", op, input: x, axes: [0], keepDims: false, out }, ctx);
    expect(runtime.counters.launches, "a partial pass then a final pass").toBe(2);
    expect([...(await read(ctx, out))], "the decisive element sits in the last chunk").toEqual([want]);

    const neutral = upload(ctx, new Uint8Array(n).fill(op === "any" ? 0 : 1), [n], "bool");
    const out2 = t([], "bool");
    runtime.executeOperation({ kind: "reduce", op, input: neutral, axes: [0], keepDims: false, out: out2 }, ctx);
    expect([...(await read(ctx, out2))], "without the decisive element the answer flips").toEqual([1 - want]);
  });

  it("any/all along an axis of a small tensor", async () => {
    const ctx = newContext();
    const x = upload(ctx, Uint8Array.from([0, 0, 1, 1, 1, 1, 0, 0, 0]), [3, 3], "bool");
    const [anyRows, allRows, allCols] = [t([3], "bool"), t([3], "bool"), t([3], "bool")];
    runtime.executeOperation({ kind: "reduce", op: "any", input: x, axes: [1], keepDims: false, out: anyRows }, ctx);
    runtime.executeOperation({ kind: "reduce", op: "all", input: x, axes: [1], keepDims: false, out: allRows }, ctx);
    runtime.executeOperation({ kind: "reduce", op: "all", input: x, axes: [0], keepDims: false, out: allCols }, ctx);
    expect([...(await read(ctx, anyRows))]).toEqual([1, 1, 0]);
    expect([...(await read(ctx, allRows))]).toEqual([0, 1, 0]);
    expect([...(await read(ctx, allCols))]).toEqual([0, 0, 0]);
  });

  it.each(["argmax", "argmin"] as const)("%s over 2^17 + 5 elements is multi-pass and takes the first of tied extremes across chunks", async (op) => {
    const ctx = newContext();
    const n = (1 << 17) + 5;
    const values = Float32Array.from({ length: n }, (_, i) => ((i * 7919) % 1000) - 500);
    const extreme = op === "argmax" ? 5000 : -5000;
    values[70001] = extreme; // chunk 1
    values[n - 2] = extreme; // the last chunk: a tie, the earlier index must win
    const x = upload(ctx, values, [n], "f32");
    const out = t([], "i32");
    runtime.resetCounters();
    runtime.executeOperation({ kind: "reduce", op, input: x, axes: [0], keepDims: false, out }, ctx);
    expect(runtime.counters.launches, "more than one pass").toBeGreaterThanOrEqual(2);
    expect([...(await read(ctx, out))], "the first extreme's index").toEqual([70001]);

    // Along the last axis of a [2, n] tensor: each row independently.
    const rows = new Float32Array(2 * n);
    rows.set(values, 0);
    rows.set(values.map((v) => -v), n);
    const y = upload(ctx, rows, [2, n], "f32");
    const out2 = t([2], "i32");
    runtime.executeOperation({ kind: "reduce", op, input: y, axes: [1], keepDims: false, out: out2 }, ctx);
    const result = [...(await read(ctx, out2))];
    expect(result[0], "row 0 holds the original values").toBe(70001);
    let first = 0;
    for (let i = 1; i < n; i++) {
      const v = -(values[i] ?? 0);
      const best = -(values[first] ?? 0);
      if (op === "argmax" ? v > best : v < best) first = i;
    }
    expect(result[1], "row 1 (negated) finds the first index of its own extreme").toBe(first);
  });

  it("a tensor of 2^24 + 3 elements is laid out on a 2-D grid and every element is computed", async () => {
    const ctx = newContext();
    const n = (1 << 24) + 3;
    const groups = Math.ceil(n / runtime.profile.workgroupSize);
    expect(groups, "one dimension cannot hold the grid").toBeGreaterThan(runtime.profile.maxWorkgroupsPerDimension);
    const [r, s] = [t([n], "i32"), t([n], "i32")];
    runtime.resetCounters();
    runFused(ctx, [
      { kind: "arange", start: 0, step: 1, out: r },
      { kind: "binary-scalar", op: "add", lhs: as(r, "ReadWrite"), scalar: 7, scalarFirst: false, out: s },
    ]);
    expect(runtime.counters.launches, "arange + add is one kernel").toBe(1);
    const values = (await read(ctx, s)) as Int32Array;
    expect(values.length).toBe(n);
    let wrong = -1;
    for (let i = 0; i < n; i++) {
      if (values[i] !== i + 7) {
        wrong = i;
        break;
      }
    }
    expect(wrong, `the first wrong element (value ${wrong >= 0 ? values[wrong] : "-"}); -1 means every row of the grid ran`).toBe(-1);
  });

  it("a chain reading more distinct inputs than the binding limit splits into several fused blocks and stays right", async () => {
    const ctx = newContext();
    const limit = runtime.profile.maxStorageBuffers;
    const count = limit + 4;
    const inputs = Array.from({ length: count }, (_, k) => upload(ctx, Float32Array.from([k, 2 * k, 3 * k]), [3], "f32"));
    const ops: OperationIr[] = [];
    let acc = inputs[0] as TensorIr;
    for (let k = 1; k < count; k++) {
      const out = t([3]);
      ops.push({ kind: "binary", op: "add", lhs: k === 1 ? acc : as(acc, "ReadWrite"), rhs: inputs[k] as TensorIr, out });
      acc = out;
    }
    runtime.resetCounters();
    runFused(ctx, ops);
    expect(runtime.counters.launches, `${count} inputs cannot be bound by one kernel (limit ${limit})`).toBeGreaterThan(1);
    expect(runtime.counters.launches, "but the chain is still fused into a few blocks, not run op by op").toBeLessThan(ops.length);
    const total = (count * (count - 1)) / 2;
    expect([...(await read(ctx, acc))], "the sum of every input").toEqual([total, 2 * total, 3 * total]);
  });

  it("f16 runs where the adapter has shader-f16, else throws UnsupportedError naming it", async () => {
    const ctx = newContext();
    const one = 0x3c00; // 1.0 in IEEE half
    const half = 0x3800; // 0.5
    const x = upload(ctx, Uint16Array.from([one, half, one, half]), [4], "f16");
    const out = t([4], "f16");
    const op: OperationIr = { kind: "binary", op: "add", lhs: x, rhs: x, out };
    if (runtime.profile.f16) {
      runtime.executeOperation(op, ctx);
      expect([...(await read(ctx, out))], "1+1 = 2 (0x4000), 0.5+0.5 = 1 (0x3c00)").toEqual([0x4000, one, 0x4000, one]);
    } else {
      let thrown: unknown;
      try {
        runtime.executeOperation(op, ctx);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, "f16 without the feature is refused with a typed error").toBeInstanceOf(UnsupportedError);
      expect(String((thrown as Error).message), "the error names the missing feature").toMatch(/shader-f16/);
    }
  });
});
