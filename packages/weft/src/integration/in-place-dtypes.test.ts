/**
 * In-place reuse never mixes dtypes (docs/design.md#laziness-and-fusion: a consumed input's
 * buffer is reused in place only when that is safe). `tidy` disposes a tensor right after its last
 * consumer is registered, which makes that consumer the consuming use — the in-place path — for
 * an op whose output dtype differs from its input's.
 */
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type Device, setDevice, tensor, tidy } from "@weft/tensor";
import { BACKENDS, quiescentDevice, settle, snapshot } from "./harness.js";
import { valuesOf } from "./sources.js";

describe.each(BACKENDS)("in-place reuse across dtypes on $name", (backend) => {
  let device: Device;
  let baseline = 0;

  beforeAll(async () => {
    device = await backend.create();
  });
  beforeEach(async () => {
    device = await quiescentDevice(device, backend);
    setDevice(device);
    baseline = snapshot(device).bytesInUse;
  });

  // Regression (WebGPU): a fused block that consumed its input in place wrote an output of another
  // dtype through the input's typed binding — f32 → bool: "cannot assign 'u32' to 'f32'"; i32 → f32:
  // "cannot assign 'vec4<f32>' to 'vec4<i32>'" — so the kernel was rejected and the result tainted.
  // In place now requires the same WGSL storage element type.
  it("a compare that consumes its f32 input returns bool values", async () => {
    const flags = tidy(() => tensor([1, 2, 3, 4]).gt(2));
    try {
      expect(flags.dtype).toBe("bool");
      expect(await valuesOf(flags), "x > 2 on a consumed f32 input").toEqual([0, 0, 1, 1]);
    } finally {
      flags.dispose();
      await device.syncAll();
    }
  });

  it("a cast that consumes its i32 input returns f32 values", async () => {
    const halves = tidy(() => tensor(Int32Array.of(1, 2, 3, 4)).cast("f32").mul(0.5));
    try {
      expect(halves.dtype).toBe("f32");
      expect(await valuesOf(halves), "i32 → f32 then × 0.5 on a consumed input").toEqual([0.5, 1, 1.5, 2]);
    } finally {
      halves.dispose();
    }
    expect(await settle(device, baseline), "nothing leaks").toEqual([]);
  });

  it("a compare that borrows its f32 input returns bool values (the control case)", async () => {
    const x = tensor([1, 2, 3, 4]);
    const flags = x.gt(2);
    expect(await valuesOf(flags), "x > 2 on a live input").toEqual([0, 0, 1, 1]);
    x.dispose();
    flags.dispose();
    expect(await settle(device, baseline), "nothing leaks").toEqual([]);
  });
});
