/**
 * A failure touches only what it touched, also inside a fused block (issue 9): when a fused
 * kernel cannot run — a compile failure on real WebGPU (software adapter; the failure is known
 * only asynchronously, when the pipeline's validation settles), an injected launch fault on the
 * CPU — the block runs op by op in its place (`BlockFallback` in a server launch group), so an
 * output that does not depend on the failing op still computes, and the outputs that do carry
 * the failure as a `TensorComputationError` whose root is the op's own failure.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { Stream } from "@weft/environment";
import { InjectedFaultError, ValidationError } from "@weft/server";
import { TensorComputationError } from "@weft/fusion";
import type { CpuRuntime } from "@weft/backend-cpu";
import type { WebGpuRuntime, WebGpuServer } from "@weft/backend-webgpu";
import { type Device, type Tensor, setDevice, tensor, tidy } from "@weft/tensor";
import { createCpuDevice, createWebGpuDevice, probeAdapter } from "../device/backends.js";
import { engineOf, freshStream, inspectorOf, settle } from "./harness.js";
import { valuesOf } from "./sources.js";

/** Reads `t` expecting the one read-failure class; returns it. */
async function failureOf(t: Tensor): Promise<TensorComputationError> {
  const error: unknown = await t.data().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "the read of a tensor computed from the failing op rejects with TensorComputationError").toBeInstanceOf(TensorComputationError);
  return error as TensorComputationError;
}

/** CPU kernel keys: a fused elementwise block has several steps (`…;…;`); an unfused `x * s` one. */
const FUSED_CPU = /^ew\/.*;.*;/;
const UNFUSED_CPU_MUL = /^ew\/[^;]*\/s:mul:[^;]*;$/;

describe("a fused block that cannot run, on the cpu backend", () => {
  let device: Device;
  let runtime: CpuRuntime;
  beforeAll(() => {
    device = createCpuDevice();
    runtime = engineOf(device).runtime as unknown as CpuRuntime;
    setDevice(device);
  });
  afterEach(() => runtime.server.clearFaults());

  it("whose fused kernel fails, is recomputed op by op: every output has its value", async () => {
    runtime.injectFault({ kernelMatching: FUSED_CPU });
    const s = freshStream();
    const before = runtime.server.stats().fallbacks;
    const g = Stream.run(s, () => {
      const x = tensor([1, 2, 3]);
      const y = tidy(() => x.mul(2).add(1)); // the fused block: its kernel fails
      const z = tidy(() => x.neg()); // same block, independent
      return { x, y, z };
    });
    expect(await Stream.run(s, () => valuesOf(g.y)), "y is recomputed from its ops").toEqual([3, 5, 7]);
    expect(await Stream.run(s, () => valuesOf(g.z))).toEqual([-1, -2, -3]);
    expect(runtime.server.stats().fallbacks - before, "the fused launch never ran: its group fell back").toBeGreaterThan(0);
    expect(inspectorOf(device).composition(s).some((c) => c.startsWith("fused elementwise")), "the block was fused").toBe(true);
    Stream.run(s, () => Object.values(g).forEach((t) => t.dispose()));
    expect(await settle(device, 0).then((p) => p.filter((l) => !l.startsWith("bytesInUse")))).toEqual([]);
  });

  it("with an op that fails on its own too: only what is computed from it carries the error", async () => {
    runtime.injectFault({ kernelMatching: FUSED_CPU });
    runtime.injectFault({ kernelMatching: UNFUSED_CPU_MUL });
    const s = freshStream();
    const g = Stream.run(s, () => {
      const x = tensor([1, 2, 3]);
      const y = tidy(() => x.mul(2).add(1)); // computed from the failing mul
      const z = tidy(() => x.neg().add(1)); // not
      return { x, y, z };
    });
    const failure = await Stream.run(s, () => failureOf(g.y));
    expect(failure.root, "the root is the mul's own failure").toBeInstanceOf(InjectedFaultError);
    expect(failure.root.message, "naming the unfused mul kernel by its label, never its key").toMatch(/every launch of kernel "elementwise mul"/);
    expect(failure.message, "messages do not repeat internal kernel keys").not.toMatch(/ew\/r\d/);
    expect(await Stream.run(s, () => valuesOf(g.z)), "z does not depend on the mul: it computes").toEqual([0, -1, -2]);
    expect(await Stream.run(s, () => valuesOf(g.x))).toEqual([1, 2, 3]);
    Stream.run(s, () => Object.values(g).forEach((t) => t.dispose()));
    expect(await settle(device, 0).then((p) => p.filter((l) => !l.startsWith("bytesInUse")))).toEqual([]);
  });

  it("reading an input whose failure the engine learns only at launch: the independent output computes", async () => {
    // Every matmul launch fails (fused with the ops on its output, `MatmulFuser`, or alone, as
    // the fused group's fallback runs it): its output is tainted device-side after the engine
    // registered it, and what reads it runs op by op.
    runtime.injectFault({ kernelMatching: /^matmul\|/ });
    const s = freshStream();
    const g = Stream.run(s, () => {
      const x = tensor([[1, 2], [3, 4]]);
      const m = tidy(() => x.matmul(tensor([[1, 0], [0, 1]])));
      const y = tidy(() => m.mul(2)); // computed from the failed matmul
      const z = tidy(() => x.mul(2).add(1)); // z = x*2+1, in the same elementwise block
      return { x, m, y, z };
    });
    expect((await Stream.run(s, () => failureOf(g.y))).root).toBeInstanceOf(InjectedFaultError);
    expect(await Stream.run(s, () => valuesOf(g.z))).toEqual([3, 5, 7, 9]);
    Stream.run(s, () => Object.values(g).forEach((t) => t.dispose()));
    expect(await settle(device, 0).then((p) => p.filter((l) => !l.startsWith("bytesInUse")))).toEqual([]);
  });
});

const probe = await probeAdapter();

describe.skipIf(!probe.available && process.env["CI"] !== "true")("a fused block that cannot run, on WebGPU (a compile failure known asynchronously)", () => {
  /** A fresh device per test: injected failures apply to pipelines created afterwards. */
  async function fresh(pattern: RegExp): Promise<{ device: Device; server: WebGpuServer }> {
    const device = await createWebGpuDevice();
    const server = (engineOf(device).runtime as unknown as WebGpuRuntime).server as WebGpuServer;
    server.injectInvalidKernels(pattern);
    setDevice(device);
    return { device, server };
  }

  /** The program: `m = x @ w; y = m * 2` and `z = x * 2 + 1`, all in one fused matmul block. */
  function program(): { x: Tensor; w: Tensor; y: Tensor; z: Tensor } {
    const x = tensor([[1, 2], [3, 4]]);
    const w = tensor([[1, 0], [0, 1]]);
    const y = tidy(() => x.matmul(w).mul(2));
    const z = tidy(() => x.mul(2).add(1));
    return { x, w, y, z };
  }

  it("a compile failure of the fused matmul+mul kernel: the block is recomputed op by op and every output has its value", async () => {
    const { device, server } = await fresh(/^matmul\+/);
    const g = program();
    expect(await valuesOf(g.y), "y = (x @ w) * 2, from the unfused matmul and mul").toEqual([2, 4, 6, 8]);
    expect(await valuesOf(g.z), "z = x * 2 + 1").toEqual([3, 5, 7, 9]);
    expect(inspectorOf(device).composition().some((c) => c.startsWith("fused matmul")), "the ops were fused into one matmul block").toBe(true);
    expect(server.stats().fallbacks, "the group fell back once its pipeline's validation failed").toBeGreaterThan(0);
    expect(server.failures(0 as never).some((f) => f instanceof ValidationError), "the rejected kernel is logged, not hidden").toBe(true);
    for (const t of Object.values(g)) t.dispose();
    expect(await settle(device, server.memoryUsage().bytesInUse).then((p) => p.filter((l) => !l.startsWith("bytesInUse")))).toEqual([]);
  });

  it("a matmul whose own kernel fails too: y carries the validation error, z = x*2+1 computes", async () => {
    const { device, server } = await fresh(/^matmul/);
    const g = program();
    const failure = await failureOf(g.y);
    expect(failure.root, "the root is the device's rejection of the matmul kernel").toBeInstanceOf(ValidationError);
    expect(failure.root.message, "naming the kernel by its label").toMatch(/kernel 'matmul'/);
    expect(failure.message, "messages do not repeat internal kernel keys").not.toMatch(/\|/);
    expect(await valuesOf(g.z), "z does not depend on the matmul: it computes").toEqual([3, 5, 7, 9]);
    expect(await valuesOf(g.x), "the inputs are intact").toEqual([1, 2, 3, 4]);
    for (const t of Object.values(g)) t.dispose();
    expect(await settle(device, server.memoryUsage().bytesInUse).then((p) => p.filter((l) => !l.startsWith("bytesInUse")))).toEqual([]);
  });

  it("a fused elementwise block reading the output of a kernel still validating: the independent output computes", async () => {
    const { device } = await fresh(/^matmul/);
    const x = tensor([[1, 2], [3, 4]]);
    const m = tidy(() => x.matmul(tensor([[1, 0], [0, 1]]))); // its pipeline validates later, and fails
    // The transpose (a view) closes the matmul's block: exp and mul form a separate elementwise
    // block, fused before the engine can know that m will fail.
    const y = tidy(() => m.transpose().exp().mul(2));
    const z = tidy(() => x.mul(2).add(1)); // in that block, independent of m
    expect((await failureOf(y)).root).toBeInstanceOf(ValidationError);
    expect(await valuesOf(z)).toEqual([3, 5, 7, 9]);
    for (const t of [x, m, y, z]) t.dispose();
    await device.syncAll();
  });

  it("one-element results packed into one allocation: the fallback fills each at its offset, and a failing op taints only its own results", async () => {
    // x + 1, (x + 1) * 2, … on one element, every result alive: one fused kernel writes them all
    // into one pack (see backend-webgpu's planPacks). Every kernel with a mul is rejected, the
    // fused one included, so the block runs op by op: the adds compute, the mul and what is
    // computed from it fail, and the negation beside them computes.
    const { device, server } = await fresh(/mul/);
    const g = (() => {
      const x = tensor([3]);
      const a = x.add(1);
      const b = a.add(1);
      const c = b.mul(2);
      const d = c.add(1);
      const e = x.neg();
      return { x, a, b, c, d, e };
    })();
    expect(await valuesOf(g.a), "a = x + 1, copied into its place in the pack").toEqual([4]);
    expect(await valuesOf(g.b), "b = a + 1").toEqual([5]);
    expect((await failureOf(g.c)).root, "c comes from the rejected mul").toBeInstanceOf(ValidationError);
    expect((await failureOf(g.d)).root, "d is computed from c").toBeInstanceOf(ValidationError);
    expect(await valuesOf(g.e), "e = -x does not depend on the mul").toEqual([-3]);
    expect(inspectorOf(device).composition().some((c) => c.startsWith("fused elementwise")), "the ops were fused into one block").toBe(true);
    expect(server.stats().fallbacks, "the fused kernel was rejected: its group fell back").toBeGreaterThan(0);
    for (const t of Object.values(g)) t.dispose();
    expect(await settle(device, server.memoryUsage().bytesInUse).then((p) => p.filter((l) => !l.startsWith("bytesInUse")))).toEqual([]);
  });

  it("one-element results packed into one allocation compute and read back at their offsets", async () => {
    const { device, server } = await fresh(/^never$/);
    const x = tensor([0.5]);
    const ys: Tensor[] = [];
    let y = x;
    for (let k = 0; k < 40; k++) ys.push((y = y.add(1)));
    const read = await Promise.all(ys.map((t) => valuesOf(t)));
    expect(read, "every one of 40 live results, each in its pack slot").toEqual(ys.map((_, k) => [0.5 + k + 1]));
    expect(inspectorOf(device).composition().some((c) => c.startsWith("fused elementwise")), "the chain was fused").toBe(true);
    for (const t of [x, ...ys]) t.dispose();
    expect(await settle(device, server.memoryUsage().bytesInUse).then((p) => p.filter((l) => !l.startsWith("bytesInUse")))).toEqual([]);
  });
});
