/**
 * The CPU runtime under the real fusion engine (`FusionDevice`): lazy recording, fusion, drops,
 * reads, and quiescence (no handle and no allocation left once everything is disposed).
 */
import { describe, expect, it } from "vitest";
import { FusionDevice, type FusionTensor, type ProducingOperation, type TensorIr } from "@weft/fusion";
import { createCpuRuntime, type CpuRuntime } from "./cpu-runtime.js";
import type { CpuHandle } from "../handle/cpu-handle.js";

/** Runs an 8-op elementwise chain (disposing every intermediate) and a sum; returns the values. */
async function chainOn(runtime: CpuRuntime): Promise<{ chain: number[]; sum: number[]; device: FusionDevice<CpuHandle> }> {
  const device = new FusionDevice<CpuHandle>(runtime);
  const x = device.upload({ data: Float32Array.from([-1, 0, 0.5, 1, 2, 3]), shape: [2, 3], dtype: "f32" });
  const y = device.upload({ data: Float32Array.from([0.25, -0.5, 1]), shape: [3], dtype: "f32" });
  const apply = (t: FusionTensor, make: (input: TensorIr, out: TensorIr) => ProducingOperation, dispose = true): FusionTensor => {
    const out = device.register(make(t.intoIr("chain"), device.outputIr([2, 3], "f32")));
    if (dispose) t.dispose();
    return out;
  };
  let t = apply(x, (i, o) => ({ kind: "binary", op: "add", lhs: i, rhs: y.intoIr("add"), out: o }), false);
  t = apply(t, (i, o) => ({ kind: "binary-scalar", op: "mul", lhs: i, scalar: 3, scalarFirst: false, out: o }));
  t = apply(t, (i, o) => ({ kind: "unary", op: "sigmoid", input: i, out: o }));
  t = apply(t, (i, o) => ({ kind: "unary", op: "sqrt", input: i, out: o }));
  t = apply(t, (i, o) => ({ kind: "clamp", input: i, min: 0.2, max: 0.9, out: o }));
  t = apply(t, (i, o) => ({ kind: "binary-scalar", op: "pow", lhs: i, scalar: 2, scalarFirst: false, out: o }));
  t = apply(t, (i, o) => ({ kind: "unary", op: "silu", input: i, out: o }));
  t = apply(t, (i, o) => ({ kind: "binary", op: "mul", lhs: i, rhs: x.intoIr("mul"), out: o }));
  const s = device.register({ kind: "reduce", op: "sum", input: t.intoIr("sum"), axes: [1], keepDims: false, out: device.outputIr([2], "f32") });
  const chain = Array.from(await t.read());
  const sum = Array.from(await s.read());
  for (const tensor of [x, y, t, s!]) tensor.dispose();
  await device.syncAll();
  return { chain, sum, device };
}

describe("CpuRuntime under FusionDevice", () => {
  it("a loop of tidy steps whose results are all dropped launches no kernel, however many blocks the 64-operation limit cuts", async () => {
    const runtime = createCpuRuntime();
    const device = new FusionDevice<CpuHandle>(runtime);
    const x = device.upload({ data: new Float32Array(16).fill(0.5), shape: [16], dtype: "f32" });
    await device.syncAll();
    const before = runtime.server.stats().launched;
    for (let s = 0; s < 50; s++) {
      // One step: ten dependent adds, every result alive until the step's end, then all dropped.
      const outs: FusionTensor[] = [];
      let t = x;
      for (let k = 0; k < 10; k++) {
        t = device.register({ kind: "binary-scalar", op: "add", lhs: t.intoIr("add"), scalar: 1, scalarFirst: false, out: device.outputIr([16], "f32") });
        outs.push(t);
      }
      for (const o of outs) o.dispose();
    }
    await device.syncAll();
    expect(runtime.server.stats().launched - before, "500 adds and their drops: dead code, no launch").toBe(0);
    // A result kept alive is still computed, from the same loop.
    let y = x;
    const kept: FusionTensor[] = [];
    for (let k = 0; k < 70; k++) {
      y = device.register({ kind: "binary-scalar", op: "add", lhs: y.intoIr("add"), scalar: 1, scalarFirst: false, out: device.outputIr([16], "f32") });
      kept.push(y);
    }
    expect(Array.from(await y.read()), "70 adds of 1 to 0.5").toEqual(new Array(16).fill(70.5));
    for (const t of [x, ...kept]) t.dispose();
    await device.syncAll();
    expect(device.memory().liveHandles, "nothing survives").toBe(0);
  });

  it("a fused chain gives the unfused oracle's values, in fewer launches, and leaves nothing behind", async () => {
    const fusedRuntime = createCpuRuntime();
    const plainRuntime = createCpuRuntime({ fusion: false });
    const fused = await chainOn(fusedRuntime);
    const plain = await chainOn(plainRuntime);
    expect(fused.chain, "fused and unfused agree bit for bit").toEqual(plain.chain);
    expect(fused.sum).toEqual(plain.sum);
    expect(fusedRuntime.stats.fusedLaunches, "the engine executed at least one fused block").toBeGreaterThan(0);
    expect(fusedRuntime.server.stats().launched, "fusion launches fewer kernels").toBeLessThan(plainRuntime.server.stats().launched);
    for (const [name, run] of [["fused", fused], ["unfused", plain]] as const) {
      expect(run.device.memory().liveHandles, `${name}: no handle survives its tensors`).toBe(0);
    }
    expect(fusedRuntime.memoryUsage().liveAllocations, "no allocation survives its handles").toBe(0);
    expect(plainRuntime.memoryUsage().liveAllocations).toBe(0);
  });
});
