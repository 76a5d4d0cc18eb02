/**
 * `describeBackend`: the conformance kit every backend runs against the CPU oracle.
 *
 * @module
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tidy } from "@weft/fusion";
import type { Device } from "../device/device.js";
import { tensor } from "../ops/creation.js";
import { Tensor } from "../tensor/tensor.js";
import { type ConformanceCase, conformanceCases, inputDType } from "./cases.js";
import { EXACT, compareArrays, generate, hashName, prng } from "./host-data.js";

/** Options of {@link describeBackend}. */
export interface DescribeBackendOptions {
  /**
   * The oracle: a CPU device that runs every op *unfused* (`createCpuRuntime({ fusion: false })`).
   * Passed in so `@weft/tensor` never imports a backend.
   */
  readonly oracle: () => Promise<Device> | Device;
  /** Run only the cases whose name contains one of these strings (e.g. while porting an op). */
  readonly only?: readonly string[];
  /** Skip the cases whose name contains one of these strings; each skip is listed as `it.skip`. */
  readonly skip?: readonly string[];
  /** Cleans the devices up after the suite (destroy a GPU device). */
  readonly teardown?: (device: Device, oracle: Device) => Promise<void> | void;
}

/** Uploads the host inputs of `c` to `device`, runs it, reads every output, disposes everything. */
async function evaluate(c: ConformanceCase, device: Device): Promise<{ shape: readonly number[]; dtype: string; data: Awaited<ReturnType<Tensor["data"]>> }[]> {
  const next = prng(hashName(c.name));
  const host = c.inputs.map((spec) => ({ spec, values: generate(spec, next) }));
  const inputs = host.map(({ spec, values }) =>
    tensor(spec.dtype === "bool" ? values.map((v) => v !== 0) : values, { device, shape: spec.shape, dtype: inputDType(spec) }),
  );
  try {
    const outputs = tidy(() => {
      const r = c.run(inputs, device);
      return r instanceof Tensor ? [r] : [...r];
    });
    try {
      const results = [];
      for (const o of outputs) results.push({ shape: o.shape, dtype: o.dtype, data: await o.data() });
      return results;
    } finally {
      for (const o of outputs) o.dispose();
    }
  } finally {
    for (const t of inputs) t.dispose();
  }
}

/**
 * Registers a vitest suite that runs every op of the user API, plus the edge cases (empty
 * tensors, size-1 dims, non-contiguous views, NaN/±Inf, odd sizes, 2^20-element elementwise
 * chains, a 2^18-element reduction, fused 8-op chains, reductions after elementwise ops, matmul
 * with an epilogue), on the device `factory` returns and on the oracle, and compares the results
 * with the tolerances documented in `cases.ts`.
 *
 * @remarks
 * **Runs under vitest** (it calls `describe`/`it` from `"vitest"`): call it at the top level of
 * a `*.test.ts` file. Both devices get the same host inputs (a seeded PRNG per case name), so a
 * failure is reproducible. A final test checks that the suite released every tensor it created.
 */
export function describeBackend(name: string, factory: () => Promise<Device> | Device, options: DescribeBackendOptions): void {
  describe(`conformance: ${name}`, () => {
    let device: Device | undefined;
    let oracle: Device | undefined;
    let baseline = 0;

    beforeAll(async () => {
      device = await factory();
      oracle = await options.oracle();
      baseline = device.memory().liveTensors;
    });
    afterAll(async () => {
      if (device !== undefined && oracle !== undefined) await options.teardown?.(device, oracle);
    });

    const selected = (c: ConformanceCase): boolean =>
      (options.only === undefined || options.only.some((s) => c.name.includes(s))) &&
      !(options.skip ?? []).some((s) => c.name.includes(s));

    for (const c of conformanceCases()) {
      const test = selected(c) ? it : it.skip;
      test(c.name, async () => {
        if (device === undefined || oracle === undefined) throw new Error("conformance: the devices did not start");
        const got = await evaluate(c, device);
        const want = await evaluate(c, oracle);
        expect(got.length, "the backend must produce as many outputs as the oracle").toBe(want.length);
        got.forEach((g, i) => {
          const w = want[i];
          if (w === undefined) return;
          expect(g.shape, `output ${i}: the shape is decided by the API, so it must equal the oracle's`).toEqual(w.shape);
          expect(g.dtype, `output ${i}: the dtype is decided by the API, so it must equal the oracle's`).toBe(w.dtype);
          const mismatch = compareArrays(g.data, w.data, c.tolerance ?? EXACT);
          expect(mismatch, `output ${i} of "${c.name}" must match the oracle within its tolerance`).toBeUndefined();
        });
      });
    }

    it("releases every tensor the suite created", async () => {
      if (device === undefined) throw new Error("conformance: the device did not start");
      await device.syncAll();
      expect(device.memory().liveTensors, "every input, intermediate and output was disposed, so no wrapper may stay live").toBe(baseline);
    });
  });
}
