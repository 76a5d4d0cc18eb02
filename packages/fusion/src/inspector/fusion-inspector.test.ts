import { describe, expect, it } from "vitest";
import { createTestDevice, fromValues, scalar, unary } from "../testing/index.js";

describe("FusionInspector", () => {
  it("the block log keeps exactly the newest maxLoggedBlocks blocks while counting them all", async () => {
    const { device } = createTestDevice("none", { maxLoggedBlocks: 4 });
    const x = fromValues(device, [1]);
    let t = x;
    for (let i = 0; i < 10; i++) {
      const next = i % 2 === 0 ? unary(device, "neg", t) : scalar(device, "mul", t, 2);
      await next.read();
      t = next;
    }
    expect(device.inspector.executedCount, "init + 10 unary blocks were executed").toBe(11);
    expect(device.inspector.executedBlocks, "only the newest 4 are kept").toHaveLength(4);
    expect(device.inspector.composition(), "oldest dropped first: the last four ops (i = 6..9), in order").toEqual([
      "unfused unary[unary]",
      "unfused binary-scalar[binary-scalar]",
      "unfused unary[unary]",
      "unfused binary-scalar[binary-scalar]",
    ]);
  });
});
