/**
 * The exact-answer cases of `@weft/tensor/testing` (`cases-api.ts`) on the CPU backend (fused and
 * unfused) and on WebGPU (fused and unfused): integer scalars under NEP 50 rules, typed-array input,
 * fused blocks mixing empty and non-empty outputs, sin/cos/tan of huge arguments (within `TRIG`),
 * and the reach of a gather's index error. Each is checked against its known answer, not the
 * oracle (issue 9: both backends can agree on a wrong answer).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exactCases, runExactCase } from "@weft/tensor/testing";
import { type Device, setDevice } from "@weft/tensor";
import { createCpuDevice, createWebGpuDevice } from "../device/backends.js";
import { BACKENDS, settle } from "./harness.js";

const DEVICES = [
  ...BACKENDS,
  { name: "cpu (unfused)", create: () => Promise.resolve(createCpuDevice({ fusion: false })) },
  { name: "webgpu (unfused)", create: () => createWebGpuDevice({ fusion: false }) },
];

describe.each(DEVICES)("exact answers on $name", (backend) => {
  let device: Device;
  let previous: Device | undefined;
  beforeAll(async () => {
    device = await backend.create();
    previous = setDevice(device);
  }, 120_000);
  afterAll(async () => {
    expect(await settle(device, 0).then((p) => p.filter((l) => !l.startsWith("bytesInUse"))), "every case released its tensors").toEqual([]);
    setDevice(previous);
  }, 120_000);

  for (const c of exactCases()) {
    it(c.name, async () => {
      expect(await runExactCase(c, device)).toBeUndefined();
    });
  }
});
