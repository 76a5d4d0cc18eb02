/**
 * `gather` on WebGPU follows the semantics table's index rule (docs/semantics.md, "Index errors"):
 * indices in `[-n, n)`, negative ones from the end; an out-of-range index is an
 * `IndexOutOfRangeError` delivered at the read of the output and of everything computed from it
 * (through the server's deferred status check), while work that does not depend on it reads fine.
 */
import { StreamId } from "@weft/environment";
import { IndexOutOfRangeError } from "@weft/server";
import { type OperationIr, type TensorId, type TensorIr, type TensorStatus } from "@weft/fusion";
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

const t = (shape: readonly number[], dtype: TensorIr["dtype"] = "f32", status: TensorStatus = "ReadOnly"): TensorIr => ({ id: nextId++ as TensorId, shape, dtype, status });

function upload(ctx: FusionTestContext, values: number[], shape: number[], dtype: "f32" | "i32" = "f32"): TensorIr {
  const x = t(shape, dtype);
  const data = dtype === "f32" ? Float32Array.from(values) : Int32Array.from(values);
  ctx.handles.registerHandle(x.id, runtime.upload({ data, shape, dtype } as never, stream));
  return x;
}

async function read(ctx: FusionTestContext, x: TensorIr): Promise<number[]> {
  return [...(await runtime.read(ctx.handles.getHandle(x), x, stream))];
}

/** The error a read rejects with, or `undefined` when it resolves. */
async function readError(ctx: FusionTestContext, x: TensorIr): Promise<unknown> {
  return read(ctx, x).then(() => undefined, (e: unknown) => e);
}

/** Whether `error`'s cause chain holds an `IndexOutOfRangeError` for `index`. */
function isIndexError(error: unknown, index: number): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) if (e instanceof IndexOutOfRangeError && e.index === index) return true;
  return false;
}

describe("gather index rule on WebGPU", () => {
  it("indices in [-n, n) read the right elements; negative ones count from the end", async () => {
    const ctx = fusionContext(runtime, stream);
    const x = upload(ctx, [10, 20, 30], [3]);
    const idx = upload(ctx, [-1, -3, 2, 0, 1], [5], "i32");
    const out = t([5]);
    runtime.executeOperation({ kind: "gather", input: x, indices: idx, axis: 0, out }, ctx);
    expect(await read(ctx, out)).toEqual([30, 10, 30, 10, 20]);
  });

  it("an out-of-range index fails the read of the output and of everything computed from it, only those", async () => {
    const ctx = fusionContext(runtime, stream);
    const x = upload(ctx, [10, 20, 30], [3]);
    const idx = upload(ctx, [5, -1], [2], "i32");
    const g = t([2]);
    const y = t([2]);
    const z = t([2]);
    const other = t([3]);
    const ops: OperationIr[] = [
      { kind: "gather", input: x, indices: idx, axis: 0, out: g },
      // Computed from g: fused into one elementwise kernel.
      { kind: "binary-scalar", op: "add", lhs: g, scalar: 1, scalarFirst: false, out: y },
      { kind: "unary", op: "exp", input: { ...y }, out: z },
      // Not computed from g.
      { kind: "binary-scalar", op: "mul", lhs: x, scalar: 2, scalarFirst: false, out: other },
    ];
    runFused(runtime, ctx, ops);
    const [eg, ey, ez] = await Promise.all([readError(ctx, g), readError(ctx, y), readError(ctx, z)]);
    expect(isIndexError(eg, 5), `the gather's read names index 5 (got ${String(eg)})`).toBe(true);
    expect(isIndexError(ey, 5), "y = g + 1 carries the same root cause").toBe(true);
    expect(isIndexError(ez, 5), "z = exp(y), a second step away, too").toBe(true);
    expect(await read(ctx, other), "work that does not read g is unaffected").toEqual([20, 40, 60]);
    const late = t([2]);
    runtime.executeOperation({ kind: "unary", op: "neg", input: g, out: late }, ctx);
    expect(isIndexError(await readError(ctx, late), 5), "a launch after the check settled is skipped with the same cause").toBe(true);
  });

  it("a read issued before the status is back waits for it: many gathers in one turn all settle", async () => {
    const ctx = fusionContext(runtime, stream);
    const x = upload(ctx, [1, 2, 3, 4], [4]);
    const reads: Promise<unknown>[] = [];
    for (let i = 0; i < 40; i++) {
      const idx = upload(ctx, [i % 6, -(i % 5)], [2], "i32");
      const out = t([2]);
      runtime.executeOperation({ kind: "gather", input: x, indices: idx, axis: 0, out }, ctx);
      reads.push(readError(ctx, out));
    }
    const errors = await Promise.all(reads);
    errors.forEach((e, i) => expect(isIndexError(e, i % 6), `gather ${i} (index ${i % 6}) ${i % 6 >= 4 ? "fails" : "reads"}`).toBe(i % 6 >= 4));
  });
});
