/**
 * Process and stream modes reach the WebGPU runtime (docs/concepts.md#streammode-overrides): every launch goes through the
 * runtime's `Client`, so `withProcessMode('compile-and-autotune', …)` compiles and discards, and a
 * `StreamModeOverride('execute', client)` makes that client's stream run anyway.
 */
import { StreamId } from "@weft/environment";
import { HandleContainer, type OperationIr, type TensorId, type TensorIr, type TensorStatus } from "@weft/fusion";
import { StreamModeOverride, withProcessMode } from "@weft/runtime";
import { beforeAll, describe, expect, it } from "vitest";
import type { WebGpuHandle } from "../handle/webgpu-handle.js";
import { WebGpuServer } from "../server/webgpu-server.js";
import { createWebGpuRuntime } from "./create-runtime.js";
import type { WebGpuRuntime } from "./webgpu-runtime.js";

process.env["EGL_PLATFORM"] ??= "surfaceless";

let runtime: WebGpuRuntime;
let server: WebGpuServer;
let nextId = 1;
const stream = StreamId.DEFAULT;

beforeAll(async () => {
  runtime = await createWebGpuRuntime({ autotune: false });
  expect(runtime.server, "the default runtime runs on the full WebGpuServer").toBeInstanceOf(WebGpuServer);
  server = runtime.server as WebGpuServer;
});

const t = (shape: readonly number[], status: TensorStatus = "ReadOnly"): TensorIr => ({ id: nextId++ as TensorId, shape: [...shape], dtype: "f32", status });
const as = (x: TensorIr, status: TensorStatus): TensorIr => ({ ...x, status });
const newContext = () => ({ handles: new HandleContainer<WebGpuHandle>((h) => runtime.releaseHandle(h)), stream });

function upload(ctx: ReturnType<typeof newContext>, values: number[]): TensorIr {
  const x = t([values.length]);
  ctx.handles.registerHandle(x.id, runtime.upload({ data: Float32Array.from(values), shape: [values.length], dtype: "f32" }, stream));
  return x;
}

const read = async (ctx: ReturnType<typeof newContext>, x: TensorIr): Promise<number[]> => [...(await runtime.read(ctx.handles.getHandle(x), x, stream))];

/** Runs `ops` as one fused block through the elementwise fuser (asserting it took them all). */
function runChain(ctx: ReturnType<typeof newContext>, ops: OperationIr[]): void {
  const [fuser] = runtime.fusers();
  if (fuser === undefined) throw new Error("the runtime offers fusers");
  for (const op of ops) fuser.fuse(op);
  expect(fuser.len(), "the elementwise fuser takes the whole chain").toBe(ops.length);
  fuser.finish().execute(ctx, ops);
}

/** `out = exp(a * scale) + a`, a chain of three ops fused into one kernel. `scale` makes the kernel unique. */
function chain(a: TensorIr, scale: number): { ops: OperationIr[]; out: TensorIr } {
  const [m, e, out] = [t(a.shape), t(a.shape), t(a.shape)];
  return {
    out,
    ops: [
      { kind: "binary-scalar", op: "mul", lhs: a, scalar: scale, scalarFirst: false, out: m },
      { kind: "unary", op: "exp", input: as(m, "ReadWrite"), out: e },
      { kind: "binary", op: "add", lhs: as(e, "ReadWrite"), rhs: a, out },
    ],
  };
}

describe("WebGpuRuntime launches through its Client", () => {
  it("under compile-and-autotune a fused chain compiles its pipeline and its launch is discarded", async () => {
    const ctx = newContext();
    const a = upload(ctx, [0, 1, 2, 3, 4, 5]);
    const { ops, out } = chain(a, 0.125);
    const before = server.stats();
    runtime.resetCounters();
    withProcessMode("compile-and-autotune", () => runChain(ctx, ops));
    await runtime.sync(stream);
    const after = server.stats();
    expect(runtime.counters.launches, "the chain is one launch request").toBe(1);
    expect(after.pipelines - before.pipelines, "the fused kernel's pipeline was created ahead of time").toBe(1);
    expect(after.dispatches, "a discarded launch is never encoded").toBe(before.dispatches);
    expect(ctx.handles.hasHandle(out.id), "the output still gets a handle (allocated, never written)").toBe(true);

    // The same chain executed afterwards reuses the compiled pipeline.
    const again = chain(a, 0.125);
    runChain(ctx, again.ops);
    const end = server.stats();
    expect(end.pipelines, "the warm pipeline is reused: no second compile").toBe(after.pipelines);
    expect(end.dispatches - after.dispatches, "under 'execute' the launch runs").toBe(1);
    const want = [0, 1, 2, 3, 4, 5].map((x) => Math.exp(x * 0.125) + x);
    (await read(ctx, again.out)).forEach((v, i) => expect(v, `element ${i}`).toBeCloseTo(want[i] ?? NaN, 5));
  });

  it("a discarded in-place launch leaves memory untouched", async () => {
    const ctx = newContext();
    const a = upload(ctx, [1, 2, 3, 4]);
    const out = t([4]);
    runtime.resetCounters();
    withProcessMode("compile-and-autotune", () => runChain(ctx, [{ kind: "unary", op: "neg", input: as(a, "ReadWrite"), out }]));
    expect(runtime.counters.inPlaceWrites, "the consumed input's buffer was chosen as the destination").toBe(1);
    expect(await read(ctx, out), "the buffer keeps a's bytes: the negation never ran").toEqual([1, 2, 3, 4]);
  });

  it("a StreamModeOverride('execute') on the runtime's client makes its stream run under compile-and-autotune", async () => {
    const ctx = newContext();
    const a = upload(ctx, [0.5, 1.5, 2.5, 3.5]);
    const { ops, out } = chain(a, -0.25);
    const before = server.stats();
    withProcessMode("compile-and-autotune", () => {
      using _execute = new StreamModeOverride("execute", runtime.client);
      runChain(ctx, ops);
    });
    const want = [0.5, 1.5, 2.5, 3.5].map((x) => Math.exp(x * -0.25) + x);
    // A new pipeline is validated before its launch is encoded: the read waits for both.
    (await read(ctx, out)).forEach((v, i) => expect(v, `element ${i} was computed`).toBeCloseTo(want[i] ?? NaN, 5));
    const after = server.stats();
    expect(after.dispatches - before.dispatches, "the override's stream executes despite the process mode").toBe(1);

    // The override is gone: the next launch on the same stream is discarded again.
    const next = chain(a, -0.5);
    const mid = server.stats();
    withProcessMode("compile-and-autotune", () => runChain(ctx, next.ops));
    await runtime.sync(stream);
    expect(server.stats().dispatches, "once disposed, the override no longer applies").toBe(mid.dispatches);
  });

  it("an override on another stream leaves the executing stream discarded", async () => {
    const ctx = newContext();
    const a = upload(ctx, [1, 2]);
    const { ops } = chain(a, 3);
    const before = server.stats();
    const other = StreamId.allocate();
    withProcessMode("compile-and-autotune", () => {
      using _elsewhere = new StreamModeOverride("execute", runtime.client.withStream(other));
      runChain(ctx, ops);
    });
    await runtime.sync(stream);
    expect(server.stats().dispatches, "only the overridden (service, stream) executes").toBe(before.dispatches);
  });

  it("pipeline lookups go through the server's PipelineCache: a repeated kernel is a hit", () => {
    const ctx = newContext();
    const a = upload(ctx, [9, 8, 7]);
    const first = chain(a, 7.5);
    runChain(ctx, first.ops);
    const before = server.stats();
    runChain(ctx, chain(a, 7.5).ops);
    const after = server.stats();
    expect(after.pipelines, "the same structure compiles once").toBe(before.pipelines);
    expect(after.pipelineHits - before.pipelineHits, "and is served from the cache").toBe(1);
  });
});
