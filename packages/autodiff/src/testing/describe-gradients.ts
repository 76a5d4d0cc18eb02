/**
 * `describeGradients`: the gradient kit as a vitest suite, run by every backend.
 *
 * @module
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Device } from "@weft/tensor";
import { gradientCases } from "./cases.js";
import { runGradientCase } from "./run-gradient-case.js";

/** Options of {@link describeGradients}. */
export interface DescribeGradientsOptions {
  /**
   * The device the central differences are computed on: a CPU device running every op unfused.
   * Passed in so `@weft/autodiff` never imports a backend.
   */
  readonly oracle: () => Promise<Device> | Device;
  /** Cleans the devices up after the suite. */
  readonly teardown?: (device: Device, oracle: Device) => Promise<void> | void;
}

/**
 * Registers a vitest suite that checks the gradient of every op of the user API (`cases.ts`) on
 * the device `factory` returns against central finite differences on the oracle, then checks that
 * the suite left no tensor alive on either device. Call it at the top level of a `*.test.ts` file.
 * A case needing a dtype the device does not store is reported as skipped with the reason.
 */
export function describeGradients(name: string, factory: () => Promise<Device> | Device, options: DescribeGradientsOptions): void {
  describe(`gradients: ${name}`, () => {
    let device: Device | undefined;
    let oracle: Device | undefined;
    let baseline = 0;
    let oracleBaseline = 0;
    beforeAll(async () => {
      device = await factory();
      oracle = await options.oracle();
      baseline = device.memory().liveTensors;
      oracleBaseline = oracle.memory().liveTensors;
    });
    afterAll(async () => {
      if (device !== undefined && oracle !== undefined) await options.teardown?.(device, oracle);
    });
    for (const c of gradientCases()) {
      it(c.name, async (ctx) => {
        if (device === undefined || oracle === undefined) throw new Error("gradients: the devices did not start");
        const result = await runGradientCase(c, device, oracle);
        if (result.ok && result.skipped !== undefined) ctx.skip(result.skipped);
        expect(result.message, `the gradient of "${c.name}" must match central differences within its tolerance`).toBeUndefined();
      });
    }
    it("releases every tensor the suite created", () => {
      if (device === undefined || oracle === undefined) throw new Error("gradients: the devices did not start");
      expect(device.memory().liveTensors).toBe(baseline);
      expect(oracle.memory().liveTensors).toBe(oracleBaseline);
    });
  });
}
