import { describe, expect, it } from "vitest";
import { InjectedFaultError } from "@weft/server";
import { binary, createTestDevice, fromValues, scalar, unary } from "../testing/index.js";
import { TensorComputationError } from "./tensor-errors.js";

describe("error delivery", () => {
  it("a failing op's outputs and everything computed from them reject with the chained error; unrelated reads succeed", async () => {
    const { device, runtime } = createTestDevice("none");
    runtime.failWhen = (op) => op.kind === "unary" && op.op === "log";
    const x = fromValues(device, [1, 2]);
    const bad = unary(device, "log", x);
    const worse = scalar(device, "mul", bad, 2);
    const worst = binary(device, "add", worse, x);
    const fine = unary(device, "neg", x);
    await expect(device.sync(), "a drain reports nothing").resolves.toBeUndefined();
    const error = await worst.read().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TensorComputationError);
    const chained = error as TensorComputationError;
    expect(chained.kind).toBe("computation");
    expect(chained.root, "the root cause is the injected fault").toBeInstanceOf(InjectedFaultError);
    expect(chained.chain.map((l) => l.split("(")[0]), "from the failing op to the read tensor's producer").toEqual([
      "unary log",
      "binary-scalar mul",
      "binary add",
    ]);
    await expect(bad.read()).rejects.toBeInstanceOf(TensorComputationError);
    await expect(worse.read()).rejects.toThrow(/injected fault: unary log/);
    expect(Array.from(await fine.read()), "a read sharing no tensor with the failure succeeds").toEqual([-1, -2]);
    expect(() => worst.readSync()).toThrow(TensorComputationError);
    expect(runtime.executedOperations, "ops depending on the failure never ran").toBe(1);
    for (const t of [x, bad, worse, worst, fine]) t.dispose();
    await device.syncAll();
    expect(device.memory().liveHandles, "error entries are freed like handles").toBe(0);
  });

  it("a failing fused block puts the error on its outputs only", async () => {
    const { device, runtime } = createTestDevice("elementwise");
    runtime.failWhen = (op) => op.kind === "binary-scalar";
    const x = fromValues(device, [1]);
    const y = unary(device, "neg", x);
    const z = scalar(device, "add", y, 1);
    await expect(z.read()).rejects.toBeInstanceOf(TensorComputationError);
    expect(device.inspector.composition()).toContain("fused elementwise[unary,binary-scalar] not-ran");
    expect(Array.from(await x.read())).toEqual([1]);
    runtime.failWhen = undefined;
    const w = unary(device, "exp", z);
    await expect(w.read(), "later work on a tainted tensor does not run").rejects.toBeInstanceOf(TensorComputationError);
    for (const t of [x, y, z, w]) t.dispose();
    await device.syncAll();
    expect(device.memory().liveHandles).toBe(0);
  });

  // Issue 9: a fused block that fails took down outputs that do not depend on the failing op.
  it("a fused block that throws before changing anything is re-run op by op: only the failing op's dependents carry the error", async () => {
    const { device, runtime } = createTestDevice("elementwise");
    runtime.failWhen = (op) => op.kind === "unary" && op.op === "log";
    const x = fromValues(device, [1, 4]);
    const bad = unary(device, "log", x); // fails
    const worse = scalar(device, "mul", bad, 2); // computed from it
    const x2 = scalar(device, "mul", x, 2);
    const z = scalar(device, "add", x2, 1); // z = x*2+1: independent, same block
    const y = unary(device, "neg", x); // independent too
    expect(Array.from(await z.read()), "an output of the block not computed from the failing op").toEqual([3, 9]);
    expect(Array.from(await y.read())).toEqual([-1, -4]);
    const error: unknown = await worse.read().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(TensorComputationError);
    expect((error as TensorComputationError).root).toBeInstanceOf(InjectedFaultError);
    expect((error as TensorComputationError).chain.map((l) => l.split("(")[0]), "the chain names the failing op, not the block").toEqual([
      "unary log",
      "binary-scalar mul",
    ]);
    const blocks = device.inspector.composition();
    expect(blocks.some((b) => b.startsWith("fused elementwise") && b.endsWith("not-ran")), "the fused attempt is logged as not run").toBe(true);
    expect(blocks, "then the block ran op by op, the failing op alone not run").toContain("unfused unary[unary] not-ran");
    for (const t of [x, bad, worse, x2, z, y]) t.dispose();
    await device.syncAll();
    expect(device.memory().liveHandles, "nothing survives the tensors").toBe(0);
  });

  it("errors thrown by runtime.read reach the reader as a TensorComputationError whose root and cause are the error", async () => {
    const { device, runtime } = createTestDevice();
    const x = fromValues(device, [1]);
    const taint = new InjectedFaultError("tainted bytes");
    runtime.readError = taint;
    const error: unknown = await x.read().then(() => undefined, (e: unknown) => e);
    expect(error, "one class for every failed read, whichever layer detected the failure").toBeInstanceOf(TensorComputationError);
    expect((error as TensorComputationError).root).toBe(taint);
    expect((error as TensorComputationError).cause).toBe(taint);
    expect((error as TensorComputationError).chain.at(-1), "the chain ends with the read").toMatch(/^read of #\d+\[1\] f32$/);
    runtime.readError = undefined;
    expect(Array.from(await x.read())).toEqual([1]);
  });
});
