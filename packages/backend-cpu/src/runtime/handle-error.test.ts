/**
 * `CpuRuntime.handleError`: the engine's question "does a device-side failure claim this handle's
 * memory?". The properties: it answers exactly when a launch reading the handle would be skipped
 * (and a read of it would reject, with the same error); it changes nothing; and under the real
 * engine a fused block with a tainted input runs op by op, so an output not computed from the
 * failure still computes.
 */
import { describe, expect, it } from "vitest";
import { InjectedFaultError, TaintedReadError } from "@weft/server";
import { FusionDevice, TensorComputationError, type FusionTensor } from "@weft/fusion";
import { CpuTestHarness } from "../testing/cpu-test-harness.js";
import { denseHandle, withLayout } from "../handle/cpu-handle.js";
import { createCpuRuntime, type CpuRuntime } from "./cpu-runtime.js";
import type { CpuHandle } from "../handle/cpu-handle.js";

/** A harness whose first launch (a unary exp of `x`) fails: `a` is tainted, `x` and `other` clean. */
function taintedSetup() {
  const h = new CpuTestHarness();
  const x = h.tensor([1, 2, 3, 4], [2, 2]);
  const other = h.tensor([5, 6], [2]);
  h.runtime.injectFault({ launch: 1 });
  const a = h.run({ kind: "unary", op: "exp", input: x, out: h.output([2, 2]) });
  return { h, x, other, a };
}

describe("CpuRuntime.handleError", () => {
  it("a clean handle answers undefined", () => {
    const h = new CpuTestHarness();
    const x = h.tensor([1, 2], [2]);
    const y = h.run({ kind: "unary", op: "neg", input: x, out: h.output([2]) });
    expect(h.runtime.handleError(h.handles.getHandle(x)), "an upload is clean").toBeUndefined();
    expect(h.runtime.handleError(h.handles.getHandle(y)), "a launch that ran leaves its output clean").toBeUndefined();
  });

  it("a tainted handle answers the error its read rejects with, and nothing changes", async () => {
    const { h, x, other, a } = taintedSetup();
    const handle = h.handles.getHandle(a);
    const stats = h.runtime.server.stats();
    const failures = h.runtime.server.graph.size;
    const error = h.runtime.handleError(handle);
    expect(h.runtime.server.stats(), "a query launches and skips nothing").toEqual(stats);
    expect(h.runtime.server.graph.size, "…and neither records nor prunes a failure").toBe(failures);
    expect(error, "the failed exp claims its output").toBeInstanceOf(TaintedReadError);
    expect((error as TaintedReadError).root, "naming the injected fault as the root").toBeInstanceOf(InjectedFaultError);
    const rejected = await h.read(a).then(() => undefined, (e: unknown) => e);
    expect((rejected as Error | undefined)?.message, "the read rejects with the same error").toBe((error as Error).message);
    expect(h.runtime.handleError(h.handles.getHandle(x)), "the failed launch's input is clean").toBeUndefined();
    expect(h.runtime.handleError(h.handles.getHandle(other)), "unrelated memory is clean").toBeUndefined();
  });

  it("deviceClaims says whether any failure is live: false while clean, true once a launch failed, false again once rewritten", () => {
    const h = new CpuTestHarness();
    const x = h.tensor([1, 2, 3, 4], [2, 2]);
    h.run({ kind: "unary", op: "neg", input: x, out: h.output([2, 2]) });
    expect(h.runtime.deviceClaims(), "nothing failed: the engine may skip handleError").toBe(false);
    h.runtime.injectFault({ launch: 1 });
    const a = h.run({ kind: "unary", op: "exp", input: x, out: h.output([2, 2]) });
    expect(h.runtime.deviceClaims(), "a failed launch claims its output").toBe(true);
    const handle = h.handles.getHandle(a);
    h.runtime.client.write(handle.memory.binding(), new Uint8Array(16));
    expect(h.runtime.handleError(handle), "the rewrite released the claim").toBeUndefined();
    expect(h.runtime.deviceClaims(), "and no claim is left anywhere").toBe(false);
  });

  it("views of tainted memory are tainted; their views of clean memory are not", () => {
    const { h, x, a } = taintedSetup();
    const permuted = h.run({ kind: "permute", input: a, axes: [1, 0], out: h.output([2, 2]) });
    const sliced = h.run({ kind: "slice", input: a, ranges: [{ start: 1, end: 2, step: 1 }, { start: 0, end: 2, step: 1 }], out: h.output([1, 2]) });
    const cleanView = h.run({ kind: "permute", input: x, axes: [1, 0], out: h.output([2, 2]) });
    expect(h.runtime.handleError(h.handles.getHandle(permuted)), "a permute shares the tainted memory").toBeInstanceOf(TaintedReadError);
    expect(h.runtime.handleError(h.handles.getHandle(sliced)), "so does a slice").toBeInstanceOf(TaintedReadError);
    expect(h.runtime.handleError(h.handles.getHandle(cleanView)), "a view of clean memory is clean").toBeUndefined();
  });

  it("a claim on part of an allocation taints every view of it, exactly as a launch reading it is skipped", () => {
    const runtime = createCpuRuntime();
    const memory = runtime.client.empty(16);
    const input = runtime.client.create(new Uint8Array(8));
    // A failed launch that was to write only bytes 0..8 (elements 0 and 1).
    runtime.server.launch(
      { key: "test/fail-half", run: () => { throw new Error("half failed"); } },
      [1, 1, 1],
      [{ binding: input.binding(), access: "read" }, { binding: memory.binding(0, 8), access: "write" }],
      runtime.client.stream(),
      "execute",
    );
    expect(runtime.client.failureOf([memory.binding(8, 8)]), "bytes 8..16 themselves are clean").toBeUndefined();
    // A view over elements 2 and 3 only: the clean bytes.
    const tail = withLayout(denseHandle(memory, [4], "f32"), { shape: [2], strides: [1], offset: 2 });
    expect(runtime.handleError(tail), "the handle's allocation holds a claim").toBeInstanceOf(TaintedReadError);
    const h = new CpuTestHarness({ server: runtime.server });
    const id = h.output([2]);
    memory.retain();
    h.handles.registerHandle(id.id, tail);
    const skippedBefore = runtime.server.stats().skipped;
    const out = h.run({ kind: "unary", op: "neg", input: { ...id, status: "ReadOnly" }, out: h.output([2]) });
    expect(runtime.server.stats().skipped, "a launch binding that view is skipped: the answer was right").toBe(skippedBefore + 1);
    expect(h.runtime.handleError(h.handles.getHandle(out)), "and its output now carries the failure").toBeInstanceOf(TaintedReadError);
    memory.release();
  });

  it("a write of the whole allocation releases the claim", () => {
    const { h, a } = taintedSetup();
    const handle = h.handles.getHandle(a);
    expect(h.runtime.handleError(handle), "tainted by the failed exp").toBeInstanceOf(TaintedReadError);
    h.runtime.client.write(handle.memory.binding(), new Uint8Array(Float32Array.from([9, 8, 7, 6]).buffer));
    expect(h.runtime.handleError(handle), "every byte has a writer again").toBeUndefined();
    expect(h.values(a), "and the bytes are the written ones").toEqual([9, 8, 7, 6]);
  });

  it("a launch that rewrites the memory in place releases the claim", () => {
    const { h, a } = taintedSetup();
    const handle = h.handles.getHandle(a);
    // A fill writing the tainted allocation (what an in-place fused write would do).
    h.runtime.server.launch(
      { key: "test/fill-zero", run: ([bytes]) => bytes?.fill(0) },
      [1, 1, 1],
      [{ binding: handle.memory.binding(), access: "write" }],
      h.stream,
      "execute",
    );
    expect(h.runtime.handleError(handle), "the fill ran and rewrote every byte").toBeUndefined();
  });
});

/** Uploads f32 `values` of `shape` on `device`. */
function upload(device: FusionDevice<CpuHandle>, values: number[], shape: number[]): FusionTensor {
  return device.upload({ data: Float32Array.from(values), shape, dtype: "f32" });
}

/**
 * `m = sum(x, 0)` kept as `[1, 2]` (its launch fails), then `y = m + 1` and `z = x * 3`: one
 * elementwise segment. (Not a matmul: a matmul and the elementwise ops on its output now fuse
 * into one launch, `MatmulFuser`, so its failure would be the block's own, not an input's.)
 */
async function independentOutput(runtime: CpuRuntime): Promise<{ y: unknown; z: unknown; skipped: number }> {
  const device = new FusionDevice<CpuHandle>(runtime);
  const x = upload(device, [1, 2, 3, 4], [2, 2]);
  runtime.injectFault({ launch: 1 });
  const m = device.register({ kind: "reduce", op: "sum", input: x.intoIr("sum"), axes: [0], keepDims: true, out: device.outputIr([1, 2], "f32") });
  const y = device.register({ kind: "binary-scalar", op: "add", lhs: m.intoIr("add"), scalar: 1, scalarFirst: false, out: device.outputIr([1, 2], "f32") });
  const z = device.register({ kind: "binary-scalar", op: "mul", lhs: x.intoIr("mul"), scalar: 3, scalarFirst: false, out: device.outputIr([2, 2], "f32") });
  const before = runtime.server.stats().skipped;
  const settle = (t: FusionTensor) => t.read().then((v) => Array.from(v), (e: unknown) => e);
  const zValues = await settle(z!);
  const yValues = await settle(y!);
  const skipped = runtime.server.stats().skipped - before;
  for (const t of [x, m!, y!, z!]) t.dispose();
  await device.syncAll();
  expect(device.memory().liveHandles, "nothing survives the tensors").toBe(0);
  expect(runtime.memoryUsage().liveAllocations, "no allocation survives its handles").toBe(0);
  return { y: yValues, z: zValues, skipped };
}

describe("CpuRuntime.handleError under FusionDevice", () => {
  it("an independent output fused with a tainted input still computes; the dependent one carries the failure", async () => {
    const runtime = createCpuRuntime();
    const { y, z, skipped } = await independentOutput(runtime);
    expect(z, "z = x * 3 is not computed from the failed sum").toEqual([3, 6, 9, 12]);
    expect(y, "y = m + 1 is computed from it: its read rejects with the one read-failure class").toBeInstanceOf(TensorComputationError);
    const failure = y as TensorComputationError;
    expect(failure.root, "naming the injected fault as the root").toBeInstanceOf(InjectedFaultError);
    expect(failure.cause, "the server's taint error is the cause…").toBeInstanceOf(TaintedReadError);
    expect((failure.cause as TaintedReadError).cause, "…and its cause the root").toBe(failure.root);
    expect((failure.cause as TaintedReadError).chain.map((e) => e.kind), "root, then the skipped add").toEqual(["injected", "skipped"]);
    expect(failure.chain.length, "the chain: the injected fault, the skipped add, the read").toBe(3);
    expect(skipped, "exactly one launch (the add reading m) was skipped").toBe(1);
  });

  it("without the hook the fused launch runs as a launch group: the server falls back to its ops, so z still computes", async () => {
    const runtime = createCpuRuntime();
    // Shadow the prototype method: the engine sees a runtime that cannot report device-side failures
    // (what a WebGPU failure still being validated looks like), so it fuses the block anyway.
    Object.defineProperty(runtime, "handleError", { value: undefined });
    const fallbacks = runtime.server.stats().fallbacks;
    const { y, z } = await independentOutput(runtime);
    expect(y, "y still fails").toBeInstanceOf(TensorComputationError);
    expect(z, "the group's input m was tainted, so its fallback ran the block op by op: z computes").toEqual([3, 6, 9, 12]);
    expect(runtime.server.stats().fallbacks - fallbacks, "the group fell back").toBe(1);
  });
});
