/**
 * Properties of the vitest-free conformance core, on real fusion devices over the engine's host
 * test runtime: cases here only clone their inputs, and the "device under test" differs from the
 * oracle by how it stores what it is given (a perturbation, an error at upload). What the real backends compute is checked by `weft`'s conformance runs.
 */
import { describe, expect, it } from "vitest";
import type { StreamId } from "@weft/environment";
import { UnsupportedError } from "@weft/environment";
import { FusionDevice, type TensorData, type TypedArray } from "@weft/fusion";
import { TestRuntime, type TestHandle } from "@weft/fusion/testing";
import { Device } from "../device/device.js";
import type { Tensor } from "../tensor/tensor.js";
import { type ConformanceCase, conformanceCases, LARGE_ELEMENTWISE_LOG2, LARGE_REDUCTION_LOG2 } from "./cases.js";
import { checkReleased, compareOutputs, evaluateCase, planCase, runConformanceCase } from "./run-case.js";

/** The engine's host test runtime, storing uploads through `transform` (the identity for an honest device). */
class HostRuntime extends TestRuntime {
  readonly #transform: (data: TensorData) => TypedArray;

  constructor(transform: (data: TensorData) => TypedArray) {
    super();
    this.#transform = transform;
  }

  override upload(data: TensorData, stream: StreamId): TestHandle {
    return super.upload({ ...data, data: this.#transform(data) }, stream);
  }
}

const device = (label: string, transform: (data: TensorData) => TypedArray = (d) => d.data.slice()): { fusion: FusionDevice<TestHandle>; device: Device } => {
  const fusion = new FusionDevice<TestHandle>(new HostRuntime(transform));
  return { fusion, device: new Device(fusion, { backend: "host", label }) };
};

/** Clones every input: the outputs are exactly what the device stored at upload. */
const echo = (name: string, tolerance?: { rtol: number; atol: number }): ConformanceCase => ({
  name,
  inputs: [{ shape: [3, 4], kind: "normal" }, { shape: [5], dtype: "i32" }],
  run: (xs: readonly Tensor[]) => xs.map((x) => x.clone()),
  ...(tolerance === undefined ? {} : { tolerance }),
});

const perturbFloats = (delta: number) => (d: TensorData): TypedArray => {
  const out = d.data.slice();
  if (out instanceof Float32Array) for (let i = 0; i < out.length; i++) out[i] = (out[i] ?? 0) + delta;
  return out;
};

describe("runConformanceCase", () => {
  it("an honest device agrees with the oracle and every tensor is released", async () => {
    const dut = device("honest");
    const oracle = device("oracle");
    const result = await runConformanceCase(echo("echo"), dut.device, oracle.device);
    expect(result, "identical uploads must compare equal under an exact tolerance").toEqual({ ok: true });
    expect(dut.fusion.memory().liveTensors, "inputs and outputs are disposed by the core").toBe(0);
    expect(oracle.fusion.memory().liveTensors, "the oracle's tensors are disposed too").toBe(0);
  });

  it("a difference beyond the tolerance fails and names the output, got and oracle", async () => {
    const result = await runConformanceCase(echo("echo"), device("off by 1e-3", perturbFloats(1e-3)).device, device("oracle").device);
    expect(result.ok, "a 1e-3 error must fail an exact comparison").toBe(false);
    expect(result.message, "the message names the case").toContain('"echo"');
    expect(result.message, "the message names the failing output (the f32 one), not the exact i32 one").toContain("output 0");
    expect(result.message, "the i32 output matched, so it is not reported").not.toContain("output 1");
    expect(result.message, "the message says how many elements and the tolerance").toMatch(/12 of 12 elements differ beyond rtol 0, atol 0/);
  });

  it("a difference within the case's tolerance passes", async () => {
    const result = await runConformanceCase(echo("echo", { rtol: 0, atol: 2e-3 }), device("off by 1e-3", perturbFloats(1e-3)).device, device("oracle").device);
    expect(result, "1e-3 is inside atol 2e-3").toEqual({ ok: true });
  });

  it("an error on the device under test fails the case, names the device, and leaks nothing", async () => {
    let uploads = 0;
    const dut = device("flaky", (d) => {
      if (++uploads === 2) throw new RangeError("no memory for the second input");
      return d.data.slice();
    });
    const result = await runConformanceCase(echo("echo"), dut.device, device("oracle").device);
    expect(result.ok).toBe(false);
    expect(result.message, "the message names which device threw and the error").toContain("the device under test (flaky) threw RangeError: no memory for the second input");
    expect(dut.fusion.memory().liveTensors, "the first input was uploaded before the throw and must still be disposed").toBe(0);
  });

  it("an error on the oracle is reported as the oracle's", async () => {
    const oracle = device("broken oracle", () => {
      throw new Error("oracle down");
    });
    const result = await runConformanceCase(echo("echo"), device("honest").device, oracle.device);
    expect(result.message, "a failing oracle must not be blamed on the backend").toContain("the oracle (broken oracle) threw Error: oracle down");
  });

  it("an expected-unsupported case passes only when the device throws UnsupportedError", async () => {
    const unsupported = device("no f16", () => {
      throw new UnsupportedError("shader-f16", "the adapter lacks it");
    });
    const other = device("bug", () => {
      throw new Error("a bug, not a missing capability");
    });
    const oracle = device("oracle").device;
    expect(await runConformanceCase(echo("echo"), unsupported.device, oracle, { expectUnsupported: true }), "UnsupportedError is the declared outcome").toEqual({ ok: true });
    const wrong = await runConformanceCase(echo("echo"), other.device, oracle, { expectUnsupported: true });
    expect(wrong.ok, "any other error is a failure even for an unsupported case").toBe(false);
    const ran = await runConformanceCase(echo("echo"), device("honest").device, oracle, { expectUnsupported: true });
    expect(ran.message, "a case declared unsupported that runs must be taken off the list").toContain("declared unsupported");
    expect(await runConformanceCase(echo("echo"), unsupported.device, oracle), "without the declaration UnsupportedError is a failure").toMatchObject({ ok: false });
  });
});

describe("evaluateCase and compareOutputs", () => {
  it("both devices see the same seeded inputs, so a case is reproducible", async () => {
    const a = await evaluateCase(echo("seeded"), device("a").device);
    const b = await evaluateCase(echo("seeded"), device("b").device);
    const c = await evaluateCase(echo("another name"), device("c").device);
    expect(a, "the same case name must give the same inputs").toEqual(b);
    expect(a[0]?.data, "a different case name seeds different inputs").not.toEqual(c[0]?.data);
  });

  it("shape, dtype and output-count differences are reported before values", () => {
    const c = echo("shapes");
    const f = { shape: [2], dtype: "f32", data: new Float32Array(2) };
    expect(compareOutputs(c, [f], [f, f]), "a missing output").toContain("produced 1 outputs, the oracle 2");
    expect(compareOutputs(c, [{ ...f, shape: [1, 2] }], [f]), "a wrong shape").toContain("shape [1, 2] differs from the oracle's [2]");
    expect(compareOutputs(c, [{ ...f, dtype: "i32" }], [f]), "a wrong dtype").toContain("dtype i32 differs from the oracle's f32");
    expect(compareOutputs(c, [f], [f]), "identical outputs").toBeUndefined();
  });
});

describe("selection and catalogue", () => {
  it("planCase: only narrows, skip wins over unsupported, unsupported over run", () => {
    expect(planCase("unary exp", {})).toBe("run");
    expect(planCase("unary exp", { only: ["matmul"] }), "only excludes what it does not name").toBe("skip");
    expect(planCase("unary exp", { unsupported: ["exp"], skip: ["unary"] }), "skip wins").toBe("skip");
    expect(planCase("unary exp", { unsupported: ["exp"] })).toBe("expect-unsupported");
  });

  it("the catalogue's large cases carry their size in the name and honour the options", () => {
    const names = conformanceCases().map((c) => c.name);
    expect(names, "default sizes").toContain(`a large elementwise chain (2^${LARGE_ELEMENTWISE_LOG2} elements)`);
    expect(names).toContain(`a large reduction (2^${LARGE_REDUCTION_LOG2} elements, sum and max)`);
    const small = conformanceCases({ largeElementwiseLog2: 12, largeReductionLog2: 17 });
    const chain = small.find((c) => c.name.startsWith("a large elementwise chain"));
    expect(chain?.name).toBe("a large elementwise chain (2^12 elements)");
    expect(chain?.inputs[0]?.shape, "the input shape follows the option").toEqual([4096]);
    expect(small.find((c) => c.name.startsWith("a large reduction"))?.inputs[0]?.shape).toEqual([1 << 17]);
    expect(small.length, "sizing never adds or drops cases").toBe(names.length);
    expect(new Set(names).size, "case names are unique (they are test names and seeds)").toBe(names.length);
  });

  it("checkReleased reports a leaked tensor with the counts", async () => {
    const { fusion, device: d } = device("leaky");
    const baseline = d.memory().liveTensors;
    expect(await checkReleased(d, baseline)).toEqual({ ok: true });
    const leaked = await evaluateCase({ ...echo("leak"), run: (xs) => xs[0]?.clone() ?? [] }, d);
    expect(leaked.length).toBe(1);
    fusion.upload({ data: new Float32Array(1), shape: [1], dtype: "f32" }); // a wrapper nobody disposes
    const result = await checkReleased(d, baseline);
    expect(result.message, "one wrapper stayed live").toContain("1 leaked");
  });
});
