/**
 * `describeBackend`: the conformance kit every backend runs against the CPU oracle, as a vitest
 * suite. A thin wrapper over the vitest-free core ({@link runConformanceCase}).
 *
 * @module
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Device } from "../device/device.js";
import { conformanceCases, type ConformanceCase, type ConformanceCatalogueOptions } from "./cases.js";
import { checkReadInto } from "./read-into.js";
import { type CaseSelection, checkReleased, planCase, runConformanceCase } from "./run-case.js";

/** Options of {@link describeBackend}. */
export interface DescribeBackendOptions extends CaseSelection, ConformanceCatalogueOptions {
  /**
   * The oracle: a CPU device that runs every op *unfused* (`createCpuRuntime({ fusion: false })`).
   * Passed in so `@weft/tensor` never imports a backend.
   */
  readonly oracle: () => Promise<Device> | Device;
  /** Cleans the devices up after the suite (destroy a GPU device). */
  readonly teardown?: (device: Device, oracle: Device) => Promise<void> | void;
  /**
   * Runs each case inside a context of the caller's choosing (default: as is) — e.g. on its own
   * stream (`(run) => Stream.run(StreamId.allocate(), run)`), so a router spreads cases over servers.
   */
  readonly eachCase?: <T>(run: () => Promise<T>) => Promise<T>;
  /**
   * The cases to run instead of the whole catalogue (e.g. `thresholdCases()` on a device built
   * with small workgroups, where the same thresholds sit at small sizes).
   */
  readonly cases?: () => readonly ConformanceCase[];
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
 * a `*.test.ts` file. Runners without vitest (the browser page) use {@link runConformanceCase}
 * directly. Both devices get the same host inputs (a seeded PRNG per case name), so a failure is
 * reproducible. Cases named in `skip` are listed as `it.skip`; cases named in `unsupported` pass
 * only if the device throws `UnsupportedError`. A final test checks that the suite released every
 * tensor it created.
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

    for (const c of options.cases?.() ?? conformanceCases(options)) {
      const plan = planCase(c.name, options);
      const test = plan === "skip" ? it.skip : it;
      const title = plan === "expect-unsupported" ? `${c.name} (unsupported here: must throw UnsupportedError)` : c.name;
      test(title, async () => {
        if (device === undefined || oracle === undefined) throw new Error("conformance: the devices did not start");
        const run = (): Promise<Awaited<ReturnType<typeof runConformanceCase>>> => runConformanceCase(c, device as Device, oracle as Device, { expectUnsupported: plan === "expect-unsupported" });
        const result = await (options.eachCase === undefined ? run() : options.eachCase(run));
        expect(result.message, `"${c.name}" must match the oracle within its tolerance`).toBeUndefined();
        expect(result.ok).toBe(true);
      });
    }

    it("data({ into }) writes the values into caller-owned memory and refuses a wrong array", async () => {
      if (device === undefined) throw new Error("conformance: the device did not start");
      const d = device;
      const result = await (options.eachCase === undefined ? checkReadInto(d) : options.eachCase(() => checkReadInto(d)));
      expect(result.message).toBeUndefined();
    });

    it("releases every tensor the suite created", async () => {
      if (device === undefined) throw new Error("conformance: the device did not start");
      const result = await checkReleased(device, baseline);
      expect(result.message, "every input, intermediate and output was disposed, so no wrapper may stay live").toBeUndefined();
    });
  });
}
